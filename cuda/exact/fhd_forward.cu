// The forward reference kernel: (F x)_m = sum_n x_n exp(-i 2 pi sum_a k_ma x_a / period_a),
// one thread per sample looping over every voxel (all lanes read the same voxel: a broadcast).
// Accurate: the phase is formed in turns, reduced to [-1/2, 1/2] and evaluated with
// sincospif; the sum is blocked by row and plane. Not a fast path: the fast forward is the
// separable GEMM form (fhd_separable_gemm.cu, ForwardPath::GemmFloat / GemmDouble).
#include "fhd_plan.cuh"

namespace mri::cuda::detail {
namespace {

struct ForwardLaunch {
  int threads = 128;
};
inline constexpr ForwardLaunch kForward{};

__global__ void __launch_bounds__(kForward.threads)
    forward_kernel(const KPoint *__restrict__ k, int m, KScale turns, OutGrid g, const float2 *__restrict__ image,
                   float2 *__restrict__ result) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float3 step = scaled_k(k[i], turns);
  const float tx = step.x, ty = step.y, tz = step.z;
  float re = 0.f, im = 0.f;
  int n = 0;
  for (int iz = 0; iz < g.nz; ++iz) {
    const float z = static_cast<float>(iz + g.z0);
    float plane_re = 0.f, plane_im = 0.f;
    for (int iy = 0; iy < g.ny; ++iy) {
      const float base = ty * static_cast<float>(iy + g.y0) + tz * z;
      float row_re = 0.f, row_im = 0.f;
      for (int ix = 0; ix < g.nx; ++ix, ++n) {
        const float t = tx * static_cast<float>(ix + g.x0) + base;
        const float r = t - rintf(t);
        float sn, cs;
        sincospif(2.f * r, &sn, &cs);
        const float2 v = image[n];
        row_re += v.x * cs + v.y * sn; // v * exp(-i 2 pi r)
        row_im += v.y * cs - v.x * sn;
      }
      plane_re += row_re;
      plane_im += row_im;
    }
    re += plane_re;
    im += plane_im;
  }
  result[i] = make_float2(re, im);
}

} // namespace

void run_forward(const PlanState &plan, const float2 *image, float2 *result) {
  forward_kernel<<<blocks_for(plan.m, kForward.threads), kForward.threads, 0, plan.stream>>>(
      plan.k, plan.m, k_scale(plan, PhaseUnit::Turns), plan.out, image, result);
  MRI_CUDA_CHECK_LAUNCH("forward_kernel");
}

} // namespace mri::cuda::detail
