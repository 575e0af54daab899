#pragma once
// The CUDA gridding kernels (included by gridding_cuda.cu only): per-sample setup and sort
// support, reverse gridding (RGA, gather; coil-batched), scatter (GA, atomics), the
// shared-memory tiled scatter (SM), interpolation, and the crop/pad with deapodization; the
// dispatch table of their (dims, width) instantiations. The algorithm: gridding_cuda.hpp.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "cuda_check.cuh"
#include "gridding_cuda.hpp"

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

// RGA (reverse gridding, gather): a work item is R = kGatherRun<D> consecutive grid points x0 ..
// x0 + R - 1 of one row (y, z). The samples whose windows reach them have j0 in x0 - W + 1 ..
// x0 + R - 1 (and j0 in (y - W, y], (z - W, z]): for each (dz, dy) one contiguous run of the
// sorted samples per row of cells (two where it wraps around x = 0). The item reads each such
// sample once and adds it into the points its window covers. 3D: R = 8 (a thread per point read
// each sample W times and the run bounds 2 W^2 times per point: 2.1x SM's time at W 5 on 128^3
// uniform; H200, docs/performance.md); 2D: R = 1 (the 512^2 grid of a 256^2 image has 32K items
// of 8, too few to keep the GPU busy; the 1.8x slower measured for them came from a run whose
// variant may not have been loaded: docs/performance.md, "A/B runs that measured nothing").
// Every item's sums run in a fixed order: bitwise deterministic, no atomics.
template <int D> inline constexpr int kGatherRun = D == 3 ? 8 : 1;
// An item whose runs hold more samples than kGatherDense<D, W> (a radial or koosh centre: 10^4
// and more, summed by one thread while the rest of the GPU idled; koosh 128^3, M = 2^21, W 5:
// 6.6 ms against SM's 1.1, H200 2026-12-04) goes to gather_dense_kernel, a block per item. The
// thresholds are the fastest measured (H200 2026-12-04 15:07-15:20 UTC, variant builds of 128,
// 256, 512, 1024, 2048 and 32 W^2): 3D koosh 128^3, M = 2^21: W 3 256 (0.80 ms; 512: 0.84), W 4-5
// 512 (W 5 2.12; 256: 2.44, 1024: 2.30), W 6-8 1024 (W 7 5.77; 512: 6.83); 2D radial 256^2, M =
// 2^20: W 3-6 256 (W 3 0.164 ms, 512: 0.227; W 5 0.220, 512: 0.261, 18:3x UTC), W 7-8 512 (W 7
// 0.389; 256: 0.450, 1024: 0.466). The 3D ones held after the gather's predicated loads (18:3x
// UTC: koosh W 7 3.63 ms, 512: 4.23). Uniform points have no item this dense.
template <int D, int W>
inline constexpr unsigned kGatherDense = D == 2 ? (W <= 6 ? 256 : 512) : (W <= 3 ? 256 : W <= 5 ? 512 : 1024);
constexpr int kGatherDenseThreads = 128;

template <int D> __host__ __device__ constexpr int gather_items_x(int gx) {
  return (gx + kGatherRun<D> - 1) / kGatherRun<D>;
}

// The item's samples in row `row` (cells z, y fixed): run 0 the cells left of x = 0, wrapped
// from the row's end (their unwrapped cell is jx - gx), run 1 the cells max(lo, 0) .. hi - 1.
struct RowRuns {
  unsigned b0, e0, b1, e1;
  __device__ unsigned samples() const { return (e0 - b0) + (e1 - b1); }
};
template <int W>
__device__ __forceinline__ RowRuns row_runs(const unsigned *offsets, unsigned row, int x0, int hi, int gx) {
  const int lo = x0 - W + 1; // W <= gx (the plan's grid is at least 2 W): one wrap at most
  if (lo >= 0) return {0u, 0u, offsets[row + lo], offsets[row + hi]};
  return {offsets[row + lo + gx], offsets[row + gx], offsets[row], offsets[row + hi]};
}

// The first grid point of row (z - dz, y - dy) on the periodic grid.
template <int D> __device__ __forceinline__ unsigned window_row(const Dev &d, int y, int z, int dy, int dz) {
  const int cz = D == 3 ? wrap(z - dz, d.gz) : 0;
  return (static_cast<unsigned>(cz) * d.gy + wrap(y - dy, d.gy)) * d.gx;
}

// Item coordinates: x0, its row's end hi (min(x0 + R, gx)), y, z; from the item's place (ix, y,
// z) or its index (x fastest).
struct GatherItem {
  int x0, hi, y, z;
};
template <int D> __device__ __forceinline__ GatherItem gather_item(int ix, int y, int z, int gx) {
  const int x0 = ix * kGatherRun<D>;
  return {x0, min(x0 + kGatherRun<D>, gx), y, z};
}
template <int D> __device__ __forceinline__ GatherItem gather_item(unsigned item, const Dev &d) {
  const auto items_x = static_cast<unsigned>(gather_items_x<D>(d.gx));
  return gather_item<D>(static_cast<int>(item % items_x), static_cast<int>(item / items_x % d.gy),
                        static_cast<int>(item / (items_x * d.gy)), d.gx);
}

