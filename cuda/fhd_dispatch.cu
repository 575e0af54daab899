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
  case KernelPolicy::SeparableGemm:
    return true;
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

KernelPolicy resolve_policy(KernelPolicy policy, Precision precision) {
  if (precision == Precision::Float32) return resolve_policy(policy);
  if (policy == KernelPolicy::Auto || policy == KernelPolicy::SeparableGemm) return KernelPolicy::SeparableGemm;
  throw Unsupported(std::string("cuda backend: precision = float64 runs only the separable-gemm policy (ZGEMM in "
                                "double); policy '") +
                    to_string(policy) + "' computes in float32: ask for separable-gemm or auto");
}

const char *to_string(ForwardPath path) {
  switch (path) {
  case ForwardPath::Reference: return "forward-reference";
  case ForwardPath::GemmFloat: return "forward-gemm-float";
  case ForwardPath::GemmDouble: return "forward-gemm-double";
  }
  return "?";
}

// Float32: the fastest forward that meets 1e-5 (benchmarks/bench_fhd_gpu.cpp, forward rows).
ForwardPath forward_path(Precision precision) {
  return precision == Precision::Float64 ? ForwardPath::GemmDouble : ForwardPath::GemmFloat;
}

void run_forward_path(const PlanState &s, ForwardPath path, const float2 *image, float2 *result) {
  switch (path) {
  case ForwardPath::Reference: return run_forward(s, image, result);
  case ForwardPath::GemmFloat: return run_forward_gemm(s, image, result, false);
  case ForwardPath::GemmDouble: return run_forward_gemm(s, image, result, true);
  }
  mri::detail::invalid_argument("forward path", static_cast<int>(path), "unknown");
}

void FhdPlan::forward_device(ForwardPath path, const cfloat *image_dev, cfloat *result_dev) {
  require_resident(*impl_, "forward_device");
  run_forward_path(impl_->state, path, reinterpret_cast<const float2 *>(image_dev),
                   reinterpret_cast<float2 *>(result_dev));
}

SampleScratch sample_scratch(KernelPolicy policy) {
  switch (policy) {
  case KernelPolicy::Gather: return SampleScratch::Soa;
  case KernelPolicy::Register:
  case KernelPolicy::ConstantChunked:
  case KernelPolicy::SfuTrig: return SampleScratch::Packed;
  case KernelPolicy::Tuned: return SampleScratch::Tuned;
  case KernelPolicy::SeparableGemm: return SampleScratch::Gemm;
  case KernelPolicy::ScatterAtomic:
  case KernelPolicy::Auto: break;
  }
  return SampleScratch::None;
}

void FhdPlan::adjoint_device(KernelPolicy policy, const cfloat *c_dev, cfloat *result_dev) {
  require_resident(*impl_, "adjoint_device");
  run_adjoint_policy(impl_->state, policy, reinterpret_cast<const float2 *>(c_dev),
                     reinterpret_cast<float2 *>(result_dev));
}

void run_adjoint_policy(const PlanState &s, KernelPolicy policy, const float2 *c, float2 *out) {
  switch (resolve_policy(policy)) {
  case KernelPolicy::ScatterAtomic: return run_adjoint<KernelPolicy::ScatterAtomic>(s, c, out);
  case KernelPolicy::Gather: return run_adjoint<KernelPolicy::Gather>(s, c, out);
  case KernelPolicy::Register: return run_adjoint<KernelPolicy::Register>(s, c, out);
  case KernelPolicy::ConstantChunked: return run_adjoint<KernelPolicy::ConstantChunked>(s, c, out);
  case KernelPolicy::SfuTrig: return run_adjoint<KernelPolicy::SfuTrig>(s, c, out);
  case KernelPolicy::Tuned: return run_adjoint<KernelPolicy::Tuned>(s, c, out);
  case KernelPolicy::SeparableGemm: return run_adjoint<KernelPolicy::SeparableGemm>(s, c, out);
  case KernelPolicy::Auto:
    break; // resolve_policy() never returns Auto
  }
  throw Unsupported(std::string("cuda backend: no kernel for policy '") + to_string(policy) + "'");
}

} // namespace mri::cuda::detail
