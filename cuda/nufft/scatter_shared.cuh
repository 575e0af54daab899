#pragma once
// The adjoint as a scatter into shared-memory tiles (SM), in float or in fixed point (ScatterFixed:
// integer atomics, so the same bits in any order), with the subproblem table of its work items.
#include <cub/cub.cuh>

#include "nufft/gridding_common.cuh"
#include "mri_backend/tuning.hpp"

namespace mri::cuda::detail {
namespace {

// SM's work items (subproblems): a tile's samples cut into runs of at most kSubproblem. A
// trajectory with a dense centre (koosh, radial: every spoke crosses the centre tiles) put 10^5
// samples into one tile, one block summing them while the rest of the GPU idled (several times
// the time of global atomics on koosh 128^3; bench_nufft_front_gpu, docs/history.md).
constexpr unsigned kSubproblem = mri::detail::tuning::Gpu::sm_subproblem;
// SM's consecutive samples per work item (sm_scatter_kernel).
constexpr int kSmRun = mri::detail::tuning::Gpu::sm_run;
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
// are a compare-and-swap loop on sm_90 (ATOMS.CAST.SPIN.64 in the SASS), far slower than SM's
// float adds (docs/history.md, "Deterministic gridding on the GPU"); 32-bit integer adds are
// native (ATOMS.ADD).
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

} // namespace
} // namespace mri::cuda::detail