// The item's window rows W at a time, one group per dz (in order): group(runs, dz), runs[dy] of
// row (dz, dy), their bounds loaded together (independent loads in flight).
template <int D, int W, class Group>
__device__ __forceinline__ void for_each_item_group(const unsigned *__restrict__ offsets, const Dev &d,
                                                    const GatherItem &it, Group &&group) {
#pragma unroll 1
  for (int dz = 0; dz < (D == 3 ? W : 1); ++dz) {
    RowRuns runs[W];
#pragma unroll
    for (int dy = 0; dy < W; ++dy) runs[dy] = row_runs<W>(offsets, window_row<D>(d, it.y, it.z, dy, dz), it.x0, it.hi, d.gx);
    group(runs, dz);
  }
}

// The item's W^(D-1) window rows in order (dz, then dy): row(runs, dy, dz).
template <int D, int W, class Row>
__device__ __forceinline__ void for_each_item_row(const unsigned *__restrict__ offsets, const Dev &d,
                                                  const GatherItem &it, Row &&row) {
  for_each_item_group<D, W>(offsets, d, it, [&](const RowRuns(&runs)[W], int dz) {
#pragma unroll
    for (int dy = 0; dy < W; ++dy) row(runs[dy], dy, dz);
  });
}

// What a gather reads: sorted cells, weights and samples (coil c at val + c m).
struct GatherInputs {
  const int *__restrict__ jxs;
  const float *__restrict__ wts;
  const float2 *__restrict__ val;
  int coils;
  unsigned m;
};

// An item's sums, per coil (CB at once: SENSE's F^H D reads the runs, cells and weights once for
// all of them).
template <int R, int CB> struct GatherSums {
  float re[CB][R] = {}, im[CB][R] = {};
};

// Sample i, its unwrapped cell c = x0 - base, into point x0 + r with window point k = base + r
// where 0 <= k < W (weight 0 elsewhere: fmaf(0, v, s) leaves s), the weight wx (wy wz). R = 1:
// k = base always lies in the window, one load. R > 1: each point's weight is one load
// predicated on k lying in the window; the W x weights loaded once and k chosen among them by R W
// compare-and-selects had the integer pipe at 62% and took 1.4-1.8x longer (3D W 5 1.81 -> 1.31
// ms, W 7 4.81 -> 2.66 on 128^3 uniform; H200 2026-12-04 18:2x UTC, docs/performance.md). Weights shifted per sample ahead of time (no selects, aligned vector
// loads, 64 more bytes a sample) were slower still: bytes a sample cost more than the selects.
template <int D, int W, int R, int CB>
__device__ __forceinline__ void gather_sample(GatherSums<R, CB> &s, unsigned i, int base, int dy, int dz,
                                              const GatherInputs &in) {
  const float *w = in.wts + static_cast<std::size_t>(i) * (D * W);
  const float wyz = D == 3 ? w[W + dy] * w[2 * W + dz] : w[W + dy];
  float2 v[CB];
#pragma unroll
  for (int c = 0; c < CB; ++c)
    v[c] = c < in.coils ? in.val[i + static_cast<std::size_t>(c) * in.m] : make_float2(0.f, 0.f);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float wk;
    if constexpr (R == 1) {
      wk = w[base];
    } else {
      const int k = base + r;
      wk = static_cast<unsigned>(k) < static_cast<unsigned>(W) ? w[k] : 0.f;
    }
    const float wt = wk * wyz;
#pragma unroll
    for (int c = 0; c < CB; ++c) {
      s.re[c][r] = fmaf(wt, v[c].x, s.re[c][r]);
      s.im[c][r] = fmaf(wt, v[c].y, s.im[c][r]);
    }
  }
}

// Samples from + stride j of a row's two runs (thread `from` of `stride`), in run order.
template <int D, int W, int R, int CB>
__device__ __forceinline__ void gather_runs(GatherSums<R, CB> &s, const RowRuns &runs, unsigned from, unsigned stride,
                                            int x0, int gx, int dy, int dz, const GatherInputs &in) {
  for (unsigned i = runs.b0 + from; i < runs.e0; i += stride)
    gather_sample<D, W, R, CB>(s, i, x0 - (in.jxs[i] - gx), dy, dz, in);
  for (unsigned i = runs.b1 + from; i < runs.e1; i += stride)
    gather_sample<D, W, R, CB>(s, i, x0 - in.jxs[i], dy, dz, in);
}

