// The Toeplitz spectrum of the exact Q on the tensor cores (ours, beyond the F^H D stages of
// Stone et al. 2008; docs/architecture.md).
//
// The exact Q costs N_2x * M complex terms (the 2x grid, halved by Hermitian symmetry), four
// times F^H D, and the FFT that follows throws away all but its real part. With the offsets
// symmetric (|d_a| <= n_a - 1, the ones the crop uses) the spectrum is a sum of separable real
// Dirichlet kernels (see dirichlet_spectrum.cuh):
//   K(fx, fy, fz) = (1/L) sum_m X_m(fx) Y_m(fy) Z_m(fz),
// a product of X (L_x x M) with the Khatri-Rao product of Y and w Z (M x L_y L_z): a real GEMM
// whose second operand is never stored (each element is one multiply of two table entries).
//
// Precision: the tables are computed in double (sinpi) and the products carried as float16
// pairs hi + lo (hi = fp16(v), lo = fp16(v - hi): 22 significant bits), so that
//   x * b = x_hi b_hi + x_hi b_lo + x_lo b_hi   (+ x_lo b_lo ~ 2^-22 |x b|, dropped)
// is three mma.sync m16n8k16 with float accumulation: float32-class accuracy at the float16
// tensor rate. Values are scaled into float16's normal range (|v| <= 2^15); entries so small that
// their lo part is subnormal contribute below 2^-25 of the largest term. The tensor cores add
// with truncation, so the accumulators are flushed every kTile.flush_stages stages into float
// sums in shared memory (rounded adds); a block's sums are added atomically into K. The flush
// interval is set by the CG's result, not by the spectrum's L2 error: the truncation's bias, not
// its size, moves the CG iterates, so a chain short enough that RECON-3D's unregularised CG ends
// at the PSNR of Q by the Tuned kernel is the rule (128 samples: 24 truncating adds), chosen by
// bench_recon_gpu RECON-3D and the [dirichlet] GPU tests (docs/history.md, Q's spectrum on the
// tensor cores).
//
// Work split: a block owns 64 fx x 32 fy x 8 fz frequencies and a chunk of samples (part of one
// on small grids, to fill the GPU); its 8 warps own one fz plane each (64 fx x 32 fy = 4 m16
// tiles x 4 n8 tiles: 64 float accumulators per thread, 127 registers, and 64 float sums per
// thread in shared memory: 64 KiB per block), two blocks per multiprocessor: the sum is
// latency-bound, and 16 warps per multiprocessor hide more of it than one block of 8 warps of
// 64 x 32 x 2 or 128 x 32 x 1 (tuned by bench_recon_gpu, RECON-3D's Q, against the mma.sync
// ceiling of measure_hmma_throughput: q_frac_of_mma_ceiling).
// Samples are staged 32 at a time through shared memory (cp.async, double-buffered): X's hi/lo
// rows, Y rows and Z rows of the block's frequencies.
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "dirichlet_spectrum.cuh"
#include "fhd_plan.cuh"
#include "mma_sync.cuh"
#include "mri/error.hpp"
#include "mri_backend/tuning.hpp"

