#pragma once
// The adjoint as a scatter with global float atomics (GA): thread per sample.
#include "nufft/gridding_common.cuh"

namespace mri::cuda::detail {
namespace {

// GA: thread per sample (cell order, for locality), atomicAdd into its window.
template <int D, int W>
__global__ void __launch_bounds__(256) scatter_kernel(const float4 *__restrict__ rec, const unsigned *__restrict__ keys,
                                                      const float2 *__restrict__ val, int m, Dev d,
                                                      const float *__restrict__ coef, float2 *grid) {
  __shared__ float c[kMaxCoef];
  load_coef<W>(coef, d.degree, c);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  for_each_window_row<D, W>(c, d, rec[i], keys[i], [&](unsigned first, int jx, const float(&wx)[W], float wyz) {
    // Read here, not ahead of the window's weights, where it cost registers in 3D; one load remains.
    const float2 v = val[i];
    float2 *row = grid + first;
#pragma unroll
    for (int dx = 0; dx < W; ++dx) {
      const float w = wyz * wx[dx];
      atomicAdd(&row[wrap(jx + dx, d.gx)], make_float2(w * v.x, w * v.y));
    }
  });
}

} // namespace
} // namespace mri::cuda::detail