// One group's rows (gather_kernel's thread per item, 3D): the wrapped runs (items at x = 0 only),
// then the W rows' runs walked as one sequence, the next row's bounds chosen by selects among the
// loaded ones. A warp's lanes hold runs of different lengths (1.5 samples a row on average at
// 128^3, M = 2^21, W 5), and a loop per row ran every row as long as its longest lane: 3D uniform
// W 5 2.15 -> 1.85 ms, W 7 5.78 -> 5.03 (H200 2026-12-04, with 32 x 8 x 1 blocks). In 2D (one
// point an item, W rows) it was slower: radial W 5 0.27 -> 0.34 ms.
template <int D, int W, int R, int CB>
__device__ __forceinline__ void gather_group(GatherSums<R, CB> &s, const RowRuns (&runs)[W], int x0, int gx, int dz,
                                             const GatherInputs &in) {
#pragma unroll
  for (int dy = 0; dy < W; ++dy) gather_runs<D, W, R, CB>(s, {runs[dy].b0, runs[dy].e0, 0u, 0u}, 0, 1, x0, gx, dy, dz, in);
  int dy = 0;
  unsigned i = runs[0].b1, e = runs[0].e1;
  while (true) {
    if (i < e) {
      gather_sample<D, W, R, CB>(s, i, x0 - in.jxs[i], dy, dz, in);
      ++i;
      continue;
    }
    if (++dy == W) break;
#pragma unroll
    for (int q = 1; q < W; ++q)
      if (q == dy) {
        i = runs[q].b1;
        e = runs[q].e1;
      }
  }
}

// Once per plan, before its first gather: each item's sample count (over its W^(D-1) rows'
// runs); those above kGatherDense<D, W> flagged and listed (list order: whichever thread came
// first; each item's sums do not depend on it).
template <int D, int W>
__global__ void classify_gather_kernel(const unsigned *__restrict__ offsets, Dev d, unsigned char *dense,
                                       unsigned *list, unsigned *count) {
  const unsigned items = static_cast<unsigned>(gather_items_x<D>(d.gx)) * d.gy * (D == 3 ? d.gz : 1);
  const unsigned item = blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= items) return;
  unsigned work = 0;
  for_each_item_row<D, W>(offsets, d, gather_item<D>(item, d), [&](const RowRuns &r, int, int) { work += r.samples(); });
  const bool heavy = work > kGatherDense<D, W>;
  dense[item] = heavy;
  if (heavy) list[atomicAdd(count, 1u)] = item;
}

// Point x0 + r of coil c (those inside the row) of an item.
__device__ __forceinline__ void store_point(float2 *grid, const GatherItem &it, const Dev &d, int r, int c,
                                            std::size_t points, float re, float im) {
  if (it.x0 + r < it.hi)
    grid[(static_cast<std::size_t>(it.z) * d.gy + it.y) * d.gx + it.x0 + r + static_cast<std::size_t>(c) * points] =
        make_float2(re, im);
}

// Thread per item, the dense ones skipped. Two blocks an SM: the single-coil kernels then spill
// nothing at W 6 .. 8 (by default ptxas held them to 80 registers and spilled a few bytes). Four
// (50% occupancy) measured 1-3% faster on 3D uniform points and 1-4% slower on koosh W 6-7 (H200
// 2026-12-04 18:2x UTC, docs/performance.md): not taken.
template <int D, int W, int CB = 1>
__global__ void __launch_bounds__(256, 2) gather_kernel(GatherInputs in, const unsigned *__restrict__ offsets,
                                                     const unsigned char *__restrict__ dense, Dev d,
                                                     float2 *__restrict__ grid, std::size_t points = 0) {
  constexpr int R = kGatherRun<D>;
  const int items_x = gather_items_x<D>(d.gx);
  const int ix = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
            z = blockIdx.z * blockDim.z + threadIdx.z;
  if (ix >= items_x || y >= d.gy || z >= d.gz) return;
  if (dense[(static_cast<unsigned>(z) * d.gy + y) * items_x + ix]) return;
  const GatherItem it = gather_item<D>(ix, y, z, d.gx);
  GatherSums<R, CB> s;
  if constexpr (D == 3) {
    for_each_item_group<D, W>(offsets, d, it, [&](const RowRuns(&runs)[W], int dz) {
      gather_group<D, W, R, CB>(s, runs, it.x0, d.gx, dz, in);
    });
  } else {
    for_each_item_row<D, W>(offsets, d, it, [&](const RowRuns &runs, int dy, int dz) {
      gather_runs<D, W, R, CB>(s, runs, 0, 1, it.x0, d.gx, dy, dz, in);
    });
  }
#pragma unroll
  for (int c = 0; c < CB; ++c)
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (c < in.coils) store_point(grid, it, d, r, c, points, s.re[c][r], s.im[c][r]);
}