namespace mri::cuda::detail {
namespace {

inline constexpr auto kTile = mri::detail::tuning::Gpu::dirichlet; // tile shape: the tuning table

// Shared-memory rows: 32 samples (16 words of float16 pairs, 16 float2) plus 4 words / float2
// of padding, so that the 8 fragment rows a warp reads fall in distinct banks.
constexpr int kRowWords = 20;
struct alignas(16) Stage {
  std::uint32_t xhi[kTile.fx][kRowWords];
  std::uint32_t xlo[kTile.fx][kRowWords];
  float2 y[kTile.fy][kRowWords];
  float2 z[kTile.fz][kRowWords];
};
constexpr int kMt = kTile.fx / 16;              // m16 tiles per warp (fx)
constexpr int kJy = kTile.fy / 8;               // n8 tiles per warp along fy
constexpr int kIz = kTile.fz / (kTile.threads / 32); // fz planes per warp
constexpr int kFragments = kMt * kJy * kIz;     // 4 accumulators each

// The normalised Dirichlet kernel D_n(t) / (2n - 1) = sin(pi (2n-1) t) / ((2n-1) sin(pi t)),
// in double, on t reduced to [-1/2, 1/2] (both sines change sign together with t's integer
// part). (Float sinpif on reduced arguments would not pay: the tables are a few percent of the
// time, the tensor-core sum the rest.)
__device__ double dirichlet(int n, double t) {
  const double d = t - rint(t);
  const double odd = 2.0 * n - 1.0;
  if (fabs(d) < 1e-12) return 1.0;
  return sinpi(odd * d) / (odd * sinpi(d));
}

struct TableArgs {
  const KPoint *k;
  const float *w;
  double inv_w_max;
  long long begin; // first sample of the chunk
  int count;       // samples in the chunk
  int cols;        // table row length (count rounded up to the stage)
  int n[3], l[3], rows[3]; // extents, doubled extents, rows (doubled rounded up to the block)
  __half *xhi, *xlo;
  float *y, *z;
};

// One thread per (table row, sample): X as float16 hi/lo, Y scaled, Z weighted. Rows past the
// doubled extent and samples past the chunk are zero (they add nothing).
__global__ void dirichlet_tables_kernel(TableArgs a) {
  const long long total = static_cast<long long>(a.rows[0] + a.rows[1] + a.rows[2]) * a.cols;
  const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= total) return;
  const int col = static_cast<int>(idx % a.cols);
  int row = static_cast<int>(idx / a.cols);
  int axis = 0;
  while (row >= a.rows[axis]) row -= a.rows[axis++];
  double v = 0.0;
  if (col < a.count && row < a.l[axis]) {
    const KPoint p = a.k[a.begin + col];
    const double kc = axis == 0 ? p.kx : axis == 1 ? p.ky : p.kz;
    v = dirichlet(a.n[axis], kc / a.n[axis] - static_cast<double>(row) / a.l[axis]);
    if (axis == 2) v *= (a.w ? a.w[a.begin + col] : 1.0) * a.inv_w_max;
  }
  const long long at = static_cast<long long>(row) * a.cols + col;
  if (axis == 0) {
    const double s = v * kTile.scale;
    const __half hi = __double2half(s);
    a.xhi[at] = hi;
    a.xlo[at] = __double2half(s - static_cast<double>(__half2float(hi)));
  } else if (axis == 1) {
    a.y[at] = static_cast<float>(v * kTile.scale);
  } else {
    a.z[at] = static_cast<float>(v);
  }
}

struct MmaArgs {
  const __half *xhi, *xlo;
  const float *y, *z;
  int cols;                 // table row length
  int stages_per_block;     // stages each block (blockIdx.y) of a frequency block sums
  int blocks[3];            // blocks along x, y, z (z: over the planes computed)
  int l[3];                 // doubled extents
  int fz_first, fz_end;     // the fz planes computed, [fz_first, fz_end); kernel holds them only
  float scale;              // accumulator -> K
  float *kernel;
};

__device__ __forceinline__ std::uint32_t as_u32(__half2 h) { return *reinterpret_cast<std::uint32_t *>(&h); }

// v = hi + lo as float16 pairs (both elements of a float2).
__device__ __forceinline__ void split(float2 v, std::uint32_t &hi, std::uint32_t &lo) {
  const __half2 h = __float22half2_rn(v);
  const float2 back = __half22float2(h);
  hi = as_u32(h);
  lo = as_u32(__float22half2_rn(make_float2(v.x - back.x, v.y - back.y)));
}

// Copy one stage (32 samples from column c0) of the block's table rows into shared memory:
// 16-byte chunks, X hi and lo rows 4 each, Y and Z rows 8 each.
__device__ __forceinline__ void load_stage(Stage &st, const MmaArgs &a, int fx0, int fy0, int fz0, int c0) {
  constexpr int kX = 2 * kTile.fx * 4, kY = kTile.fy * 8, kZ = kTile.fz * 8;
  for (int q = threadIdx.x; q < kX + kY + kZ; q += kTile.threads) {
    if (q < kX) {
      const bool lo = q >= kX / 2;
      const int r = (q % (kX / 2)) >> 2, c = q & 3;
      const __half *src = (lo ? a.xlo : a.xhi) + static_cast<long long>(fx0 + r) * a.cols + c0 + 8 * c;
      __pipeline_memcpy_async(&(lo ? st.xlo : st.xhi)[r][4 * c], src, 16);
    } else {
      const bool zrow = q >= kX + kY;
      const int r = (q - (zrow ? kX + kY : kX)) >> 3, c = q & 7;
      const float *src = (zrow ? a.z + static_cast<long long>(fz0 + r) * a.cols
                               : a.y + static_cast<long long>(fy0 + r) * a.cols) + c0 + 4 * c;
      __pipeline_memcpy_async(&(zrow ? st.z : st.y)[r][2 * c], src, 16);
    }
  }
}

// The m16 x k16 A fragment of mma.m16n8k16 (row-major) from four 8 x 8 matrices in shared memory.
__device__ __forceinline__ void load_a(const std::uint32_t *row, std::uint32_t (&a)[4]) {
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr));
}

