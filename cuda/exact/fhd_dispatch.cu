// The one place a runtime mri::KernelPolicy becomes a compile-time kernel policy.
#include <string>

#include "fhd_plan.cuh"
#include "mri/error.hpp"

namespace mri::cuda::detail {

template <> void run_adjoint<KernelPolicy::ScatterAtomic>(const PlanState &, const float2 *, float2 *);
template <> void run_adjoint<KernelPolicy::Gather>(const PlanState &, const float2 *, float2 *);
template <> void run_adjoint<KernelPolicy::Register>(const PlanState &, const float2 *, float2 *);
template <> void run_adjoint<KernelPolicy::ConstantChunked>(const PlanState &, const float2 *, float2 *);
template <> void run_adjoint<KernelPolicy::SfuTrig>(const PlanState &, const float2 *, float2 *);
template <> void run_adjoint<KernelPolicy::Tuned>(const PlanState &, const float2 *, float2 *);
template <> void run_adjoint<KernelPolicy::SeparableGemm>(const PlanState &, const float2 *, float2 *);

namespace {

// The policy table: a new kernel policy is its enum value (mri/options.hpp), its own file
// fhd_<policy>.cu defining run_adjoint<P>, and one row here (with its declaration above).
// `run_coils` evaluates each phase once for a block of coils (null: one coil at a time);
// `run_into` sums a streamed chunk straight into the plan's double accumulator (null: the
// chunk's float32 image is added to it).
struct PolicyEntry {
  KernelPolicy policy;
  SampleScratch scratch; // the per-sample device scratch it keeps between calls (fhd_plan.cu)
  void (*run)(const PlanState &, const float2 *, float2 *);
  void (*run_coils)(const PlanState &, const float2 *, int, float2 *) = nullptr;
  void (*run_into)(const PlanState &, const float2 *, double2 *, bool accumulate) = nullptr;
};
constexpr void (*kSeparableInto)(const PlanState &, const float2 *, double2 *, bool) = separable_adjoint_into;
constexpr PolicyEntry kPolicies[] = {
    {KernelPolicy::ScatterAtomic, SampleScratch::None, run_adjoint<KernelPolicy::ScatterAtomic>},
    {KernelPolicy::Gather, SampleScratch::Soa, run_adjoint<KernelPolicy::Gather>},
    {KernelPolicy::Register, SampleScratch::Packed, run_adjoint<KernelPolicy::Register>},
    {KernelPolicy::ConstantChunked, SampleScratch::Packed, run_adjoint<KernelPolicy::ConstantChunked>},
    {KernelPolicy::SfuTrig, SampleScratch::Packed, run_adjoint<KernelPolicy::SfuTrig>},
    {KernelPolicy::Tuned, SampleScratch::Tuned, run_adjoint<KernelPolicy::Tuned>},
    {KernelPolicy::SeparableGemm, SampleScratch::Gemm, run_adjoint<KernelPolicy::SeparableGemm>, run_adjoint_coils_gemm,
     kSeparableInto}, // sums in double
};

// Auto: the fastest policy that meets the 1e-5 accuracy bar (benchmarks/bench_fhd_gpu.cpp).
constexpr KernelPolicy kAutoPolicy = KernelPolicy::Tuned;

const PolicyEntry &entry(KernelPolicy policy) {
  const KernelPolicy p = policy == KernelPolicy::Auto ? kAutoPolicy : policy;
  for (const PolicyEntry &e : kPolicies)
    if (e.policy == p) return e;
  mri::detail::invalid_argument("policy", static_cast<int>(policy), "is not a KernelPolicy");
}

} // namespace

KernelPolicy resolve_policy(KernelPolicy policy) { return entry(policy).policy; }

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

SampleScratch sample_scratch(KernelPolicy policy) { return entry(policy).scratch; }

void FhdPlan::adjoint_device(KernelPolicy policy, const cfloat *c_dev, cfloat *result_dev) {
  require_resident(*impl_, "adjoint_device");
  run_adjoint_policy(impl_->state, policy, reinterpret_cast<const float2 *>(c_dev),
                     reinterpret_cast<float2 *>(result_dev));
}

void run_adjoint_policy(const PlanState &s, KernelPolicy policy, const float2 *c, float2 *out) {
  entry(policy).run(s, c, out);
}

bool run_adjoint_into(const PlanState &s, KernelPolicy policy, const float2 *c, double2 *acc, bool accumulate) {
  const PolicyEntry &e = entry(policy);
  if (!e.run_into) return false;
  e.run_into(s, c, acc, accumulate);
  return true;
}

int FhdPlan::coils_per_pass(KernelPolicy policy, std::int64_t voxels) {
  return entry(policy).run_coils ? coils_per_gemm(voxels) : 1;
}

void FhdPlan::adjoint_coils_device(KernelPolicy policy, const cfloat *c_dev, int coils, cfloat *result_dev) {
  require_resident(*impl_, "adjoint_coils_device");
  if (coils < 1) mri::detail::invalid_argument("coils", coils, "must be at least 1");
  const PolicyEntry &e = entry(policy);
  const PlanState &s = impl_->state;
  const auto *c = reinterpret_cast<const float2 *>(c_dev);
  auto *out = reinterpret_cast<float2 *>(result_dev);
  if (e.run_coils) return e.run_coils(s, c, coils, out);
  for (int v = 0; v < coils; ++v)
    e.run(s, c + static_cast<std::size_t>(v) * s.m, out + static_cast<std::size_t>(v) * s.out.voxels);
}

} // namespace mri::cuda::detail
