// "Tuned" (ours, beyond the F^H D stages of Stone et al. 2008; docs/architecture.md): fewer
// instructions per (voxel, sample) pair than one sincos each.
//
// Each thread owns a tile of kTuned.tile_x = 16 voxels along x by kTuned.tile_y = 4 rows along y
// (at one z). Let xc be the tile's centre along x (a half-integer) and t = k/period in turns.
// For one sample:
//   a_0   = c * exp(i 2 pi (tx xc + ty y0 + tz z))        one __sincosf (phase reduced in turns)
//   a_r+1 = a_r * g,  g = exp(i 2 pi ty)                   row recurrence, 3 complex multiplies
//   voxel xc +- (j + 1/2):  a_r * p_j  and  a_r * conj(p_j),  p_j = exp(i 2 pi tx (j + 1/2))
// Symmetric angle addition: with P_j = sum a Re(p_j) and Q_j = sum a Im(p_j) (complex sums),
// voxel xc + (j+1/2) = P_j + i Q_j and voxel xc - (j+1/2) = P_j - i Q_j, so each pair of
// voxels costs 4 FMAs per sample: 2 FMAs per pair. g and p_0..p_7 are per-sample factors
// computed once in double by the packing pass (no recurrence drift along x) and read from
// shared memory as 6 float4 broadcasts per sample. One sincos per sample per 64-voxel tile.
// Samples are staged through shared memory in tiles of kTuned.smem_samples.
//
// Summation: a thread sums at most kTuned.pass_samples samples in registers, then adds the
// partial into its own slot of a partial image (one launch per pass, no atomics, deterministic);
// samples are also split across blockIdx.y (choose_splits(): as many splits as make each
// launch fill whole waves of the GPU, small grids included); a final pass adds the splits in a
// fixed order. A float running sum over 2^20 samples would cost ~2e-5 relative error by itself;
// blocks of 4096 keep it near 1e-6.
//
// Variants: the benchmark's ablation (tuned_variant_name / FhdPlan::adjoint_device_tuned_variant;
// kTunedDefault is what KernelPolicy::Tuned runs), all with the sums above:
//   0-8   FP32 "symmetric" kernels: a 16 x 4 (or 16 x 3) voxel tile per thread, occupancy 2-4
//         blocks an SM (__launch_bounds__; "occN"), "pipelined" issues the next sample's phase
//         and sincos before the current sample's FMAs, "prefetch" stages samples by cp.async into
//         two buffers; 4, one __sincosf per pair, is the SFU-bound reference.
//   9-13  the same sums on the tensor cores (tensor_kernel, 3xTF32 mma.sync), warp tiles of
//         128 or 64 voxels along x by 2-8 rows.
// Why the tensor cores: the FP32 kernels are bound by the FFMA issue rate. Variant 0 issues 162
// instructions per sample and 64-pair tile (138 FFMA, 11 FMUL, 3 FADD, 6 LDS.128, 2 MUFU), and
// cp.async staging removes the shared-memory waits but not the dispatch stalls on the FFMAs. On
// the tensor cores the FP32 pipes only form B (one __sincosf per 16 voxels and sample, a complex
// rotation per row) and split operands, by FP32 arithmetic rather than cvt.rna.tf32 (the
// conversion pipe is slower). A 128-wide warp tile leaves half its columns idle on 64-wide grids,
// which is why the default is a 64 x 8 tile. Tuned by bench_fhd_gpu
// --benchmark_filter='tuned-variant' on FHD-2D, FHD-3D-S and FHD-3D-L, the default the fastest on
// all three at equal accuracy (docs/performance.md, the F^H D stages; the full sweep is in git
// history).
#include <algorithm>
#include <cmath>

#include <cuda_pipeline.h>

#include "fhd_plan.cuh"
#include "mma_sync.cuh"
#include "mri/error.hpp"
#include "mri_backend/tuning.hpp"