// Warp sum by a fixed xor tree: lane 0's result is the same bits on every run.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The dense items (list[0 .. count)), a block each, blocks striding over the list: thread t
// takes samples t, t + T, ... of every run (in the thread-per-item order), then the block's
// partial sums are added by a fixed tree (warps, then the warps in order): deterministic.
template <int D, int W, int CB = 1>
__global__ void __launch_bounds__(kGatherDenseThreads)
    gather_dense_kernel(GatherInputs in, const unsigned *__restrict__ offsets, const unsigned *__restrict__ list,
                        unsigned count, Dev d, float2 *__restrict__ grid, std::size_t points = 0) {
  constexpr int R = kGatherRun<D>, kWarps = kGatherDenseThreads / 32;
  __shared__ float partial[kWarps][CB][R][2];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  for (unsigned j = blockIdx.x; j < count; j += gridDim.x) {
    const GatherItem it = gather_item<D>(list[j], d);
    GatherSums<R, CB> s;
    for_each_item_row<D, W>(offsets, d, it, [&](const RowRuns &runs, int dy, int dz) {
      gather_runs<D, W, R, CB>(s, runs, t, kGatherDenseThreads, it.x0, d.gx, dy, dz, in);
    });
#pragma unroll
    for (int c = 0; c < CB; ++c)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float re = warp_sum(s.re[c][r]), im = warp_sum(s.im[c][r]);
        if (lane == 0) {
          partial[warp][c][r][0] = re;
          partial[warp][c][r][1] = im;
        }
      }
    __syncthreads();
    if (t < CB * R) {
      const int c = t / R, r = t % R;
      float re = partial[0][c][r][0], im = partial[0][c][r][1];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) {
        re += partial[w][c][r][0];
        im += partial[w][c][r][1];
      }
      if (c < in.coils) store_point(grid, it, d, r, c, points, re, im);
    }
    __syncthreads(); // partial is rewritten by the next item
  }
}

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

// SM's work items (subproblems): a tile's samples cut into runs of at most kSubproblem. A
// trajectory with a dense centre (koosh, radial: every spoke crosses the centre tiles) put 10^5
// samples into one tile, one block summing them while the rest of the GPU idled: koosh 128^3,
// M = 2^21, W 5 took 13.6 ms against 2.8 ms by global atomics (H200, 2026-12-02, bench_nufft_front_gpu).
constexpr unsigned kSubproblem = 1024;
// SM's consecutive samples per work item (sm_scatter_kernel).
constexpr int kSmRun = 4;
constexpr unsigned kNoTile = 0xffffffffu; // a table entry past the last subproblem

// The samples of tile `tile` (runs of its rows in cell order; offsets per cell).
__device__ unsigned tile_samples(const unsigned *offsets, Dev d, int tx, int ty, int tz, int tiles_x, int tiles_y,
                                 unsigned tile) {
  const int x0 = static_cast<int>(tile % tiles_x) * tx, y0 = static_cast<int>(tile / tiles_x % tiles_y) * ty;
  const int z0 = static_cast<int>(tile / (tiles_x * tiles_y)) * tz, x1 = min(x0 + tx, d.gx);
  unsigned total = 0;
  for (int z = z0; z < min(z0 + tz, d.gz); ++z)
    for (int y = y0; y < min(y0 + ty, d.gy); ++y) {
      const unsigned row = (static_cast<unsigned>(z) * d.gy + y) * d.gx;
      total += offsets[row + x1] - offsets[row + x0];
    }
  return total;
}

__global__ void count_subproblems_kernel(const unsigned *offsets, Dev d, int tx, int ty, int tz, int tiles_x,
                                         int tiles_y, unsigned tiles, unsigned *counts) {
  const unsigned tile = blockIdx.x * blockDim.x + threadIdx.x;
  if (tile < tiles)
    counts[tile] = (tile_samples(offsets, d, tx, ty, tz, tiles_x, tiles_y, tile) + kSubproblem - 1) / kSubproblem;
}

// table[first[tile] + j] = (tile, j kSubproblem): the tile and the first of its samples (in its
// own order) that subproblem j takes.
__global__ void fill_subproblems_kernel(const unsigned *counts, const unsigned *first, unsigned tiles, uint2 *table) {
  const unsigned tile = blockIdx.x * blockDim.x + threadIdx.x;
  if (tile >= tiles) return;
  for (unsigned j = 0; j < counts[tile]; ++j) table[first[tile] + j] = make_uint2(tile, j * kSubproblem);
}

