#pragma once
// Reverse gridding (RGA; Yang, Feng and Zhao, "A CUDA-based reverse gridding algorithm for MR
// reconstruction", Magn. Reson. Imaging 2013): the adjoint as a gather, a work item per run of
// grid points (coil-batched too), no atomics, bitwise deterministic; dense items summed by a
// block each.
#include "nufft/gridding_common.cuh"
#include "mri_backend/tuning.hpp"

namespace mri::cuda::detail {
namespace {

// RGA (reverse gridding, gather): a work item is R = kGatherRun<D> consecutive grid points x0 ..
// x0 + R - 1 of one row (y, z). The samples whose windows reach them have j0 in x0 - W + 1 ..
// x0 + R - 1 (and j0 in (y - W, y], (z - W, z]): for each (dz, dy) one contiguous run of the
// sorted samples per row of cells (two where it wraps around x = 0). The item reads each such
// sample once and adds it into the points its window covers. 3D: R = 8 (a thread per point read
// each sample W times and the run bounds 2 W^2 times per point, about twice SM's time); 2D: R = 1
// (the 512^2 grid of a 256^2 image has 32K items of 8, too few to keep the GPU busy; the one
// measurement against them is uncertain: docs/history.md, "A/B runs that measured nothing").
// Every item's sums run in a fixed order: bitwise deterministic, no atomics.
template <int D> inline constexpr int kGatherRun = mri::detail::tuning::Gpu::gather_run(D);
// An item whose runs hold more samples than kGatherDense<D, W> (a radial or koosh centre: 10^4 and
// more, summed by one thread while the rest of the GPU idled: several times SM's time on koosh)
// goes to gather_dense_kernel, a block per item. The thresholds are the fastest per kernel width of
// 128, 256, 512, 1024, 2048 and 32 W^2 samples, on 3D koosh 128^3 (M = 2^21) and 2D radial
// 256^2 (M = 2^20), tuned by bench_nufft_front_gpu (docs/history.md, "Dense-item thresholds per
// width").
// Uniform points have no item this dense.
template <int D, int W> inline constexpr unsigned kGatherDense = mri::detail::tuning::Gpu::gather_dense(D, W);
constexpr int kGatherDenseThreads = mri::detail::tuning::Gpu::gather_dense_threads;

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
// compare-and-selects keep the integer pipe busy and are slower (docs/history.md, "RGA with each
// point's x weight one predicated load"). Weights shifted per sample ahead of time (no selects,
// aligned vector loads, 64 more bytes a sample) are slower still: bytes a sample cost more than
// the selects.
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
// 128^3, M = 2^21, W 5), and a loop per row runs every row as long as its longest lane. In 2D (one
// point an item, W rows) the sequence is slower than a loop per row (docs/history.md, "RGA with
// each group of rows walked as one sequence; the forward's fused pad").
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
// (50% occupancy) win a few percent on 3D uniform points and lose as much on koosh W 6-7
// (docs/history.md, "RGA with each point's x weight one predicated load"): not taken.
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

} // namespace
} // namespace mri::cuda::detail