namespace mri::cuda::detail {
namespace {

inline constexpr auto kTuned = mri::detail::tuning::Gpu::fhd_tuned; // launch shape: the tuning table
constexpr int kTunedDefault = kTuned.variant; // the variant KernelPolicy::Tuned runs
constexpr int kPairs = kTuned.tile_x / 2;

// Record of sample m (6 float4):
//   [0] tx ty tz c.re   [1] c.im g.re g.im 0   [2..5] p_0 .. p_7 (re, im)
__global__ void tuned_pack_kernel(const KPoint *__restrict__ k, const float2 *__restrict__ c, int m, double sx,
                                  double sy, double sz, float4 *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const KPoint p = k[i];
  const float2 v = c[i];
  const double tx = p.kx * sx, ty = p.ky * sy, tz = p.kz * sz;
  double gs, gc;
  sincospi(2.0 * ty, &gs, &gc);
  float4 *r = out + static_cast<std::size_t>(i) * kTuned.record_float4;
  r[0] = make_float4(static_cast<float>(tx), static_cast<float>(ty), static_cast<float>(tz), v.x);
  r[1] = make_float4(v.y, static_cast<float>(gc), static_cast<float>(gs), 0.f);
  float pr[kPairs], pi[kPairs];
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    double s, cs;
    sincospi(2.0 * tx * (j + 0.5), &s, &cs);
    pr[j] = static_cast<float>(cs);
    pi[j] = static_cast<float>(s);
  }
#pragma unroll
  for (int q = 0; q < kPairs / 2; ++q) r[2 + q] = make_float4(pr[2 * q], pi[2 * q], pr[2 * q + 1], pi[2 * q + 1]);
}

struct TunedArgs {
  const float4 *samples;
  int m;
  OutGrid g;
  int tiles_x, tiles_y, tiles;
  int splits;
  int per_block; // samples per (block, pass)
  int pass;
  float2 *acc; // splits x voxels partial images (or the output when splits == 1)
  bool first;
};

// a_0 = c * exp(i 2 pi (tx xc + ty y0 + tz z)) of one record, and g = exp(i 2 pi ty).
__device__ __forceinline__ void tile_base(const float4 *rec, float xc, float y0, float z, float &ar, float &ai,
                                          float &gr, float &gi) {
  const float4 r0 = rec[0], r1 = rec[1];
  const float tt = fmaf(r0.x, xc, fmaf(r0.y, y0, r0.z * z));
  float sn, cs;
  __sincosf(kTwoPi * reduce_turns(tt), &sn, &cs);
  ar = r0.w * cs - r1.x * sn;
  ai = r0.w * sn + r1.x * cs;
  gr = r1.y;
  gi = r1.z;
}

// a <- a g: the phase of the next row (the recurrence along y).
__device__ __forceinline__ void rotate(float &ar, float &ai, float gr, float gi) {
  const float nr = ar * gr - ai * gi;
  ai = fmaf(ar, gi, ai * gr);
  ar = nr;
}

// The output of one mirrored voxel pair from its sums P, Q: + at x = ip, - at x = im, each where
// inside the row; written on the first pass, added after.
__device__ __forceinline__ void store_pair(float2 *row, int ip, int im, int nx, float pr, float pi, float qr,
                                           float qi, bool first) {
  const auto put = [&](int x, float2 v) {
    if (x >= nx) return;
    float2 &o = row[x];
    o = first ? v : make_float2(o.x + v.x, o.y + v.y);
  };
  put(ip, make_float2(pr - qi, pi + qr));
  put(im, make_float2(pr + qi, pi - qr));
}

// The 2-FMAs-per-pair accumulation of one record into the 16 x Rows tile.
template <int Rows>
__device__ __forceinline__ void tile_accumulate(const float4 *rec, float ar, float ai, float gr, float gi,
                                                float (&P)[Rows][kPairs][2], float (&Q)[Rows][kPairs][2]) {
  float pr[kPairs], pi[kPairs];
#pragma unroll
  for (int q = 0; q < kPairs / 2; ++q) {
    const float4 v = rec[2 + q];
    pr[2 * q] = v.x;
    pi[2 * q] = v.y;
    pr[2 * q + 1] = v.z;
    pi[2 * q + 1] = v.w;
  }
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
#pragma unroll
    for (int j = 0; j < kPairs; ++j) {
      P[r][j][0] = fmaf(ar, pr[j], P[r][j][0]);
      P[r][j][1] = fmaf(ai, pr[j], P[r][j][1]);
      Q[r][j][0] = fmaf(ar, pi[j], Q[r][j][0]);
      Q[r][j][1] = fmaf(ai, pi[j], Q[r][j][1]);
    }
    if (r + 1 < Rows) rotate(ar, ai, gr, gi);
  }
}

// Stage samples [b, b + count) of the packed records into shared memory.
__device__ __forceinline__ void stage(float4 *tile, const float4 *samples, int b, int count) {
  __syncthreads(); // the previous tile is consumed
  const float4 *src = samples + static_cast<std::size_t>(b) * kTuned.record_float4;
  for (int q = threadIdx.x; q < count * kTuned.record_float4; q += kTuned.threads) tile[q] = src[q];
  __syncthreads();
}

// The same copy issued as cp.async (no registers, no wait): the caller commits and waits.
__device__ __forceinline__ void stage_async(float4 *tile, const float4 *samples, int b, int count) {
  const float4 *src = samples + static_cast<std::size_t>(b) * kTuned.record_float4;
  for (int q = threadIdx.x; q < count * kTuned.record_float4; q += kTuned.threads)
    __pipeline_memcpy_async(tile + q, src + q, sizeof(float4));
}