// SM: the grid in tiles of TX x TY x TZ cells; a block per subproblem, at most kSubproblem of one
// tile's samples. The tile's samples (j0 in the tile) are the runs [offsets[row + x0],
// offsets[row + x1]) of its TY x TZ rows; the block takes its part of them in chunks of S, stages their weights, values and padded-tile positions in shared memory,
// spreads them into the padded tile (TX + W - 1) x (TY + W - 1) x (TZ + W - 1) with shared
// atomics (work item = one window row of kSmRun consecutive samples: W points along x, so a dense tile keeps
// every thread busy; real and imaginary parts in separate arrays with an odd row pitch, against
// bank conflicts), and finally adds the padded tile's nonzero points into the grid (global
// float2 atomics, coordinates wrapped: the halo belongs to the neighbouring tiles, and the other
// subproblems of a dense tile add into the same points).
template <int D, int W> struct SmTile {
  static constexpr int TX = D == 3 ? 16 : 32;
  static constexpr int TY = D == 3 ? 8 : 16;
  static constexpr int TZ = D == 3 ? (W <= 6 ? 8 : 4) : 1;
  static constexpr int S = D == 3 ? 128 : 256; // samples staged per chunk
  static constexpr int PX = TX + W - 1, PY = TY + W - 1, PZ = D == 3 ? TZ + W - 1 : 1;
  static constexpr int SX = PX | 1;          // shared row pitch (odd)
  static constexpr int P = PX * PY * PZ;      // padded points
  static constexpr int SP = SX * PY * PZ;     // shared floats per part
  static constexpr int R = TY * TZ;           // rows of cells per tile
  static constexpr int ROWS = D == 3 ? W * W : W; // window rows per sample
  static_assert(R <= 256, "one run per thread");
  static constexpr int STAGED = S * (D * W * 4 + 8 + 4) + R * 8 + 1024; // static shared bytes, about
  static_assert(2 * SP * 4 + STAGED <= 48 * 1024, "float tile within the default 48 KB a block");
};

// SM's tile accumulators: float (atomic float adds: the last bits depend on their order) or, for
// Gridding::ScatterFixed, fixed point: each partial sum rounded once to an integer q = v 2^e
// (FixedScale) and added as integers. Integer addition (mod 2^n) is associative, so the tile and
// grid sums are the same bits in any order of the atomics: deterministic. e is chosen so that M
// max|value| 2^e < 2^49 (every sample at weight 1 in one point): |q| and every sum of them stay
// below 2^50 (a factor 2 left for kernel weights a little above 1), and the rounding (2^-e / 2 a
// partial sum, below 2^-49 M max|value|) is far below float's. In the tile, q is held as two
// native 32-bit integer adds: lo = q mod 2^20 (at most kSubproblem adds a point: their sum stays
// below 2^30) and hi = floor(q / 2^20), summed mod 2^32: the true sum of the hi parts, (sum q -
// sum lo) / 2^20, lies within +-2^31, so it is what the 32-bit sum holds. 64-bit shared atomics
// are a compare-and-swap loop on sm_90 (ATOMS.CAST.SPIN.64 in the SASS): 1.34-1.95x SM's time in
// 3D (H200 2026-12-05, docs/performance-log.md); 32-bit integer adds are native (ATOMS.ADD).
template <bool Fixed> using SmAcc = std::conditional_t<Fixed, unsigned, float>;
struct FixedScale {
  float to_fixed;  // 2^e
  double to_float; // 2^-e
};
constexpr int kFixedLoBits = 20;
static_assert(kSubproblem << kFixedLoBits <= (1u << 30), "the lo parts' sum fits 31 bits");

// Adds v into the tile point `at` (Fixed: its lo part; the hi part `hi` further on).
template <bool Fixed>
__device__ __forceinline__ void sm_add(SmAcc<Fixed> *at, int hi, float v, const FixedScale *scale) {
  if constexpr (Fixed) {
    const long long q = __float2ll_rn(v * scale->to_fixed);
    atomicAdd(at, static_cast<unsigned>(q) & ((1u << kFixedLoBits) - 1));
    atomicAdd(at + hi, static_cast<unsigned>(q >> kFixedLoBits));
  } else {
    atomicAdd(at, v);
  }
}

// A tile point's fixed-point sum from its lo and hi parts (sm_add).
__device__ __forceinline__ long long fixed_sum(unsigned lo, unsigned hi) {
  return static_cast<long long>(static_cast<int>(hi)) * (1ll << kFixedLoBits) + lo;
}

