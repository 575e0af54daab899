// The one place a runtime mri::KernelPolicy becomes a compile-time kernel policy.
#include <string>

#include "fhd_plan.cuh"
#include "mri/error.hpp"

namespace mri::cuda::detail {

bool policy_implemented(KernelPolicy policy) {
  switch (policy) {
  case KernelPolicy::Auto:
  case KernelPolicy::ScatterAtomic:
  case KernelPolicy::Gather:
  case KernelPolicy::Register:
  case KernelPolicy::ConstantChunked:
  case KernelPolicy::SfuTrig:
  case KernelPolicy::Tuned:
    return true;
  case KernelPolicy::SeparableGemm:
    return false;
  }
  return false;
}

KernelPolicy resolve_policy(KernelPolicy policy) {
  if (!policy_implemented(policy))
    throw Unsupported(std::string("cuda backend: kernel policy '") + to_string(policy) +
                      "' is not implemented yet (issue 3); choose another policy");
  // Auto: the fastest policy that meets the 1e-5 accuracy bar (benchmarks/bench_fhd_gpu.cpp).
  return policy == KernelPolicy::Auto ? KernelPolicy::Tuned : policy;
}

void FhdPlan::adjoint_device(KernelPolicy policy, const cfloat *c_dev, cfloat *result_dev) {
  const PlanState &s = impl_->state;
  const auto *c = reinterpret_cast<const float2 *>(c_dev);
  auto *out = reinterpret_cast<float2 *>(result_dev);
  switch (resolve_policy(policy)) {
  case KernelPolicy::ScatterAtomic: return run_adjoint<KernelPolicy::ScatterAtomic>(s, c, out);
  case KernelPolicy::Gather: return run_adjoint<KernelPolicy::Gather>(s, c, out);
  case KernelPolicy::Register: return run_adjoint<KernelPolicy::Register>(s, c, out);
  case KernelPolicy::ConstantChunked: return run_adjoint<KernelPolicy::ConstantChunked>(s, c, out);
  case KernelPolicy::SfuTrig: return run_adjoint<KernelPolicy::SfuTrig>(s, c, out);
  case KernelPolicy::Tuned: return run_adjoint<KernelPolicy::Tuned>(s, c, out);
  case KernelPolicy::Auto:
  case KernelPolicy::SeparableGemm:
    break; // resolve_policy() returned or threw already
  }
  throw Unsupported(std::string("cuda backend: no kernel for policy '") + to_string(policy) + "'");
}

} // namespace mri::cuda::detail