// Accumulate the `count` staged records of `tile` into the thread's 16 x Rows tile.
template <bool Pipelined, int Rows>
__device__ __forceinline__ void accumulate_staged(const float4 *tile, int count, float xc, float y0, float z,
                                                  float (&P)[Rows][kPairs][2], float (&Q)[Rows][kPairs][2]) {
  if constexpr (Pipelined) {
    float ar, ai, gr, gi;
    tile_base(tile, xc, y0, z, ar, ai, gr, gi);
    for (int s = 0; s < count; ++s) {
      const int next = min(s + 1, count - 1); // the last one recomputes itself, unused
      float nar, nai, ngr, ngi;
      tile_base(tile + next * kTuned.record_float4, xc, y0, z, nar, nai, ngr, ngi);
      tile_accumulate(tile + s * kTuned.record_float4, ar, ai, gr, gi, P, Q);
      ar = nar;
      ai = nai;
      gr = ngr;
      gi = ngi;
    }
  } else {
#pragma unroll 2
    for (int s = 0; s < count; ++s) {
      float ar, ai, gr, gi;
      tile_base(tile + s * kTuned.record_float4, xc, y0, z, ar, ai, gr, gi);
      tile_accumulate(tile + s * kTuned.record_float4, ar, ai, gr, gi, P, Q);
    }
  }
}

// Staging: Prefetch = false copies a tile, waits, computes (the load latency is exposed at every
// tile); Prefetch = true double-buffers with cp.async: tile i + 1 is in flight while tile i is
// summed.
template <int MinBlocks, bool Pipelined, bool Prefetch = false, int Rows = kTuned.tile_y>
__global__ void __launch_bounds__(kTuned.threads, MinBlocks) tuned_kernel(TunedArgs a) {
  constexpr int kTileFloat4 = kTuned.smem_samples * kTuned.record_float4;
  __shared__ float4 tile[(Prefetch ? 2 : 1) * kTileFloat4];
  const int tile_id = blockIdx.x * kTuned.threads + threadIdx.x;
  const bool active = tile_id < a.tiles;
  const int t = active ? tile_id : 0;
  const int bx = t % a.tiles_x;
  const int rest = t / a.tiles_x;
  const int by = rest % a.tiles_y;
  const int bz = rest / a.tiles_y;
  const int ix0 = bx * kTuned.tile_x, iy0 = by * Rows;
  const float xc = static_cast<float>(ix0 + a.g.x0) + 0.5f * (kTuned.tile_x - 1);
  const float y0 = static_cast<float>(iy0 + a.g.y0);
  const float z = static_cast<float>(bz + a.g.z0);

  const long long begin = (static_cast<long long>(a.pass) * a.splits + blockIdx.y) * a.per_block;
  const int b0 = static_cast<int>(min(begin, static_cast<long long>(a.m)));
  const int e0 = static_cast<int>(min(begin + a.per_block, static_cast<long long>(a.m)));

  float P[Rows][kPairs][2], Q[Rows][kPairs][2];
#pragma unroll
  for (int r = 0; r < Rows; ++r)
#pragma unroll
    for (int j = 0; j < kPairs; ++j) P[r][j][0] = P[r][j][1] = Q[r][j][0] = Q[r][j][1] = 0.f;

  if constexpr (Prefetch) {
    if (b0 < e0) stage_async(tile, a.samples, b0, min(kTuned.smem_samples, e0 - b0));
    __pipeline_commit();
    for (int b = b0, i = 0; b < e0; b += kTuned.smem_samples, ++i) {
      const int next = b + kTuned.smem_samples;
      // Its buffer was last read in iteration i - 1, which ended with a barrier.
      if (next < e0) stage_async(tile + ((i + 1) & 1) * kTileFloat4, a.samples, next, min(kTuned.smem_samples, e0 - next));
      __pipeline_commit();
      __pipeline_wait_prior(1); // tile i has landed (this thread's copies) ...
      __syncthreads();          // ... and every thread's
      accumulate_staged<Pipelined, Rows>(tile + (i & 1) * kTileFloat4, min(kTuned.smem_samples, e0 - b), xc, y0, z, P, Q);
      __syncthreads(); // tile i is consumed before iteration i + 1 prefetches into its buffer
    }
  } else {
    for (int b = b0; b < e0; b += kTuned.smem_samples) {
      const int count = min(kTuned.smem_samples, e0 - b);
      stage(tile, a.samples, b, count);
      accumulate_staged<Pipelined, Rows>(tile, count, xc, y0, z, P, Q);
    }
  }

  if (!active) return;
  float2 *acc = a.acc + static_cast<std::size_t>(blockIdx.y) * a.g.voxels;
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    const int iy = iy0 + r;
    if (iy >= a.g.ny) continue;
    const int row = (bz * a.g.ny + iy) * a.g.nx;
#pragma unroll
    for (int j = 0; j < kPairs; ++j)
      store_pair(acc + row, ix0 + kPairs + j, ix0 + kPairs - 1 - j, a.g.nx, P[r][j][0], P[r][j][1], Q[r][j][0],
                 Q[r][j][1], a.first);
  }
}