// A warp's fx x fy x kIz sums over one staged k16 step (column half `h` of 0, 1).
__device__ __forceinline__ void mma_step(const Stage &st, int h, int warp, int g, int t,
                                         float (&acc)[kMt][kJy][kIz][4]) {
  const int w0 = 8 * h + t, w1 = w0 + 4; // words of samples (2t, 2t+1) and (2t+8, 2t+9)
  // A (X hi and lo) by ldmatrix: lane l gives the address of row l % 16, samples 8 (l / 16) on.
  std::uint32_t ahi[kMt][4], alo[kMt][4];
  const int lane = 4 * g + t, a_row = lane & 15, a_word = 8 * h + 4 * (lane >> 4);
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) {
    load_a(&st.xhi[16 * mt + a_row][a_word], ahi[mt]);
    load_a(&st.xlo[16 * mt + a_row][a_word], alo[mt]);
  }
  float2 z0[kIz], z1[kIz];
#pragma unroll
  for (int i = 0; i < kIz; ++i) {
    z0[i] = st.z[kIz * warp + i][w0];
    z1[i] = st.z[kIz * warp + i][w1];
  }
#pragma unroll
  for (int jy = 0; jy < kJy; ++jy) {
    const float2 y0 = st.y[8 * jy + g][w0], y1 = st.y[8 * jy + g][w1];
    std::uint32_t bhi[kIz][2], blo[kIz][2];
#pragma unroll
    for (int i = 0; i < kIz; ++i) {
      split(make_float2(y0.x * z0[i].x, y0.y * z0[i].y), bhi[i][0], blo[i][0]);
      split(make_float2(y1.x * z1[i].x, y1.y * z1[i].y), bhi[i][1], blo[i][1]);
    }
    // Term-major order: kMt * kIz independent accumulators between two adds to the same one.
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int i = 0; i < kIz; ++i) mma_16816(acc[mt][jy][i], ahi[mt], bhi[i][0], bhi[i][1]);
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int i = 0; i < kIz; ++i) mma_16816(acc[mt][jy][i], ahi[mt], blo[i][0], blo[i][1]);
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int i = 0; i < kIz; ++i) mma_16816(acc[mt][jy][i], alo[mt], bhi[i][0], bhi[i][1]);
  }
}

constexpr std::size_t kSumsBytes = sizeof(float4) * kFragments * kTile.threads;
constexpr std::size_t kSmemBytes = 2 * sizeof(Stage) + kSumsBytes;
static_assert(sizeof(Stage) % sizeof(float4) == 0, "the sums follow the stages, 16-byte aligned");

// f(fragment accumulators, this thread's float4 sum of that fragment) for each of the warp's
// kMt x kJy x kIz fragments, with its (mt, jy, i).
template <class F> __device__ __forceinline__ void for_each_fragment(float (&acc)[kMt][kJy][kIz][4], float4 *sums, F f) {
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
    for (int jy = 0; jy < kJy; ++jy)
#pragma unroll
      for (int i = 0; i < kIz; ++i) f(acc[mt][jy][i], sums[((mt * kJy + jy) * kIz + i) * kTile.threads + threadIdx.x], mt, jy, i);
}

// sums[fragment][thread] += acc[fragment] (rounded float adds, 16-byte accesses: a warp's are
// consecutive), acc = 0.
__device__ __forceinline__ void flush(float (&acc)[kMt][kJy][kIz][4], float4 *sums) {
  for_each_fragment(acc, sums, [](float(&c)[4], float4 &s, int, int, int) {
    s = make_float4(s.x + c[0], s.y + c[1], s.z + c[2], s.w + c[3]);
    c[0] = c[1] = c[2] = c[3] = 0.f;
  });
}

