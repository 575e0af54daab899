// Stage 5 of the F^H D stages (Stone et al. 2008; docs/architecture.md), "SFU trig": the
// constant-chunked kernel with the hardware sine and cosine (__sincosf: MUFU.SIN + MUFU.COS on
// the special function units) instead of the accurate library sincosf.
//
// MUFU is accurate (abs. error ~2^-21.4) only for arguments in [-pi, pi]; our phases reach
// hundreds of radians on a 128^3 grid, where a plain __sincosf(2 pi k.x) loses digits. So the
// packing pass stores k/period in turns, the kernel forms the phase in turns
// t = kx*x + ky*y + kz*z, subtracts the nearest integer with the add/sub-magic trick of
// reduce_turns() (no rintf: FRND competes with MUFU for the same unit) and only then scales by
// 2 pi, so the SFU sees [-pi, pi]. Accuracy then matches the accurate-trig stages (~1e-6).
#include "constant_chunks.cuh"

namespace mri::cuda::detail {
namespace {

struct SfuTrig { // the phase in turns (PhaseUnit::Turns), reduced before the SFU sees it
  __device__ void operator()(float turns, float &sn, float &cs) const {
    __sincosf(kTwoPi * reduce_turns(turns), &sn, &cs);
  }
};

__global__ void __launch_bounds__(kConstantChunk.threads)
    sfu_trig_kernel(int slot, int count, bool first, OutGrid g, float2 *__restrict__ out) {
  constant_chunk_body(SfuTrig{}, slot, count, first, g, out);
}

} // namespace

template <> void run_adjoint<KernelPolicy::SfuTrig>(const PlanState &plan, const float2 *c, float2 *out) {
  pack_samples(plan, c, PhaseUnit::Turns);
  const int blocks = blocks_for(plan.out.voxels, kConstantChunk.threads);
  run_constant_chunks(plan, [&](int slot, int count, bool first) {
    sfu_trig_kernel<<<blocks, kConstantChunk.threads, 0, plan.stream>>>(slot, count, first, plan.out, out);
    MRI_CUDA_CHECK_LAUNCH("sfu_trig_kernel");
  });
}

} // namespace mri::cuda::detail