// The tile's accumulators are dynamic shared memory (float: re and im, SP each; fixed: re's lo and
// hi parts, then im's: above 48 KB at W >= 5); Fixed adds into `fixed` (two integers a grid
// point), else into `grid`.
template <int D, int W, bool Fixed = false>
__global__ void __launch_bounds__(256) sm_scatter_kernel(const int *__restrict__ jxs, const float *__restrict__ wts,
                                                         const float2 *__restrict__ val,
                                                         const unsigned *__restrict__ offsets,
                                                         const uint2 *__restrict__ subproblems, Dev d, int tiles_x,
                                                         int tiles_y, float2 *grid, unsigned long long *fixed,
                                                         const FixedScale *scale) {
  using T = SmTile<D, W>;
  using Acc = SmAcc<Fixed>;
  constexpr int DW = D * W;
  using Scan = cub::BlockScan<unsigned, 256>;
  extern __shared__ __align__(16) unsigned char sm_tile[];
  constexpr int kParts = Fixed ? 2 : 1, hi = T::SP; // Fixed: a part's hi sums follow its lo sums
  Acc *re = reinterpret_cast<Acc *>(sm_tile), *im = re + kParts * T::SP;
  __shared__ float sw[T::S * DW];
  __shared__ float2 sv[T::S];
  __shared__ int sbase[T::S];
  __shared__ unsigned run_begin[T::R], run_prefix[T::R];
  __shared__ typename Scan::TempStorage scan;

  const int t = threadIdx.x;
  const uint2 sub = subproblems[blockIdx.x];
  if (sub.x == kNoTile) return;
  const int tile_index = static_cast<int>(sub.x);
  const int x0 = (tile_index % tiles_x) * T::TX;
  const int y0 = (tile_index / tiles_x % tiles_y) * T::TY;
  const int z0 = D == 3 ? tile_index / (tiles_x * tiles_y) * T::TZ : 0;
  const int x1 = min(x0 + T::TX, d.gx);
  unsigned len = 0;
  if (t < T::R) {
    const int y = y0 + t % T::TY, z = z0 + t / T::TY;
    unsigned b = 0;
    if (y < d.gy && z < d.gz) {
      const unsigned row = (static_cast<unsigned>(z) * d.gy + y) * d.gx;
      b = offsets[row + x0];
      len = offsets[row + x1] - b;
    }
    run_begin[t] = b;
  }
  unsigned prefix = 0, total = 0;
  Scan(scan).ExclusiveSum(len, prefix, total);
  if (total == 0) return; // every thread has the block's total: uniform
  if (t < T::R) run_prefix[t] = prefix;
  for (int p = t; p < 2 * kParts * T::SP; p += 256) re[p] = 0;
  __syncthreads();

  const unsigned end = min(total, sub.y + kSubproblem);
  for (unsigned c0 = sub.y; c0 < end; c0 += T::S) {
    const int count = static_cast<int>(min(static_cast<unsigned>(T::S), end - c0));
    for (int k = t; k < count; k += 256) {
      const unsigned f = c0 + k;
      int lo = 0, hi = T::R - 1; // the last run starting at or before f (it holds f)
      while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (run_prefix[mid] <= f)
          lo = mid;
        else
          hi = mid - 1;
      }
      const unsigned i = run_begin[lo] + (f - run_prefix[lo]);
      const int lx = jxs[i] - x0, ly = lo % T::TY, lz = lo / T::TY;
      sbase[k] = (lz * T::PY + ly) * T::SX + lx;
      sv[k] = val[i];
      const float *w = wts + static_cast<std::size_t>(i) * DW;
#pragma unroll
      for (int a = 0; a < DW; ++a) sw[k * DW + a] = w[a];
    }
    __syncthreads();
    // Work item: one window row of kSmRun consecutive samples. Sorted by cell, consecutive samples
    // share a cell wherever the sampling is dense (a radial or koosh centre: hundreds a cell),
    // and their rows add into the same W points: summed in registers while the cell holds, one
    // shared atomic per point and run instead of one per sample (the lanes of a dense cell
    // otherwise serialise on the same addresses).
    const int runs = (count + kSmRun - 1) / kSmRun;
    for (int item = t; item < runs * T::ROWS; item += 256) {
      const int g = item / T::ROWS, r = item - g * T::ROWS;
      const int dy = r % W, dz = D == 3 ? r / W : 0;
      const int row = (dz * T::PY + dy) * T::SX;
      float ar[W] = {}, ai[W] = {};
      int at = sbase[g * kSmRun] + row;
      const auto flush = [&] { // the run's sums into the padded tile, at its first point `at`
#pragma unroll
        for (int dx = 0; dx < W; ++dx) {
          sm_add<Fixed>(&re[at + dx], hi, ar[dx], scale);
          sm_add<Fixed>(&im[at + dx], hi, ai[dx], scale);
          ar[dx] = ai[dx] = 0.f;
        }
      };
      const int k_end = min(count, (g + 1) * kSmRun);
      for (int k = g * kSmRun; k < k_end; ++k) {
        const int here = sbase[k] + row;
        if (here != at) {
          flush();
          at = here;
        }
        const float *w = sw + k * DW;
        float wyz = w[W + dy];
        if constexpr (D == 3) wyz *= w[2 * W + dz];
        const float2 v = sv[k];
        const float vr = wyz * v.x, vi = wyz * v.y;
#pragma unroll
        for (int dx = 0; dx < W; ++dx) {
          ar[dx] += w[dx] * vr;
          ai[dx] += w[dx] * vi;
        }
      }
      flush();
    }
    __syncthreads();
  }
  for (int p = t; p < T::P; p += 256) {
    const int lx = p % T::PX, ly = p / T::PX % T::PY, lz = p / (T::PX * T::PY);
    const int q = (lz * T::PY + ly) * T::SX + lx;
    const int gx = (x0 + lx) % d.gx, gy = (y0 + ly) % d.gy, gz = D == 3 ? (z0 + lz) % d.gz : 0;
    const unsigned point = (static_cast<unsigned>(gz) * d.gy + gy) * d.gx + gx;
    if constexpr (Fixed) {
      const long long vr = fixed_sum(re[q], re[q + hi]), vi = fixed_sum(im[q], im[q + hi]);
      if (vr == 0 && vi == 0) continue;
      atomicAdd(&fixed[2 * std::size_t{point}], static_cast<unsigned long long>(vr));
      atomicAdd(&fixed[2 * std::size_t{point} + 1], static_cast<unsigned long long>(vi));
    } else {
      if (re[q] == 0.f && im[q] == 0.f) continue;
      atomicAdd(&grid[point], make_float2(re[q], im[q]));
    }
  }
}