__global__ void __launch_bounds__(kTile.threads, 2) dirichlet_mma_kernel(MmaArgs a) {
  extern __shared__ float4 dynamic_smem[]; // two stages, then the sums: kSmemBytes
  Stage *stages = reinterpret_cast<Stage *>(dynamic_smem);
  float4 *sums = dynamic_smem + 2 * sizeof(Stage) / sizeof(float4);
  const int block = blockIdx.x;
  const int bx = block % a.blocks[0], by = (block / a.blocks[0]) % a.blocks[1], bz = block / (a.blocks[0] * a.blocks[1]);
  const int fx0 = bx * kTile.fx, fy0 = by * kTile.fy, fz0 = a.fz_first + bz * kTile.fz;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;

  const int s_begin = blockIdx.y * a.stages_per_block;
  const int s_end = min(s_begin + a.stages_per_block, a.cols / kTile.stage);
  float acc[kMt][kJy][kIz][4] = {};
  for (int f = 0; f < kFragments; ++f) sums[f * kTile.threads + threadIdx.x] = make_float4(0.f, 0.f, 0.f, 0.f);
  if (s_begin < s_end) load_stage(stages[0], a, fx0, fy0, fz0, s_begin * kTile.stage);
  __pipeline_commit();
  for (int s = s_begin, i = 0; s < s_end; ++s, ++i) {
    // Its buffer was last read in iteration i - 1, which ended with a barrier.
    if (s + 1 < s_end) load_stage(stages[(i + 1) & 1], a, fx0, fy0, fz0, (s + 1) * kTile.stage);
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();
    mma_step(stages[i & 1], 0, warp, g, t, acc);
    mma_step(stages[i & 1], 1, warp, g, t, acc);
    if ((i + 1) % kTile.flush_stages == 0) flush(acc, sums);
    __syncthreads();
  }
  flush(acc, sums);

  // C fragment: (row g, cols 2t, 2t+1) and (row g + 8, same cols); rows are fx, cols fy.
  for_each_fragment(acc, sums, [&](float(&)[4], float4 &v, int mt, int jy, int i) {
    const float c[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int fx = fx0 + 16 * mt + g + (e >= 2 ? 8 : 0);
      const int fy = fy0 + 8 * jy + 2 * t + (e & 1);
      const int fz = fz0 + kIz * warp + i;
      if (fx < a.l[0] && fy < a.l[1] && fz < a.fz_end)
        atomicAdd(a.kernel + fx + static_cast<long long>(a.l[0]) * (fy + static_cast<long long>(a.l[1]) * (fz - a.fz_first)),
                  c[e] * a.scale);
    }
  });
}

int round_up(long long v, int to) { return static_cast<int>((v + to - 1) / to * to); }

} // namespace

bool dirichlet_spectrum_applies(const Grid &grid) { return grid.nx() > 1 && grid.ny() > 1 && grid.nz() > 1; }

std::size_t dirichlet_spectrum_bytes(const Grid &grid) {
  const Grid l = grid.doubled();
  const auto rows = static_cast<std::size_t>(round_up(l.nx(), kTile.fx) + round_up(l.ny(), kTile.fy) +
                                             round_up(l.nz(), kTile.fz));
  return 2 * rows * static_cast<std::size_t>(kTile.chunk) * 4; // two lanes; 2 halves (X) or a float per entry
}

void dirichlet_spectrum(const KPoint *k, const float *w, std::size_t m, double w_max, const Grid &grid, float *kernel,
                        cudaStream_t stream) {
  dirichlet_spectrum_planes(k, w, m, w_max, grid, 0, static_cast<int>(grid.doubled().nz()), kernel, stream);
}

int dirichlet_spectrum_plane_block() { return kTile.fz; }

