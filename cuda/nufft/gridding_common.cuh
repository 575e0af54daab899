#pragma once
// What every CUDA gridding kernel shares (cuda/nufft/gridding_cuda.cu includes the kernels, one
// method a file: points_setup, gather_rga, scatter_global, scatter_shared, interpolate, crop_pad;
// gridding_dispatch.cuh tabulates their (dims, width) instantiations): the grid geometry, the
// kernel polynomial and the window walk of the thread-per-sample kernels. The algorithm:
// gridding_cuda.hpp.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "cuda_check.cuh"
#include "nufft/gridding_cuda.hpp"

namespace mri::cuda::detail {
namespace {

constexpr int kMaxCoef = 25 * kMaxDeviceWidth; // degree <= 24

struct Dev {
  int gx, gy, gz;
  int nx, ny, nz;
  int degree;
};

// Kernel value of window index i at s: sum_d c[d][i] s^d (Horner).
template <int W> __device__ __forceinline__ float poly(const float *c, int degree, int i, float s) {
  float v = c[degree * W + i];
  for (int d = degree - 1; d >= 0; --d) v = fmaf(v, s, c[d * W + i]);
  return v;
}

template <int W> __device__ __forceinline__ void load_coef(const float *coef, int degree, float *sh) {
  for (int i = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); i < (degree + 1) * W;
       i += blockDim.x * blockDim.y * blockDim.z)
    sh[i] = coef[i];
  __syncthreads();
}

__device__ __forceinline__ int wrap(int v, int n) { return v < 0 ? v + n : (v >= n ? v - n : v); }

// The window of sorted sample i (record r, cell key) for the thread-per-sample kernels: calls
// row(first, jx, wx, wyz) for each of its W (2D) or W^2 (3D) rows on the periodic grid, where
// grid point x of the row is first + wrap(jx + dx, gx) with weight wx[dx] * wyz (wz = 1 in 2D).
template <int D, int W, class Row>
__device__ __forceinline__ void for_each_window_row(const float *c, const Dev &d, float4 r, unsigned key, Row &&row) {
  const int jx = __float_as_int(r.w), jy = static_cast<int>((key / d.gx) % d.gy), jz = static_cast<int>(key / (static_cast<unsigned>(d.gx) * d.gy));
  float wx[W], wy[W], wz[W];
#pragma unroll
  for (int k = 0; k < W; ++k) {
    wx[k] = poly<W>(c, d.degree, k, r.x);
    wy[k] = poly<W>(c, d.degree, k, r.y);
    wz[k] = D == 3 ? poly<W>(c, d.degree, k, r.z) : 1.f;
  }
#pragma unroll
  for (int dz = 0; dz < (D == 3 ? W : 1); ++dz) {
    const int zz = D == 3 ? wrap(jz + dz, d.gz) : 0;
#pragma unroll
    for (int dy = 0; dy < W; ++dy) {
      const int yy = wrap(jy + dy, d.gy);
      row((static_cast<unsigned>(zz) * d.gy + yy) * d.gx, jx, wx, wy[dy] * wz[dz]);
    }
  }
}

} // namespace
} // namespace mri::cuda::detail
