// Stage 1 of the F^H D stages (Stone et al. 2008; docs/architecture.md), "scatter + atomic":
// one thread per k-space sample, each adding its contribution to every voxel with atomicAdd.
// The starting point: no loop fission (the coefficient is read inside the kernel), accurate
// sincosf, O(N*M) global atomics.
//
// One deviation from a literal transcription: thread m visits the voxels starting at voxel
// m mod N (and wraps), so the 32 lanes of a warp add into 32 consecutive voxels instead of all
// hammering the same address; the atomics are float2 vector atomics (sm_90). Every thread still
// visits every voxel, so the work and the atomic count are the paper's.
#include "fhd_plan.cuh"

namespace mri::cuda::detail {
namespace {

struct ScatterLaunch {
  int threads = 256;
};
inline constexpr ScatterLaunch kScatter{};

__global__ void __launch_bounds__(kScatter.threads)
    scatter_atomic_kernel(const KPoint *k, const float2 *c, int m, KScale radians, OutGrid g, float2 *out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float3 step = scaled_k(k[i], radians);
  const float2 mu = c[i];
  const float kx = step.x, ky = step.y, kz = step.z;
  int n = i % g.voxels;
  int ix = n % g.nx, iy = (n / g.nx) % g.ny, iz = n / (g.nx * g.ny);
  for (int j = 0; j < g.voxels; ++j) {
    const float x = static_cast<float>(ix + g.x0), y = static_cast<float>(iy + g.y0),
                z = static_cast<float>(iz + g.z0);
    const float arg = kx * x + ky * y + kz * z;
    float s, cs;
    sincosf(arg, &s, &cs);
    atomicAdd(&out[n], make_float2(mu.x * cs - mu.y * s, mu.y * cs + mu.x * s));
    if (++n == g.voxels) n = 0;
    if (++ix == g.nx) {
      ix = 0;
      if (++iy == g.ny) {
        iy = 0;
        if (++iz == g.nz) iz = 0;
      }
    }
  }
}

} // namespace

template <> void run_adjoint<KernelPolicy::ScatterAtomic>(const PlanState &plan, const float2 *c, float2 *out) {
  MRI_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(plan.out.voxels) * sizeof(float2), plan.stream));
  scatter_atomic_kernel<<<blocks_for(plan.m, kScatter.threads), kScatter.threads, 0, plan.stream>>>(
      plan.k, c, plan.m, k_scale(plan, PhaseUnit::Radians), plan.out, out);
  MRI_CUDA_CHECK_LAUNCH("scatter_atomic_kernel");
}

} // namespace mri::cuda::detail