// ScatterFixed's scale from the largest |re| or |im| of the values (an order-free maximum, so the
// scale too is the same on every run): with M max < 2^b, e = 49 - b (SmAcc), at most 126 (a
// float; only data below 2^-77 M^-1 reach it: coarser, still deterministic); all zeros: e = 0.
__global__ void fixed_scale_kernel(const unsigned *max_abs, int m, FixedScale *scale) {
  const double bound = static_cast<double>(__uint_as_float(*max_abs)) * m;
  int b = 49;
  if (bound > 0) frexp(bound, &b); // bound < 2^b
  const int e = min(49 - b, 126);
  *scale = {ldexpf(1.0f, e), ldexp(1.0, -e)};
}

// max(|re|, |im|) over `n` values into *max_abs (zeroed before): float bits of non-negative
// values order as unsigned integers, so an integer atomicMax takes the maximum exactly.
__global__ void max_abs_kernel(const float2 *__restrict__ v, std::size_t n, unsigned *max_abs) {
  using Reduce = cub::BlockReduce<float, 256>;
  __shared__ typename Reduce::TempStorage tmp;
  float local = 0.f;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += gridDim.x * std::size_t{blockDim.x})
    local = fmaxf(local, fmaxf(fabsf(v[i].x), fabsf(v[i].y)));
  const float block_max = Reduce(tmp).Reduce(local, [](float a, float b) { return fmaxf(a, b); });
  if (threadIdx.x == 0) atomicMax(max_abs, __float_as_uint(block_max));
}

__global__ void fixed_to_float_kernel(const unsigned long long *__restrict__ fixed, std::size_t points,
                                      const FixedScale *scale, float2 *__restrict__ grid) {
  const std::size_t p = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (p >= points) return;
  const double to_float = scale->to_float;
  grid[p] = make_float2(static_cast<float>(static_cast<double>(static_cast<long long>(fixed[2 * p])) * to_float),
                        static_cast<float>(static_cast<double>(static_cast<long long>(fixed[2 * p + 1])) * to_float));
}

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

// Deapodization of voxel (ix, iy, iz): the product of the per-axis factors.
__device__ __forceinline__ float deapod_weight(const float *deapod, const Dev &d, int ix, int iy, int iz) {
  return deapod[ix] * deapod[d.nx + iy] * deapod[d.nx + d.ny + iz];
}

// Voxel v <-> oversampled index of its coordinate mod G, with the deapodization factor.
__device__ __forceinline__ void voxel_map(int v, const Dev &d, const float *deapod, unsigned &j, float &w) {
  const int ix = v % d.nx, iy = (v / d.nx) % d.ny, iz = v / (d.nx * d.ny);
  const int cx = ix - d.nx / 2, cy = iy - d.ny / 2, cz = iz - d.nz / 2;
  const int jx = cx < 0 ? cx + d.gx : cx, jy = cy < 0 ? cy + d.gy : cy, jz = cz < 0 ? cz + d.gz : cz;
  j = (static_cast<unsigned>(jz) * d.gy + jy) * d.gx + jx;
  w = deapod_weight(deapod, d, ix, iy, iz);
}

__global__ void crop_kernel(const float2 *grid, Dev d, const float *deapod, float2 *image) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= d.nx * d.ny * d.nz) return;
  unsigned j;
  float w;
  voxel_map(v, d, deapod, j, w);
  const float2 g = grid[j];
  image[v] = make_float2(g.x * w, g.y * w);
}