// Variant 4: one __sincosf per pair, kPairTileX voxels along x per thread sharing each staged
// sample (its phase base ty*y + tz*z and coefficient are loaded and formed once per sample).
constexpr int kPairTileX = 8;

template <int MinBlocks>
__global__ void __launch_bounds__(kTuned.threads, MinBlocks) sincos_pair_kernel(TunedArgs a) {
  __shared__ float4 tile[kTuned.smem_samples * kTuned.record_float4];
  const int tile_id = blockIdx.x * kTuned.threads + threadIdx.x;
  const bool active = tile_id < a.tiles;
  const int t = active ? tile_id : 0;
  const int bx = t % a.tiles_x;
  const int rest = t / a.tiles_x;
  const int iy = rest % a.tiles_y;
  const int iz = rest / a.tiles_y;
  const int ix0 = bx * kPairTileX;
  float xs[kPairTileX];
#pragma unroll
  for (int j = 0; j < kPairTileX; ++j) xs[j] = static_cast<float>(ix0 + j + a.g.x0);
  const float y = static_cast<float>(iy + a.g.y0);
  const float z = static_cast<float>(iz + a.g.z0);

  const long long begin = (static_cast<long long>(a.pass) * a.splits + blockIdx.y) * a.per_block;
  const int b0 = static_cast<int>(min(begin, static_cast<long long>(a.m)));
  const int e0 = static_cast<int>(min(begin + a.per_block, static_cast<long long>(a.m)));

  float re[kPairTileX] = {}, im[kPairTileX] = {};
  for (int b = b0; b < e0; b += kTuned.smem_samples) {
    const int count = min(kTuned.smem_samples, e0 - b);
    stage(tile, a.samples, b, count);
#pragma unroll 2
    for (int s = 0; s < count; ++s) {
      const float4 r0 = tile[s * kTuned.record_float4], r1 = tile[s * kTuned.record_float4 + 1];
      const float base = fmaf(r0.y, y, r0.z * z);
#pragma unroll
      for (int j = 0; j < kPairTileX; ++j) {
        float sn, cs;
        __sincosf(kTwoPi * reduce_turns(fmaf(r0.x, xs[j], base)), &sn, &cs);
        re[j] = fmaf(r0.w, cs, fmaf(-r1.x, sn, re[j]));
        im[j] = fmaf(r0.w, sn, fmaf(r1.x, cs, im[j]));
      }
    }
  }

  if (!active) return;
  float2 *acc = a.acc + static_cast<std::size_t>(blockIdx.y) * a.g.voxels + (iz * a.g.ny + iy) * a.g.nx;
#pragma unroll
  for (int j = 0; j < kPairTileX; ++j) {
    if (ix0 + j >= a.g.nx) break;
    float2 &o = acc[ix0 + j];
    o = a.first ? make_float2(re[j], im[j]) : make_float2(o.x + re[j], o.y + im[j]);
  }
}

// Variants 9, 10: the symmetric sums of variant 0 as a matrix product on the tensor cores. For
// the row segments n of 16 voxels centred at xc_n (one per warp column) and the samples m,
//     P_j(n) = sum_m Re(p_j(m)) a_m(n),   Q_j(n) = sum_m Im(p_j(m)) a_m(n)
// is A (16 x M: the rows Re p_0..7, Im p_0..7, real) times B (M x 8 columns: a_m(n), complex),
// i.e. two real products (Re a, Im a) per m16n8k8 step of 8 samples: the 2 FMAs per pair of
// variant 0, issued as 1024-pair MMAs. A warp's 8 columns are Segments segments of 16 voxels
// side by side along x times 8 / Segments groups of Rows rows; a lane forms B for its column
// g = lane / 4 and samples t, t + 4 (t = lane % 4): one __sincosf each, then the row recurrence
// a <- a e(ty). A is per sample only (no voxel in it), packed once in double and stored in the
// MMA's fragment order.
// Precision: TF32 keeps 10 mantissa bits, so each operand is split x = hi + lo and the product is
// hi*hi + hi*lo + lo*hi (3xTF32, ~2^-22 relative per product, as float32 FMAs). The MMA adds
// into its accumulator with truncation, which is biased: a chain of kTensorChain steps is added
// into float registers by ordinary rounded adds before it grows long.
constexpr int kTensorColumns = 8;                               // segments per warp tile (the MMA's N)
constexpr int kTensorGroup = 8;                                 // samples per MMA step (its K)
constexpr int kTensorFragFloat4 = 2 * 32;                       // per group: A's hi and lo fragments per lane
constexpr int kTensorGroupFloat4 = kTensorFragFloat4 + 2 * kTensorGroup; // + the samples' 2-float4 records
constexpr int kTensorChain = 8;                                 // MMA steps per truncating chain (64 samples)

