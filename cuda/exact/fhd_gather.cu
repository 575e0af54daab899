// Stage 2 of the F^H D stages (Stone et al. 2008; docs/architecture.md), "gather": loop fission
// and interchange.
//  - fission: mu_m (here the coefficient c_m, the paper's phi_m^* D_m) and the trajectory are
//    written to global arrays by their own pass (mu_pass_kernel), so the main loop no longer
//    computes per-sample terms;
//  - interchange: one thread per voxel loops over all samples, so no two threads write the
//    same output and the atomics are gone.
// Everything stays in global memory as in the paper: kx/ky/kz/rMu/iMu and the voxel coordinates
// x/y/z are arrays, the accumulators rFhD/iFhD are updated in global memory every iteration,
// and 2 pi is multiplied inside the loop; sinf/cosf are the accurate library functions.
// (The next stage, fhd_register.cu, moves coordinates and accumulators to registers.)
#include "fhd_plan.cuh"

namespace mri::cuda::detail {
namespace {

struct GatherLaunch {
  int threads = 256; // the paper's FHD_THREADS_PER_BLOCK
};
inline constexpr GatherLaunch kGather{};

// The fission pass: per-sample values into structure-of-arrays global memory.
__global__ void mu_pass_kernel(const KPoint *__restrict__ k, const float2 *__restrict__ c, int m, KScale scale,
                               float *kx, float *ky, float *kz, float *rmu, float *imu) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float3 step = scaled_k(k[i], scale); // turns per voxel: k / period
  kx[i] = step.x;
  ky[i] = step.y;
  kz[i] = step.z;
  rmu[i] = c[i].x;
  imu[i] = c[i].y;
}

__global__ void voxel_coords_kernel(OutGrid g, float *x, float *y, float *z) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= g.voxels) return;
  voxel_coordinates(g, n, x[n], y[n], z[n]);
}

__global__ void __launch_bounds__(kGather.threads)
    gather_kernel(const float *kx, const float *ky, const float *kz, const float *x, const float *y, const float *z,
                  const float *rmu, const float *imu, int m, int voxels, float *rfhd, float *ifhd) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= voxels) return;
  for (int i = 0; i < m; ++i) {
    const float arg = kTwoPi * (kx[i] * x[n] + ky[i] * y[n] + kz[i] * z[n]);
    const float cs = cosf(arg), sn = sinf(arg);
    rfhd[2 * n] += rmu[i] * cs - imu[i] * sn;
    ifhd[2 * n] += imu[i] * cs + rmu[i] * sn;
  }
}

} // namespace

template <> void run_adjoint<KernelPolicy::Gather>(const PlanState &plan, const float2 *c, float2 *out) {
  Workspace &ws = *plan.ws;
  const std::size_t m = static_cast<std::size_t>(plan.m), n = static_cast<std::size_t>(plan.out.voxels);
  float *soa = ws.soa.grow(5 * m);
  float *kx = soa, *ky = soa + m, *kz = soa + 2 * m, *rmu = soa + 3 * m, *imu = soa + 4 * m;
  if (!ws.voxel_coords_ready) {
    float *xyz = ws.voxel_coords.grow(3 * n);
    voxel_coords_kernel<<<blocks_for(plan.out.voxels, kGather.threads), kGather.threads, 0, plan.stream>>>(
        plan.out, xyz, xyz + n, xyz + 2 * n);
    MRI_CUDA_CHECK_LAUNCH("voxel_coords_kernel");
    ws.voxel_coords_ready = true;
  }
  const float *xyz = ws.voxel_coords.get();
  mu_pass_kernel<<<blocks_for(plan.m, kGather.threads), kGather.threads, 0, plan.stream>>>(
      plan.k, c, plan.m, k_scale(plan, PhaseUnit::Turns), kx, ky, kz, rmu, imu);
  MRI_CUDA_CHECK_LAUNCH("mu_pass_kernel");
  MRI_CUDA_CHECK(cudaMemsetAsync(out, 0, n * sizeof(float2), plan.stream));
  float *re = reinterpret_cast<float *>(out);
  gather_kernel<<<blocks_for(plan.out.voxels, kGather.threads), kGather.threads, 0, plan.stream>>>(
      kx, ky, kz, xyz, xyz + n, xyz + 2 * n, rmu, imu, plan.m, plan.out.voxels, re, re + 1);
  MRI_CUDA_CHECK_LAUNCH("gather_kernel");
}

} // namespace mri::cuda::detail