void dirichlet_spectrum_planes(const KPoint *k, const float *w, std::size_t m, double w_max, const Grid &grid,
                               int first, int count, float *kernel, cudaStream_t stream) {
  if (!dirichlet_spectrum_applies(grid))
    mri::detail::invalid_argument("grid", std::to_string(grid.nx()) + "x" + std::to_string(grid.ny()) + "x" +
                                              std::to_string(grid.nz()),
                                  "needs three axes of extent > 1 (the Dirichlet spectrum)");
  if (!(w_max > 0.0) || !std::isfinite(w_max)) mri::detail::invalid_argument("w_max", w_max, "must be finite and > 0");
  const Grid doubled = grid.doubled();
  if (first < 0 || first % kTile.fz != 0 || count < 1 || first + count > doubled.nz())
    mri::detail::invalid_argument("planes", std::to_string(first) + " + " + std::to_string(count),
                                  "must start at a multiple of " + std::to_string(kTile.fz) + " and lie within the " +
                                      std::to_string(doubled.nz()) + " fz planes");
  TableArgs ta{};
  MmaArgs ma{};
  for (int a = 0; a < 3; ++a) {
    ta.n[a] = static_cast<int>(grid.extent(a));
    ta.l[a] = ma.l[a] = static_cast<int>(doubled.extent(a));
    const int block = a == 0 ? kTile.fx : a == 1 ? kTile.fy : kTile.fz;
    ta.rows[a] = round_up(ta.l[a], block);
    ma.blocks[a] = ta.rows[a] / block;
  }
  // The z table keeps every row (cheap); the sum runs over the blocks of the planes asked for.
  ma.blocks[2] = (count + kTile.fz - 1) / kTile.fz;
  ma.fz_first = first;
  ma.fz_end = first + count;
  ta.k = k;
  ta.w = w;
  ta.inv_w_max = 1.0 / w_max;
  ma.kernel = kernel;
  // acc = 2^30 * sum X Y Z w / w_max over normalised kernels; K = (1/L) prod(2 n_a - 1) w_max sum.
  double scale = w_max / (static_cast<double>(doubled.voxels()) * kTile.scale * kTile.scale);
  for (int a = 0; a < 3; ++a) scale *= 2.0 * ta.n[a] - 1.0;
  ma.scale = static_cast<float>(scale);
  const std::size_t plane = static_cast<std::size_t>(doubled.nx() * doubled.ny());
  MRI_CUDA_CHECK(cudaMemsetAsync(kernel, 0, plane * static_cast<std::size_t>(count) * sizeof(float), stream));

  MRI_CUDA_CHECK(cudaFuncSetAttribute(dirichlet_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(kSmemBytes)));
  int device = 0, sms = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  MRI_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int freq_blocks = ma.blocks[0] * ma.blocks[1] * ma.blocks[2];

  // Chunks alternate between `stream` and a second stream, each with its own tables: one chunk's
  // tables are built (a small kernel that fits beside the tensor-core blocks) while the other's
  // sum runs, and one sum's last partial wave overlaps the next one's start. K takes both
  // streams' atomic adds.
  struct Lane {
    DeviceBuffer<__half> xhi, xlo;
    DeviceBuffer<float> y, z;
  };
  const auto max_cols = static_cast<std::size_t>(round_up(std::min<long long>(static_cast<long long>(m), kTile.chunk), kTile.stage));
  Lane lanes[2];
  for (Lane &l : lanes) {
    l.xhi.grow(static_cast<std::size_t>(ta.rows[0]) * max_cols);
    l.xlo.grow(static_cast<std::size_t>(ta.rows[0]) * max_cols);
    l.y.grow(static_cast<std::size_t>(ta.rows[1]) * max_cols);
    l.z.grow(static_cast<std::size_t>(ta.rows[2]) * max_cols);
    if (m <= static_cast<std::size_t>(kTile.chunk)) break; // one chunk: one lane
  }
  const Stream second;
  const Event memset_done, second_done;
  MRI_CUDA_CHECK(cudaEventRecord(memset_done.get(), stream));
  MRI_CUDA_CHECK(cudaStreamWaitEvent(second.get(), memset_done.get(), 0));
  int chunk = 0;
  for (std::size_t begin = 0; begin < m; begin += kTile.chunk, ++chunk) {
    const Lane &l = lanes[chunk & 1];
    cudaStream_t s = chunk & 1 ? second.get() : stream;
    ta.xhi = l.xhi.get();
    ta.xlo = l.xlo.get();
    ta.y = l.y.get();
    ta.z = l.z.get();
    ma.xhi = ta.xhi;
    ma.xlo = ta.xlo;
    ma.y = ta.y;
    ma.z = ta.z;
    ta.begin = static_cast<long long>(begin);
    ta.count = static_cast<int>(std::min<std::size_t>(kTile.chunk, m - begin));
    ta.cols = ma.cols = round_up(ta.count, kTile.stage);
    const long long entries = static_cast<long long>(ta.rows[0] + ta.rows[1] + ta.rows[2]) * ta.cols;
    dirichlet_tables_kernel<<<blocks_for(entries, 256), 256, 0, s>>>(ta);
    MRI_CUDA_CHECK_LAUNCH("dirichlet_tables_kernel");
    // One block per frequency block and chunk; small grids split the chunk's samples too, so
    // that at least two blocks per multiprocessor run.
    const int stages = ma.cols / kTile.stage;
    const int splits =
        std::clamp((2 * sms + freq_blocks - 1) / freq_blocks, 1, (stages + kTile.flush_stages - 1) / kTile.flush_stages);
    ma.stages_per_block = (stages + splits - 1) / splits;
    const dim3 blocks(static_cast<unsigned>(freq_blocks), static_cast<unsigned>(splits));
    dirichlet_mma_kernel<<<blocks, kTile.threads, kSmemBytes, s>>>(ma);
    MRI_CUDA_CHECK_LAUNCH("dirichlet_mma_kernel");
  }
  MRI_CUDA_CHECK(cudaEventRecord(second_done.get(), second.get()));
  MRI_CUDA_CHECK(cudaStreamWaitEvent(stream, second_done.get(), 0));
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream)); // the tables and the second stream go on return
}

} // namespace mri::cuda::detail