// Group q of 8 samples: [0, 64) lane L's A fragment, hi then lo (mma_1688_tf32's layout: with
// g = L / 4 and t = L % 4, {Re p_g, Im p_g} of samples t and t + 4); [64, 80) the records of its
// samples as variant 0's first two float4 ({tx ty tz c.re}, {c.im g.re g.im 0}). Samples past m
// are zeros (c = 0: they add nothing).
__global__ void tensor_pack_kernel(const KPoint *__restrict__ k, const float2 *__restrict__ c, int m, double sx,
                                   double sy, double sz, int groups, float4 *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int q = i / 32, lane = i % 32;
  if (q >= groups) return;
  const int g = lane >> 2, t = lane & 3;
  float4 *group = out + static_cast<std::size_t>(q) * kTensorGroupFloat4;
  Tf32Pair frag[4];
  for (int h = 0; h < 2; ++h) {
    const int s = q * kTensorGroup + t + 4 * h;
    double sn, cs;
    sincospi(2.0 * (s < m ? k[s].kx * sx : 0.0) * (g + 0.5), &sn, &cs);
    frag[2 * h] = split_tf32(static_cast<float>(cs));
    frag[2 * h + 1] = split_tf32(static_cast<float>(sn));
  }
  // {A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]} = {Re p_g(t), Im p_g(t), Re p_g(t+4), Im p_g(t+4)}
  group[2 * lane] = make_float4(__uint_as_float(frag[0].hi), __uint_as_float(frag[1].hi),
                                __uint_as_float(frag[2].hi), __uint_as_float(frag[3].hi));
  group[2 * lane + 1] = make_float4(__uint_as_float(frag[0].lo), __uint_as_float(frag[1].lo),
                                    __uint_as_float(frag[2].lo), __uint_as_float(frag[3].lo));
  if (lane >= kTensorGroup) return;
  const int s = q * kTensorGroup + lane;
  float4 *rec = group + kTensorFragFloat4 + 2 * lane;
  if (s >= m) {
    rec[0] = make_float4(0.f, 0.f, 0.f, 0.f);
    rec[1] = make_float4(0.f, 1.f, 0.f, 0.f);
    return;
  }
  const KPoint p = k[s];
  const float2 v = c[s];
  const double ty = p.ky * sy;
  double gs, gc;
  sincospi(2.0 * ty, &gs, &gc);
  rec[0] = make_float4(static_cast<float>(p.kx * sx), static_cast<float>(ty), static_cast<float>(p.kz * sz), v.x);
  rec[1] = make_float4(v.y, static_cast<float>(gc), static_cast<float>(gs), 0.f);
}

// The 3xTF32 product of one step into one accumulator: lo terms first, the large one last.
__device__ __forceinline__ void mma_3xtf32(float (&acc)[4], const std::uint32_t (&ahi)[4],
                                           const std::uint32_t (&alo)[4], Tf32Pair b0, Tf32Pair b1) {
  mma_1688_tf32(acc, alo, b0.hi, b1.hi);
  mma_1688_tf32(acc, ahi, b0.lo, b1.lo);
  mma_1688_tf32(acc, ahi, b0.hi, b1.hi);
}

template <int Rows> __device__ __forceinline__ void add_chain(float (&sum)[Rows][2][4], float (&chain)[Rows][2][4]) {
#pragma unroll
  for (int r = 0; r < Rows; ++r)
#pragma unroll
    for (int p = 0; p < 2; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        sum[r][p][e] += chain[r][p][e];
        chain[r][p][e] = 0.f;
      }
}

// x = hi + lo for 3xTF32 in two full-rate instructions: hi keeps the top 10 mantissa bits
// (truncated: lo = x - hi is then exact and carries the rest), lo goes in as it is -- the MMA
// reads its top 10 mantissa bits, so lo loses below 2^-21 of x.
__device__ __forceinline__ Tf32Pair split_fast(float x) {
  const std::uint32_t hi = __float_as_uint(x) & 0xffffe000u;
  return {hi, __float_as_uint(x - __uint_as_float(hi))};
}