// Grid index j of an axis (g points, n voxels) <-> the voxel of coordinate j (j < n - n/2) or
// j - g (j >= g - n/2), as voxel_map; -1 between them (the zero padding).
__device__ __forceinline__ int voxel_of(int j, int n, int g) {
  const int c = j < n - n / 2 ? j : j - g;
  return c >= -(n / 2) ? c + n / 2 : -1;
}

// The forward's first step: every oversampled grid point (x a thread, y and z the block's) written
// once, its voxel times the deapodization or 0: no separate clear of the grid before a scattered
// pad (one pass and one launch fewer).
__global__ void pad_grid_kernel(const float2 *__restrict__ image, Dev d, const float *__restrict__ deapod,
                                float2 *__restrict__ grid) {
  const int jx = blockIdx.x * blockDim.x + threadIdx.x;
  if (jx >= d.gx) return;
  const int jy = static_cast<int>(blockIdx.y), jz = static_cast<int>(blockIdx.z);
  const int ix = voxel_of(jx, d.nx, d.gx), iy = voxel_of(jy, d.ny, d.gy), iz = voxel_of(jz, d.nz, d.gz);
  float2 v = make_float2(0.f, 0.f);
  if (ix >= 0 && iy >= 0 && iz >= 0) {
    const float w = deapod_weight(deapod, d, ix, iy, iz);
    const float2 x = image[(static_cast<std::size_t>(iz) * d.ny + iy) * d.nx + ix];
    v = make_float2(x.x * w, x.y * w);
  }
  grid[(static_cast<std::size_t>(jz) * d.gy + jy) * d.gx + jx] = v;
}

// Coils gridded together by the coil-batched gather (adjoint_coils_device).
constexpr int kCoilBlock = NufftDevicePlan::kCoilBlock;

struct Kernels {
  decltype(&prep_kernel<2, 4>) prep;
  decltype(&classify_gather_kernel<2, 4>) classify;
  decltype(&gather_kernel<2, 4>) gather;
  decltype(&gather_kernel<2, 4, kCoilBlock>) gather_coils;
  decltype(&gather_dense_kernel<2, 4>) gather_dense;
  decltype(&gather_dense_kernel<2, 4, kCoilBlock>) gather_dense_coils;
  decltype(&scatter_kernel<2, 4>) scatter;
  decltype(&sm_scatter_kernel<2, 4>) sm;
  decltype(&sm_scatter_kernel<2, 4>) sm_fixed;
  std::size_t sm_shared, sm_fixed_shared; // their dynamic shared memory (bytes)
  decltype(&interp_kernel<2, 4>) interp;
  int tx, ty, tz;  // SM tile
  int gather_run;  // RGA's points per item (kGatherRun)
};

template <int D, int W> Kernels kernels_of() {
  using T = SmTile<D, W>;
  return {&prep_kernel<D, W>,
          &classify_gather_kernel<D, W>,
          &gather_kernel<D, W>,
          &gather_kernel<D, W, kCoilBlock>,
          &gather_dense_kernel<D, W>,
          &gather_dense_kernel<D, W, kCoilBlock>,
          &scatter_kernel<D, W>,
          &sm_scatter_kernel<D, W>,
          &sm_scatter_kernel<D, W, true>,
          2 * T::SP * sizeof(float),
          4 * T::SP * sizeof(unsigned),
          &interp_kernel<D, W>,
          T::TX,
          T::TY,
          T::TZ,
          kGatherRun<D>};
}

template <int D, int W = 2> Kernels pick(int width) {
  if constexpr (W > kMaxDeviceWidth) {
    throw Unsupported("NufftOperator on cuda: kernel width " + std::to_string(width) + " above " +
                      std::to_string(kMaxDeviceWidth));
  } else {
    if (width == W) return kernels_of<D, W>();
    return pick<D, W + 1>(width);
  }
}

unsigned blocks(std::int64_t n, int per) { return static_cast<unsigned>((n + per - 1) / per); }

// Auto: SM in 3D; in 2D SM from one sample per oversampled grid cell up, GA below. H200,
// 2026-12-03, bench_nufft_gpu and bench_nufft_front_gpu after SM's same-cell runs: 256^2 at
// 2^20 samples (4 a cell) SM 0.124 ms against GA 0.207 (uniform, tol 1e-3) and 0.121 against
// 0.256 (radial, tol 1e-2); PROPELLER 256^2 at 2^17 (half a sample a cell, GRID2D) SM 0.070
// against GA 0.056. Between half a sample and four a cell the crossing was not measured: one is
// the guess.
ScatterMethod resolved_scatter(ScatterMethod method, int dims, std::int64_t samples, std::int64_t grid_points) {
  if (method != ScatterMethod::Auto) return method;
  return dims == 3 || samples >= grid_points ? ScatterMethod::Shared : ScatterMethod::Global;
}

} // namespace
} // namespace mri::cuda::detail
