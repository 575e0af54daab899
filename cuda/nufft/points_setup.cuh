#pragma once
// Per-sample setup and the sort support of every gridding method: cell keys, records, the
// sorted records with their kernel weights, counts and permutations.
#include "nufft/gridding_common.cuh"

namespace mri::cuda::detail {
namespace {

// Per sample: cell key (z, y, x of j0), the record (sx, sy, sz, j0x) and its index; `outside`
// set where a coordinate lies outside [-n/2, n/2) (Trajectory::check_within's test).
// k scaled per axis (exact for the powers of two the callers use: 1, or 2 for Q's doubled grid).
// Point: KPoint, or float2 (kx, ky) for 2D points uploaded packed.
__device__ __forceinline__ float3 coordinates(const KPoint &p) { return make_float3(p.kx, p.ky, p.kz); }
__device__ __forceinline__ float3 coordinates(const float2 &p) { return make_float3(p.x, p.y, 0.0f); }
template <class Point>
__global__ void setup_points_kernel(const Point *k, float3 scale, int m, int width, int dims, Dev d, unsigned *keys,
                                    unsigned *idx, float4 *rec, unsigned *outside) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float3 p = coordinates(k[i]);
  const double kc[3] = {p.x * scale.x, p.y * scale.y, p.z * scale.z};
  const int g[3] = {d.gx, d.gy, d.gz}, n[3] = {d.nx, d.ny, d.nz};
  int j[3] = {0, 0, 0};
  float s[3] = {0, 0, 0};
  bool out = false;
  for (int a = 0; a < dims; ++a) {
    const double half = n[a] / 2.0;
    out |= !(kc[a] >= -half && kc[a] < half);
    const double t = kc[a] * g[a] / n[a];
    const double left = t - 0.5 * width;
    const double first = ceil(left);
    double z = first - left;
    if (z >= 1.0) z = 0.0;
    long long jj = static_cast<long long>(first) % g[a];
    if (jj < 0) jj += g[a];
    j[a] = static_cast<int>(jj);
    s[a] = static_cast<float>(2.0 * z - 1.0);
  }
  if (out) atomicOr(outside, 1u);
  keys[i] = (static_cast<unsigned>(j[2]) * d.gy + j[1]) * d.gx + j[0];
  idx[i] = i;
  rec[i] = make_float4(s[0], s[1], s[2], __int_as_float(j[0]));
}

// Sorted order: the record, the window's first x, and the W kernel weights per axis
// (wts[i * D * W + a * W + k], axis a, window point k) that gather and SM read; the weights go
// out through shared memory so that the block's stores are contiguous.
template <int D, int W>
__global__ void __launch_bounds__(256) prep_kernel(const float4 *__restrict__ rec_in, const unsigned *__restrict__ perm,
                                                   int m, Dev d, const float *__restrict__ coef, float4 *__restrict__ rec,
                                                   int *__restrict__ jxs, float *__restrict__ wts) {
  constexpr int DW = D * W;
  __shared__ float c[kMaxCoef];
  __shared__ float out[256 * DW];
  load_coef<W>(coef, d.degree, c);
  const int first = blockIdx.x * 256;
  const int i = first + static_cast<int>(threadIdx.x);
  if (i < m) {
    const float4 r = rec_in[perm[i]];
    rec[i] = r;
    jxs[i] = __float_as_int(r.w);
    const float sv[3] = {r.x, r.y, r.z};
#pragma unroll
    for (int a = 0; a < D; ++a)
#pragma unroll
      for (int k = 0; k < W; ++k) out[threadIdx.x * DW + a * W + k] = poly<W>(c, d.degree, k, sv[a]);
  }
  __syncthreads();
  const int n = min(256, m - first) * DW;
  float *dst = wts + static_cast<std::size_t>(first) * DW;
  for (int j = threadIdx.x; j < n; j += 256) dst[j] = out[j];
}

__global__ void count_kernel(const unsigned *keys, int m, unsigned *counts) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) atomicAdd(&counts[keys[i]], 1u); // integer counts: order-independent
}

__global__ void permute_kernel(const float2 *in, const unsigned *perm, int m, float2 *out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) out[i] = in[perm[i]];
}

// permute_kernel of blockIdx.y's vector (its m values at in + y m, sorted to out + y m): the
// coil-batched adjoint's vectors of a chunk in one launch.
__global__ void permute_vectors_kernel(const float2 *in, const unsigned *perm, int m, float2 *out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const std::size_t offset = static_cast<std::size_t>(blockIdx.y) * static_cast<std::size_t>(m);
  if (i < m) out[offset + i] = in[offset + perm[i]];
}

} // namespace
} // namespace mri::cuda::detail