// The warp's 8 MMA columns: Segments segments of 16 voxels side by side along x, times
// 8 / Segments groups of Rows rows along y (Segments = 4 for grids 64 wide).
// What a lane reads of one group: its A fragment (hi, lo) and the records of its samples t, t + 4.
struct TensorGroup {
  float4 hi, lo;
  float4 rec[4];
};
__device__ __forceinline__ TensorGroup load_group(const float4 *samples, int b, int lane) {
  const float4 *group = samples + static_cast<std::size_t>(b / kTensorGroup) * kTensorGroupFloat4;
  const float4 *rec = group + kTensorFragFloat4 + 2 * (lane & 3);
  return {__ldg(group + 2 * lane), __ldg(group + 2 * lane + 1),
          {__ldg(rec), __ldg(rec + 1), __ldg(rec + 8), __ldg(rec + 9)}};
}

template <int Rows, int Segments, int MinBlocks, bool Prefetch = false>
__global__ void __launch_bounds__(kTuned.threads, MinBlocks) tensor_kernel(TunedArgs a) {
  constexpr int kWarps = kTuned.threads / 32;
  constexpr int kTileRows = Rows * (kTensorColumns / Segments);
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int tile_id = blockIdx.x * kWarps + static_cast<int>(threadIdx.x >> 5);
  if (tile_id >= a.tiles) return; // the whole warp (mma.sync needs all its lanes); no barrier below
  const int bx = tile_id % a.tiles_x;
  const int rest = tile_id / a.tiles_x;
  const int by = rest % a.tiles_y;
  const int bz = rest / a.tiles_y;
  const int ix0 = bx * kTuned.tile_x * Segments, iy0 = by * kTileRows;
  // This lane's B column g: segment g % Segments, rows from (g / Segments) Rows.
  const float xc = static_cast<float>(ix0 + kTuned.tile_x * (g % Segments) + a.g.x0) + 0.5f * (kTuned.tile_x - 1);
  const float y0 = static_cast<float>(iy0 + (g / Segments) * Rows + a.g.y0);
  const float z = static_cast<float>(bz + a.g.z0);

  const long long begin = (static_cast<long long>(a.pass) * a.splits + blockIdx.y) * a.per_block;
  const int b0 = static_cast<int>(min(begin, static_cast<long long>(a.m)));
  const int e0 = static_cast<int>(min(begin + a.per_block, static_cast<long long>(a.m)));

  float chain[Rows][2][4] = {}, sum[Rows][2][4] = {}; // [row][Re a, Im a][C fragment]
  int steps = 0;
  TensorGroup next;
  if (Prefetch && b0 < e0) next = load_group(a.samples, b0, lane);
  for (int b = b0; b < e0; b += kTensorGroup) {
    const TensorGroup cur = Prefetch ? next : load_group(a.samples, b, lane);
    if (Prefetch && b + kTensorGroup < e0) next = load_group(a.samples, b + kTensorGroup, lane); // in flight during the MMAs
    const std::uint32_t ahi[4] = {__float_as_uint(cur.hi.x), __float_as_uint(cur.hi.y), __float_as_uint(cur.hi.z),
                                  __float_as_uint(cur.hi.w)};
    const std::uint32_t alo[4] = {__float_as_uint(cur.lo.x), __float_as_uint(cur.lo.y), __float_as_uint(cur.lo.z),
                                  __float_as_uint(cur.lo.w)};
    float ar0, ai0, gr0, gi0, ar1, ai1, gr1, gi1;
    tile_base(cur.rec, xc, y0, z, ar0, ai0, gr0, gi0);
    tile_base(cur.rec + 2, xc, y0, z, ar1, ai1, gr1, gi1);
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      mma_3xtf32(chain[r][0], ahi, alo, split_fast(ar0), split_fast(ar1));
      mma_3xtf32(chain[r][1], ahi, alo, split_fast(ai0), split_fast(ai1));
      if (r + 1 < Rows) {
        rotate(ar0, ai0, gr0, gi0);
        rotate(ar1, ai1, gr1, gi1);
      }
    }
    if (++steps == kTensorChain) {
      add_chain(sum, chain);
      steps = 0;
    }
  }
  add_chain(sum, chain);

  float2 *acc = a.acc + static_cast<std::size_t>(blockIdx.y) * a.g.voxels;
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) { // the lane's C columns n = 2t, 2t + 1 and its rows g, g + 8: j = g
      const int n = 2 * t + h;
      const int iy = iy0 + (n / Segments) * Rows + r;
      if (iy >= a.g.ny) continue;
      const int row = (bz * a.g.ny + iy) * a.g.nx;
      const int segment = ix0 + kTuned.tile_x * (n % Segments);
      store_pair(acc + row, segment + kPairs + g, segment + kPairs - 1 - g, a.g.nx, sum[r][0][h], sum[r][1][h],
                 sum[r][0][2 + h], sum[r][1][2 + h], a.first);
    }
  }
}

