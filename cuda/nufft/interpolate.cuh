#pragma once
// Interpolation (the forward NUFFT's gather from the grid): thread per sample.
#include "nufft/gridding_common.cuh"

namespace mri::cuda::detail {
namespace {

// Interpolation: thread per sample, writes out[perm[i]] (sample order).
template <int D, int W>
__global__ void __launch_bounds__(256) interp_kernel(const float4 *__restrict__ rec, const unsigned *__restrict__ keys,
                                                     const unsigned *__restrict__ perm, int m, Dev d,
                                                     const float *__restrict__ coef, const float2 *__restrict__ grid,
                                                     float2 *__restrict__ out) {
  __shared__ float c[kMaxCoef];
  load_coef<W>(coef, d.degree, c);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  float ar = 0.f, ai = 0.f;
  for_each_window_row<D, W>(c, d, rec[i], keys[i], [&](unsigned first, int jx, const float(&wx)[W], float wyz) {
    const float2 *row = grid + first;
    float rr = 0.f, ri = 0.f;
#pragma unroll
    for (int dx = 0; dx < W; ++dx) {
      const float2 g = row[wrap(jx + dx, d.gx)];
      rr = fmaf(wx[dx], g.x, rr);
      ri = fmaf(wx[dx], g.y, ri);
    }
    ar = fmaf(wyz, rr, ar);
    ai = fmaf(wyz, ri, ai);
  });
  out[perm[i]] = make_float2(ar, ai);
}

} // namespace
} // namespace mri::cuda::detail
