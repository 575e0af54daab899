// Stage 3 of the F^H D stages (Stone et al. 2008; docs/architecture.md), "register": the gather
// kernel with the voxel's coordinates and both accumulators held in registers (one load and one
// store of the voxel per call instead of one per sample), and 2 pi k / period precomputed by the
// fission pass (pack_samples, radians), so the phase is three FMAs. Samples are still read from
// global memory (AoS records, every lane of a warp reads the same one: a broadcast through L1).
//
// Beyond the paper: the accumulators are summed in blocks of kRegister.block_sum samples (a
// float running sum over M = 2^20 terms alone costs ~2e-5 relative error; blocks keep the sum
// near 1e-6 at the price of one add per block).
#include "fhd_plan.cuh"

namespace mri::cuda::detail {
namespace {

struct RegisterLaunch {
  int threads = 256;
  int block_sum = 1024;
};
inline constexpr RegisterLaunch kRegister{};

__global__ void __launch_bounds__(kRegister.threads)
    register_kernel(const PackedSample *__restrict__ samples, int m, OutGrid g, float2 *__restrict__ out) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= g.voxels) return;
  float x, y, z;
  voxel_coordinates(g, n, x, y, z);
  float re = 0.f, im = 0.f;
  for (int b = 0; b < m; b += kRegister.block_sum) {
    const int end = min(m, b + kRegister.block_sum);
    float pr = 0.f, pi = 0.f;
    for (int i = b; i < end; ++i) {
      const PackedSample s = samples[i];
      const float arg = s.kx * x + s.ky * y + s.kz * z;
      float sn, cs;
      sincosf(arg, &sn, &cs);
      pr += s.re * cs - s.im * sn;
      pi += s.im * cs + s.re * sn;
    }
    re += pr;
    im += pi;
  }
  out[n] = make_float2(re, im);
}

} // namespace

template <> void run_adjoint<KernelPolicy::Register>(const PlanState &plan, const float2 *c, float2 *out) {
  pack_samples(plan, c, PhaseUnit::Radians);
  register_kernel<<<blocks_for(plan.out.voxels, kRegister.threads), kRegister.threads, 0, plan.stream>>>(
      plan.ws->packed.get(), plan.m, plan.out, out);
  MRI_CUDA_CHECK_LAUNCH("register_kernel");
}

} // namespace mri::cuda::detail