// out[n] = sum over splits s (in order) of partials[s][n].
__global__ void tuned_reduce_kernel(const float2 *__restrict__ partials, int splits, int voxels,
                                    float2 *__restrict__ out) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= voxels) return;
  float re = 0.f, im = 0.f;
  for (int s = 0; s < splits; ++s) {
    const float2 v = partials[static_cast<std::size_t>(s) * voxels + n];
    re += v.x;
    im += v.y;
  }
  out[n] = make_float2(re, im);
}

// Who owns a tile: a thread (variants 0-8: 6-float4 records per sample) or a warp (the tensor-core
// variants: 80-float4 records per group of 8 samples, sample ranges in whole groups).
enum class TileOwner { Thread, Warp };

struct TunedVariant {
  const char *name;
  void (*kernel)(TunedArgs);
  int tile_x, tile_y;
  TileOwner owner = TileOwner::Thread;
};

const TunedVariant kVariants[] = {
    {"symmetric-16x4", tuned_kernel<2, false>, kTuned.tile_x, kTuned.tile_y},
    {"symmetric-16x4-occ3", tuned_kernel<3, false>, kTuned.tile_x, kTuned.tile_y},
    {"symmetric-16x4-pipelined", tuned_kernel<2, true>, kTuned.tile_x, kTuned.tile_y},
    {"symmetric-16x4-pipelined-occ3", tuned_kernel<3, true>, kTuned.tile_x, kTuned.tile_y},
    {"sincos-per-pair-8x1", sincos_pair_kernel<4>, kPairTileX, 1},
    {"symmetric-16x4-occ3-prefetch", tuned_kernel<3, false, true>, kTuned.tile_x, kTuned.tile_y},
    {"symmetric-16x4-pipelined-occ3-prefetch", tuned_kernel<3, true, true>, kTuned.tile_x, kTuned.tile_y},
    {"symmetric-16x3-occ4", tuned_kernel<4, false, false, 3>, kTuned.tile_x, 3},
    {"symmetric-16x3-pipelined-occ4-prefetch", tuned_kernel<4, true, true, 3>, kTuned.tile_x, 3},
    {"tensor-3xtf32-128x4", tensor_kernel<4, 8, 4>, 128, 4, TileOwner::Warp},
    {"tensor-3xtf32-128x2", tensor_kernel<2, 8, 5>, 128, 2, TileOwner::Warp},
    {"tensor-3xtf32-64x8", tensor_kernel<4, 4, 4>, 64, 8, TileOwner::Warp},
    {"tensor-3xtf32-64x4", tensor_kernel<2, 4, 5>, 64, 4, TileOwner::Warp},
    {"tensor-3xtf32-64x8-prefetch", tensor_kernel<4, 4, 4, true>, 64, 8, TileOwner::Warp},
};
constexpr int kVariantCount = static_cast<int>(sizeof(kVariants) / sizeof(kVariants[0]));

// How many parts (blockIdx.y) the sample range is cut into. Each pass launches blocks_x x
// splits blocks; a launch whose blocks fill ceil(blocks / capacity) waves with the last one
// partly empty wastes the rest of that wave (the one-sincos-per-pair variant on FHD-3D-L:
// 2048 blocks on 792 slots = 2.59 waves, 14% idle), and a partial last pass wastes likewise.
// The cost model: sum over passes of ceil(active blocks / capacity) x the longest block's
// samples, minimised over the split count (fewer splits, less partial-image traffic, unless
// more saves at least 1%). Blocks are assumed to take time proportional to their samples.
int choose_splits(int m, int blocks_x, int capacity) {
  const int max_splits = std::max(
      1, std::min(blocks_for(m, kTuned.smem_samples), std::max(16, kTuned.max_waves * capacity / blocks_x + 1)));
  int best = 1;
  double best_cost = 0;
  for (int s = 1; s <= max_splits; ++s) {
    const long long per_block = std::min(kTuned.pass_samples, blocks_for(m, s));
    const long long per_pass = s * per_block;
    double cost = 0;
    for (long long begin = 0; begin < m; begin += per_pass) {
      const long long left = m - begin;
      const long long active = std::min<long long>(s, (left + per_block - 1) / per_block);
      const double waves = std::ceil(static_cast<double>(active * blocks_x) / capacity);
      cost += waves * static_cast<double>(std::min(per_block, left));
    }
    if (s == 1 || cost < 0.99 * best_cost) {
      best = s;
      best_cost = cost;
    }
  }
  return best;
}

// The records the variants of `owner` read, packed from the trajectory and c (in ws.tuned).
const float4 *pack_records(const PlanState &plan, const float2 *c, TileOwner owner) {
  const double *ip = plan.inv_period;
  if (owner == TileOwner::Thread) {
    float4 *records = plan.ws->tuned.grow(static_cast<std::size_t>(plan.m) * kTuned.record_float4);
    tuned_pack_kernel<<<blocks_for(plan.m, 128), 128, 0, plan.stream>>>(plan.k, c, plan.m, ip[0], ip[1], ip[2],
                                                                         records);
    MRI_CUDA_CHECK_LAUNCH("tuned_pack_kernel");
    return records;
  }
  const int groups = blocks_for(plan.m, kTensorGroup);
  float4 *records = plan.ws->tuned.grow(static_cast<std::size_t>(groups) * kTensorGroupFloat4);
  tensor_pack_kernel<<<blocks_for(32LL * groups, 128), 128, 0, plan.stream>>>(plan.k, c, plan.m, ip[0], ip[1], ip[2],
                                                                               groups, records);
  MRI_CUDA_CHECK_LAUNCH("tensor_pack_kernel");
  return records;
}

void run_tuned(const PlanState &plan, const float2 *c, float2 *out, int variant) {
  const TunedVariant &v = kVariants[variant];
  Workspace &ws = *plan.ws;
  const bool warp_tiles = v.owner == TileOwner::Warp;
  const int granule = warp_tiles ? kTensorGroup : 1;
  const int m = blocks_for(plan.m, granule) * granule; // the samples the kernel walks, padding included
  TunedArgs a{};
  a.samples = pack_records(plan, c, v.owner);
  a.m = m;
  a.g = plan.out;
  a.tiles_x = (plan.out.nx + v.tile_x - 1) / v.tile_x;
  a.tiles_y = (plan.out.ny + v.tile_y - 1) / v.tile_y;
  a.tiles = a.tiles_x * a.tiles_y * plan.out.nz;
  const int blocks_x = blocks_for(a.tiles, warp_tiles ? kTuned.threads / 32 : kTuned.threads);

  static int per_sm[kVariantCount] = {}; // one kernel per variant: the answer never changes
  if (per_sm[variant] == 0)
    MRI_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm[variant], v.kernel, kTuned.threads, 0));
  const int capacity = std::max(1, per_sm[variant]) * plan.multiprocessors;
  const int splits = choose_splits(m, blocks_x, capacity);
  a.splits = splits;
  a.per_block = blocks_for(std::min(kTuned.pass_samples, blocks_for(m, splits)), granule) * granule;
  const long long per_pass = static_cast<long long>(splits) * a.per_block;
  const int passes = static_cast<int>((m + per_pass - 1) / per_pass);
  const std::size_t voxels = static_cast<std::size_t>(plan.out.voxels);
  a.acc = splits == 1 ? out : ws.partials.grow(static_cast<std::size_t>(splits) * voxels);

  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(splits));
  for (int pass = 0; pass < passes; ++pass) {
    a.pass = pass;
    a.first = pass == 0;
    v.kernel<<<grid, kTuned.threads, 0, plan.stream>>>(a);
    MRI_CUDA_CHECK_LAUNCH("tuned_kernel");
  }
  if (splits > 1) {
    tuned_reduce_kernel<<<blocks_for(plan.out.voxels, 256), 256, 0, plan.stream>>>(a.acc, splits, plan.out.voxels, out);
    MRI_CUDA_CHECK_LAUNCH("tuned_reduce_kernel");
  }
}

} // namespace

int tuned_variant_count() { return kVariantCount; }
int tuned_default_variant() { return kTunedDefault; }

const char *tuned_variant_name(int variant) {
  return variant >= 0 && variant < kVariantCount ? kVariants[variant].name : "?";
}

void FhdPlan::adjoint_device_tuned_variant(int variant, const cfloat *c_dev, cfloat *result_dev) {
  require_resident(*impl_, "adjoint_device_tuned_variant");
  if (variant < 0 || variant >= kVariantCount)
    mri::detail::invalid_argument("tuned variant", variant, "out of range");
  run_tuned(impl_->state, reinterpret_cast<const float2 *>(c_dev), reinterpret_cast<float2 *>(result_dev), variant);
}

template <> void run_adjoint<KernelPolicy::Tuned>(const PlanState &plan, const float2 *c, float2 *out) {
  run_tuned(plan, c, out, kTunedDefault);
}

} // namespace mri::cuda::detail
