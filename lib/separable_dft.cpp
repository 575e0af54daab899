// The fast float32 CPU path of the exact non-uniform DFT (Precision::Float32).
//
// On a Cartesian output grid the phase separates per axis,
//     exp(i 2 pi k.x / p) = ex(k, x) * ey(k, y) * ez(k, z),
// so F^H c over one chunk of samples is a complex matrix product
//     R[x, (y,z)] = sum_m A[m, x] * B[m, (y,z)],  A[m, x] = c_m ex(k_m, x),
//                                                  B[m, (y,z)] = ey(k_m, y) ez(k_m, z),
// and the forward sum is the same product with the roles of the axes swapped:
//     T[m, (y,z)] = sum_x conj ex(k_m, x) X[x, (y,z)],   (F X)_m = sum_(y,z) T[m, (y,z)] conj(ey ez).
// Both are GEMM-bound (N*M complex multiply-adds); the phase tables are O((nx + ny*nz) M)
// and are built without per-entry trig:
//   - per sample and axis, two double-precision sincos of phases reduced in turns
//     (t - nearbyint(t)): the start exp(i 2 pi k x0 / p) and the step exp(i 2 pi k / p);
//   - along an axis, an angle-addition recurrence in double: in blocks of W lanes, a double
//     anchor advanced by step^W times float powers step^0..step^(W-1) (the tables the GEMM
//     reads along its vector lanes), or a plain double recurrence across W samples (the
//     forward's tables, vectorised over samples). Every table entry is within a few float
//     ulps of the exact phasor.
//
// The GEMM is our own register-blocked micro-kernel, not Eigen: libmri is compiled for the
// baseline ISA (SSE2; -march is left to the builder, see lib/CMakeLists.txt), where Eigen's
// complex<float> GEMM peaks at ~4e9 pairs/s on the 2-core development machine, below the
// issue's 5e9. The kernels are compiled per ISA with function target attributes and chosen
// at run time (AVX-512F, AVX2+FMA, portable C++), so the library stays runnable on any
// x86-64 (and non-x86) machine. MRI_SEPARABLE_KERNEL=generic|avx2|avx512 caps the choice
// (used by the tests to cover every kernel; a request above the CPU's support is ignored).
//
// Accumulation: each micro-kernel call sums at most kChunk = 256 samples (adjoint) or one
// image row of nx voxels (forward) in float registers. Those partial sums are then added in
// double (adjoint: a per-thread double accumulator for the thread's block of output columns;
// forward: the NR columns of a tile are weighted and summed in float, then added into a
// double accumulator per sample), so the float error stays ~eps * sqrt(256) instead of
// growing like eps * sqrt(M) over the trajectory. Measured vs the float64 reference: rel L2
// ~3e-7 (adjoint) and ~1e-7..3e-7 (forward), independent of M (tests/test_fourier.cpp).
//
// Threading (OpenMP, the library's): the adjoint splits the output columns (y,z) into about
// one block per thread (each block streams all samples: no reduction, no atomics), the
// forward splits the samples. Memory per thread is bounded (tables for kChunk samples x the
// thread's block, a ~1 MB double accumulator) independent of M; the forward adds one packed
// copy of the image. 3D 128^3 (and Q's 256^3) needs no large buffers.
//
// Speed (2-core AVX-512 development machine, shared): FHD-2D (256^2, M = 2^16 spiral)
// ~2.3e10 pairs/s adjoint and ~2.9e10 forward; the micro-kernel loop is ~90% of the time,
// sincos ~3-4%; benchmarks/bench_fhd_cpu.cpp.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <numbers>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define MRI_SEPARABLE_X86 1
#include <immintrin.h>
#else
#define MRI_SEPARABLE_X86 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MRI_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define MRI_ALWAYS_INLINE inline
#endif

#include "cpu_isa.hpp"
#include "mri/fourier.hpp"

namespace mri::detail {
namespace {

using i64 = std::int64_t;

// Samples per adjoint chunk: the number of terms one float register accumulator sums
// before it is added into the double accumulator (float error ~ eps * sqrt(kChunk)).
constexpr i64 kChunk = 256;
// Sample panels (of K::XW samples each) per forward task: their x tables stay in L2 while
// one packed image panel is reused from L1.
constexpr i64 kForwardPanels = 4;

constexpr i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

int thread_count() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// 64-byte aligned, reusable float scratch (contents unspecified after get()).
class AlignedFloats {
public:
  AlignedFloats() = default;
  AlignedFloats(const AlignedFloats &) = delete;
  AlignedFloats &operator=(const AlignedFloats &) = delete;
  ~AlignedFloats() { std::free(p_); }
  float *get(std::size_t count) {
    if (count > capacity_) {
      std::free(p_);
      p_ = nullptr;
      capacity_ = 0;
      const std::size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
      p_ = static_cast<float *>(std::aligned_alloc(64, bytes));
      if (p_ == nullptr) throw std::bad_alloc();
      capacity_ = count;
    }
    return p_;
  }

private:
  float *p_ = nullptr;
  std::size_t capacity_ = 0;
};

// exp(i 2 pi turns), with the phase reduced to [-1/2, 1/2] turns before the trig.
MRI_ALWAYS_INLINE void phasor(double turns, double &re, double &im) {
  const double a = 2 * std::numbers::pi * (turns - std::nearbyint(turns));
  re = std::cos(a);
  im = std::sin(a);
}

// One output axis: extent L, first coordinate x0 = -(L/2), phase per unit k.x = 1/period.
struct Axis {
  i64 L = 1;
  i64 x0 = 0;
  double inv_period = 1;
};

Axis make_axis(const Grid &out, const Grid &period, int a) {
  Axis ax;
  ax.L = out.extent(a);
  ax.x0 = out.coordinate(a, 0);
  ax.inv_period = 1.0 / static_cast<double>(period.extent(a));
  return ax;
}

// Phasors along an axis, lanes along the axis: for block b < blocks and lane j < W,
//   dst[b * block_stride + 2j (+1)] = coef * exp(i 2 pi theta (x0 + b W + j))   (float re, im).
// Double anchor per block (advanced by step^W), float powers step^j inside the block.
template <int W>
MRI_ALWAYS_INLINE void axis_row(double theta, i64 x0, i64 blocks, double cr, double ci, float *dst,
                                std::size_t block_stride) {
  double pr[W], pi[W];
  double sr, si;
  phasor(theta, sr, si);
  pr[0] = 1;
  pi[0] = 0;
  if constexpr (W > 1) {
    pr[1] = sr;
    pi[1] = si;
  }
  for (int h = 2; h < W; h *= 2) { // step^(h..2h-1) = step^(0..h-1) * step^h
    const double hr = pr[h - 1] * sr - pi[h - 1] * si, hi = pr[h - 1] * si + pi[h - 1] * sr;
    for (int j = 0; j < h; ++j) {
      pr[h + j] = pr[j] * hr - pi[j] * hi;
      pi[h + j] = pr[j] * hi + pi[j] * hr;
    }
  }
  const double wr = pr[W - 1] * sr - pi[W - 1] * si, wi = pr[W - 1] * si + pi[W - 1] * sr;
  // (ar + i ai) * (pr + i pi) = ar * P + ai * Q on interleaved (re, im) lanes.
  alignas(64) float P[2 * W], Q[2 * W];
  for (int j = 0; j < W; ++j) {
    P[2 * j] = static_cast<float>(pr[j]);
    P[2 * j + 1] = static_cast<float>(pi[j]);
    Q[2 * j] = -static_cast<float>(pi[j]);
    Q[2 * j + 1] = static_cast<float>(pr[j]);
  }
  double er, ei;
  phasor(theta * static_cast<double>(x0), er, ei);
  double ar = cr * er - ci * ei, ai = cr * ei + ci * er;
  for (i64 b = 0; b < blocks; ++b) {
    const float far = static_cast<float>(ar), fai = static_cast<float>(ai);
    float *d = dst + static_cast<std::size_t>(b) * block_stride;
    for (int j = 0; j < 2 * W; ++j) d[j] = far * P[j] + fai * Q[j];
    const double nr = ar * wr - ai * wi;
    ai = ar * wi + ai * wr;
    ar = nr;
  }
}

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector) && __has_builtin(__builtin_convertvector)
#define MRI_VECTOR_EXTENSIONS 1
#endif
#endif

#ifdef MRI_VECTOR_EXTENSIONS
// GCC/Clang generic vectors of 4 lanes: lowered to whatever the enclosing function's target
// has (the drivers below are compiled per ISA), so one source serves SSE2 to AVX-512.
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
#endif

// Phasors with lanes across W samples: dst[x * 2W + 2l (+1)] = exp(i 2 pi theta[l] (x0 + x))
// for x < L, by a double recurrence along the axis, vectorised over the lanes.
template <int W>
MRI_ALWAYS_INLINE void axis_lanes(const double *theta, i64 x0, i64 L, float *dst) {
  static_assert(W % 4 == 0);
  alignas(64) double er_[W], ei_[W], sr_[W], si_[W];
  for (int l = 0; l < W; ++l) {
    phasor(theta[l], sr_[l], si_[l]);
    phasor(theta[l] * static_cast<double>(x0), er_[l], ei_[l]);
  }
#ifdef MRI_VECTOR_EXTENSIONS
  constexpr int V = W / 4;
  v4d er[V], ei[V], sr[V], si[V];
  std::memcpy(er, er_, sizeof er);
  std::memcpy(ei, ei_, sizeof ei);
  std::memcpy(sr, sr_, sizeof sr);
  std::memcpy(si, si_, sizeof si);
  for (i64 x = 0; x < L; ++x) {
    float *d = dst + x * 2 * W;
    for (int v = 0; v < V; ++v) {
      const v4f fr = __builtin_convertvector(er[v], v4f), fi = __builtin_convertvector(ei[v], v4f);
      const v8f ri = __builtin_shufflevector(fr, fi, 0, 4, 1, 5, 2, 6, 3, 7);
      std::memcpy(d + 8 * v, &ri, sizeof ri);
      const v4d nr = er[v] * sr[v] - ei[v] * si[v];
      ei[v] = er[v] * si[v] + ei[v] * sr[v];
      er[v] = nr;
    }
  }
#else
  for (i64 x = 0; x < L; ++x) {
    float *d = dst + x * 2 * W;
    for (int l = 0; l < W; ++l) {
      d[2 * l] = static_cast<float>(er_[l]);
      d[2 * l + 1] = static_cast<float>(ei_[l]);
      const double nr = er_[l] * sr_[l] - ei_[l] * si_[l];
      ei_[l] = er_[l] * si_[l] + ei_[l] * sr_[l];
      er_[l] = nr;
    }
  }
#endif
}

// ---------------------------------------------------------------------------------------
// Micro-kernels: tile[j][l] = sum_{r < kr} A[r][l] * B[r][j] for l < XW lanes, j < NR
// columns; A is kr x XW complex (interleaved, lanes contiguous), B is kr x NR complex,
// tile is NR x XW complex. The tile is overwritten (accumulation starts at zero).
// Per r: the A row is loaded as vectors, each B entry is broadcast (re and im separately);
// accR += A * Re(b), accI += A * Im(b); at the end A*b = accR + i*accI = fmaddsub(accR, 1,
// swap(accI)).

struct GenericKernel {
  static constexpr int XW = 4, NR = 3;
  static void run(const float *A, const float *B, i64 kr, float *tile) {
    float acr[NR][2 * XW] = {}, aci[NR][2 * XW] = {};
    for (i64 r = 0; r < kr; ++r) {
      for (int j = 0; j < NR; ++j) {
        const float br = B[2 * j], bi = B[2 * j + 1];
        for (int l = 0; l < 2 * XW; ++l) {
          acr[j][l] += A[l] * br;
          aci[j][l] += A[l] * bi;
        }
      }
      A += 2 * XW;
      B += 2 * NR;
    }
    for (int j = 0; j < NR; ++j)
      for (int l = 0; l < XW; ++l) {
        tile[j * 2 * XW + 2 * l] = acr[j][2 * l] - aci[j][2 * l + 1];
        tile[j * 2 * XW + 2 * l + 1] = acr[j][2 * l + 1] + aci[j][2 * l];
      }
  }
};

#if MRI_SEPARABLE_X86
#define MRI_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define MRI_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))

struct Avx2Kernel {
  static constexpr int XW = 8, NR = 3; // 2 ymm of 4 complex per row, 12 accumulators
  MRI_TARGET_AVX2 static void run(const float *A, const float *B, i64 kr, float *tile) {
    __m256 cr[NR][2], ci[NR][2];
    for (int j = 0; j < NR; ++j)
      for (int v = 0; v < 2; ++v) cr[j][v] = ci[j][v] = _mm256_setzero_ps();
    for (i64 r = 0; r < kr; ++r) {
      const __m256 a0 = _mm256_loadu_ps(A), a1 = _mm256_loadu_ps(A + 8);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        const __m256 br = _mm256_broadcast_ss(B + 2 * j), bi = _mm256_broadcast_ss(B + 2 * j + 1);
        cr[j][0] = _mm256_fmadd_ps(a0, br, cr[j][0]);
        cr[j][1] = _mm256_fmadd_ps(a1, br, cr[j][1]);
        ci[j][0] = _mm256_fmadd_ps(a0, bi, ci[j][0]);
        ci[j][1] = _mm256_fmadd_ps(a1, bi, ci[j][1]);
      }
      A += 2 * XW;
      B += 2 * NR;
    }
    for (int j = 0; j < NR; ++j)
      for (int v = 0; v < 2; ++v)
        _mm256_storeu_ps(tile + j * 2 * XW + v * 8,
                         _mm256_addsub_ps(cr[j][v], _mm256_permute_ps(ci[j][v], 0xB1)));
  }
};

struct Avx512Kernel {
  static constexpr int XW = 16, NR = 6; // 2 zmm of 8 complex per row, 24 accumulators
  MRI_TARGET_AVX512 static void run(const float *A, const float *B, i64 kr, float *tile) {
    __m512 cr[NR][2], ci[NR][2];
    for (int j = 0; j < NR; ++j)
      for (int v = 0; v < 2; ++v) cr[j][v] = ci[j][v] = _mm512_setzero_ps();
    for (i64 r = 0; r < kr; ++r) {
      const __m512 a0 = _mm512_loadu_ps(A), a1 = _mm512_loadu_ps(A + 16);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        const __m512 br = _mm512_set1_ps(B[2 * j]), bi = _mm512_set1_ps(B[2 * j + 1]);
        cr[j][0] = _mm512_fmadd_ps(a0, br, cr[j][0]);
        cr[j][1] = _mm512_fmadd_ps(a1, br, cr[j][1]);
        ci[j][0] = _mm512_fmadd_ps(a0, bi, ci[j][0]);
        ci[j][1] = _mm512_fmadd_ps(a1, bi, ci[j][1]);
      }
      A += 2 * XW;
      B += 2 * NR;
    }
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int j = 0; j < NR; ++j)
      for (int v = 0; v < 2; ++v)
        _mm512_storeu_ps(tile + j * 2 * XW + v * 16,
                         _mm512_fmaddsub_ps(cr[j][v], one, _mm512_mask_permute_ps(ci[j][v], 0xFFFF, ci[j][v], 0xB1)));
  }
};
#endif

using Isa = CpuIsa;

// Avx512Kernel above is compiled for AVX-512F (no VL).
Isa select_isa() { return select_cpu_isa("MRI_SEPARABLE_KERNEL", /*avx512_needs_vl=*/false); }

// Runs body(thread_scratch, task) for task in [0, tasks) on the OpenMP team; an exception
// thrown by a task (bad_alloc) is rethrown on the calling thread.
template <class Scratch, class Body> void parallel_tasks(i64 tasks, Body &&body) {
  std::exception_ptr error;
#pragma omp parallel if (tasks > 1)
  {
    Scratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (i64 t = 0; t < tasks; ++t) {
      try {
        body(scratch, t);
      } catch (...) {
#pragma omp critical(mri_separable_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

// ---------------------------------------------------------------------------------------
// Adjoint: out[x + Lx * j] = sum_m c_m ex(m, x) * B(m, j), j = y + Ly z, on column blocks.

struct AdjointJob {
  const KPoint *k = nullptr;
  const cfloat *c = nullptr;
  i64 m = 0;
  Axis ax[3];
  cfloat *out = nullptr;
};

struct AdjointScratch {
  AlignedFloats apack, bpack, ey, ez, brow, tile;
  std::vector<double> acc;
};

// Output columns [j0, j1) of the adjoint sum, all samples.
template <class K>
MRI_ALWAYS_INLINE void adjoint_block(const AdjointJob &job, i64 j0, i64 j1, AdjointScratch &s) {
  constexpr int XW = K::XW, NR = K::NR;
  const Axis &X = job.ax[0], &Y = job.ax[1], &Z = job.ax[2];
  const i64 Lx = X.L, Ly = Y.L;
  const i64 nb = j1 - j0, np = ceil_div(Lx, XW), nq = ceil_div(nb, NR);
  // The y and z ranges the block touches; tables are built only for those.
  const i64 zlo = j0 / Ly, zhi = (j1 - 1) / Ly, zn = zhi - zlo + 1;
  const i64 ylo = zn == 1 ? j0 % Ly : 0, yn = zn == 1 ? nb : Ly;
  const bool has_z = Z.L > 1;
  const std::size_t a_panel = static_cast<std::size_t>(kChunk) * 2 * XW; // floats per x panel
  const std::size_t b_panel = static_cast<std::size_t>(kChunk) * 2 * NR; // floats per col panel
  float *apack = s.apack.get(static_cast<std::size_t>(np) * a_panel);
  float *bpack = s.bpack.get(static_cast<std::size_t>(nq) * b_panel);
  float *ey = s.ey.get(static_cast<std::size_t>(ceil_div(yn, XW) * 2 * XW));
  float *ez = s.ez.get(static_cast<std::size_t>(ceil_div(zn, XW) * 2 * XW));
  float *brow = s.brow.get(static_cast<std::size_t>(2 * nb));
  float *tile = s.tile.get(2 * XW * NR);
  s.acc.assign(static_cast<std::size_t>(2 * nb * Lx), 0.0);
  double *acc = s.acc.data();

  for (i64 m0 = 0; m0 < job.m; m0 += kChunk) {
    const i64 kr = std::min(kChunk, job.m - m0);
    for (i64 i = 0; i < kr; ++i) {
      const KPoint &k = job.k[m0 + i];
      const cfloat c = job.c[m0 + i];
      axis_row<XW>(k.kx * X.inv_period, X.x0, np, c.real(), c.imag(), apack + i * 2 * XW, a_panel);
      axis_row<XW>(k.ky * Y.inv_period, Y.x0 + ylo, ceil_div(yn, XW), 1, 0, ey, 2 * XW);
      // This sample's row of B over the block's columns (zero beyond nb), then its NR-column
      // pieces into the panels.
      const float *row = ey;
      if (has_z) {
        axis_row<XW>(k.kz * Z.inv_period, Z.x0 + zlo, ceil_div(zn, XW), 1, 0, ez, 2 * XW);
        for (i64 col = 0; col < nb;) { // runs of y at fixed z: ey[y] * ez[z]
          const i64 y = (j0 + col) % Ly - ylo, z = (j0 + col) / Ly - zlo;
          const i64 run = std::min(nb - col, yn - y);
          const float wr = ez[2 * z], wi = ez[2 * z + 1];
          const float *u = ey + 2 * y;
          float *d = brow + 2 * col;
          for (i64 t = 0; t < run; ++t) {
            d[2 * t] = u[2 * t] * wr - u[2 * t + 1] * wi;
            d[2 * t + 1] = u[2 * t] * wi + u[2 * t + 1] * wr;
          }
          col += run;
        }
        row = brow;
      }
      float *b = bpack + i * 2 * NR;
      for (i64 q = 0; q + 1 < nq; ++q) std::memcpy(b + q * b_panel, row + q * 2 * NR, sizeof(float) * 2 * NR);
      const i64 tail = nb - (nq - 1) * NR; // 1..NR columns in the last panel
      for (int j = 0; j < 2 * NR; ++j) b[(nq - 1) * b_panel + j] = j < 2 * tail ? row[(nq - 1) * 2 * NR + j] : 0.0f;
    }
    for (i64 q = 0; q < nq; ++q) {
      const int cols = static_cast<int>(std::min<i64>(NR, nb - q * NR));
      for (i64 p = 0; p < np; ++p) {
        K::run(apack + static_cast<std::size_t>(p) * a_panel, bpack + static_cast<std::size_t>(q) * b_panel,
               kr, tile);
        const int lanes2 = 2 * static_cast<int>(std::min<i64>(XW, Lx - p * XW));
        for (int j = 0; j < cols; ++j) {
          double *a = acc + 2 * ((q * NR + j) * Lx + p * XW);
          const float *t = tile + j * 2 * XW;
          for (int l = 0; l < lanes2; ++l) a[l] += t[l];
        }
      }
    }
  }
  float *out = reinterpret_cast<float *>(job.out + j0 * Lx);
  for (i64 i = 0; i < 2 * nb * Lx; ++i) out[i] = static_cast<float>(acc[i]);
}

// ---------------------------------------------------------------------------------------
// Forward: out[m] = sum_j conj B(m, j) * sum_x conj ex(m, x) X[x, j], on groups of samples.

struct ForwardJob {
  const KPoint *k = nullptr;
  i64 m = 0;
  Axis ax[3];
  i64 cols = 0, nq = 0;
  const float *image = nullptr; // packed: [q][x][NR] complex, columns beyond cols zero
  const std::int32_t *ymap = nullptr, *zmap = nullptr;
  cfloat *out = nullptr;
};

struct ForwardScratch {
  AlignedFloats ex, ey, ez, tile;
  std::vector<double> acc;
};

// Samples [s0, s0 + ns), ns <= kForwardPanels * XW.
template <class K>
MRI_ALWAYS_INLINE void forward_group(const ForwardJob &job, i64 s0, i64 ns, ForwardScratch &s) {
  constexpr int XW = K::XW, NR = K::NR;
  const Axis &X = job.ax[0], &Y = job.ax[1], &Z = job.ax[2];
  const i64 Lx = X.L, Ly = Y.L, Lz = Z.L;
  const i64 panels = ceil_div(ns, XW);
  const bool has_z = Lz > 1;
  const std::size_t xs = static_cast<std::size_t>(Lx * 2 * XW), ys = static_cast<std::size_t>(Ly * 2 * XW),
                    zs = static_cast<std::size_t>(Lz * 2 * XW);
  float *ex = s.ex.get(xs * static_cast<std::size_t>(panels));
  float *ey = s.ey.get(ys * static_cast<std::size_t>(panels));
  float *ez = s.ez.get(zs * static_cast<std::size_t>(panels));
  float *tile = s.tile.get(2 * XW * NR);
  s.acc.assign(static_cast<std::size_t>(panels * 2 * XW), 0.0);
  for (i64 g = 0; g < panels; ++g) {
    alignas(64) double tx[XW], ty[XW], tz[XW];
    for (int l = 0; l < XW; ++l) {
      const i64 m = s0 + g * XW + l;
      const KPoint k = m < s0 + ns ? job.k[m] : KPoint{};
      tx[l] = -k.kx * X.inv_period; // forward sign: exp(-i 2 pi k.x / n)
      ty[l] = -k.ky * Y.inv_period;
      tz[l] = -k.kz * Z.inv_period;
    }
    axis_lanes<XW>(tx, X.x0, Lx, ex + g * xs);
    axis_lanes<XW>(ty, Y.x0, Ly, ey + g * ys);
    if (has_z) axis_lanes<XW>(tz, Z.x0, Lz, ez + g * zs);
  }
  for (i64 q = 0; q < job.nq; ++q) {
    const float *bq = job.image + static_cast<std::size_t>(q) * static_cast<std::size_t>(Lx * 2 * NR);
    const int cols = static_cast<int>(std::min<i64>(NR, job.cols - q * NR));
    for (i64 g = 0; g < panels; ++g) {
      K::run(ex + g * xs, bq, Lx, tile);
      double *acc = s.acc.data() + g * 2 * XW;
      // Weight the panel's columns by conj(ey ez) and sum them in float; the running sum over
      // panels is in double.
      alignas(64) float sum[2 * XW] = {};
      for (int j = 0; j < cols; ++j) {
        const i64 col = q * NR + j;
        const float *t = tile + j * 2 * XW;
        const float *u = ey + g * ys + job.ymap[col] * XW;
        if (has_z) {
          const float *w = ez + g * zs + job.zmap[col] * XW;
          for (int l = 0; l < XW; ++l) {
            const float br = u[2 * l] * w[2 * l] - u[2 * l + 1] * w[2 * l + 1];
            const float bi = u[2 * l] * w[2 * l + 1] + u[2 * l + 1] * w[2 * l];
            sum[2 * l] += t[2 * l] * br - t[2 * l + 1] * bi;
            sum[2 * l + 1] += t[2 * l] * bi + t[2 * l + 1] * br;
          }
        } else {
          for (int l = 0; l < XW; ++l) {
            sum[2 * l] += t[2 * l] * u[2 * l] - t[2 * l + 1] * u[2 * l + 1];
            sum[2 * l + 1] += t[2 * l] * u[2 * l + 1] + t[2 * l + 1] * u[2 * l];
          }
        }
      }
      for (int l = 0; l < 2 * XW; ++l) acc[l] += sum[l];
    }
  }
  for (i64 i = 0; i < ns; ++i) {
    const double *a = s.acc.data() + 2 * i;
    job.out[s0 + i] = cfloat(static_cast<float>(a[0]), static_cast<float>(a[1]));
  }
}

// Packs the image as [q][x][NR] complex (column panels of NR columns, zero beyond cols).
template <int NR> void pack_image(const Image &img, std::vector<float> &packed, i64 &nq) {
  const Grid &g = img.grid();
  const i64 Lx = g.nx(), cols = g.ny() * g.nz();
  nq = ceil_div(cols, NR);
  packed.assign(static_cast<std::size_t>(nq * Lx * 2 * NR), 0.0f);
  const cfloat *src = img.data();
  float *dst = packed.data();
#pragma omp parallel for schedule(static) if (nq * Lx > 65536)
  for (i64 q = 0; q < nq; ++q)
    for (int j = 0; j < NR && q * NR + j < cols; ++j)
      for (i64 x = 0; x < Lx; ++x) {
        const cfloat v = src[(q * NR + j) * Lx + x];
        float *d = dst + ((q * Lx + x) * NR + j) * 2;
        d[0] = v.real();
        d[1] = v.imag();
      }
}

// Column-to-table offsets for the forward (complex units of the y / z tables).
void column_maps(const Grid &g, std::vector<std::int32_t> &ymap, std::vector<std::int32_t> &zmap) {
  const i64 cols = g.ny() * g.nz();
  ymap.resize(static_cast<std::size_t>(cols));
  zmap.resize(static_cast<std::size_t>(cols));
  for (i64 j = 0; j < cols; ++j) {
    ymap[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(2 * (j % g.ny()));
    zmap[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(2 * (j / g.ny()));
  }
}

// Per-ISA entry points: the always-inline drivers are compiled into these, so the tables and
// epilogues vectorise for the same ISA as the kernel.
void adjoint_generic(const AdjointJob &j, i64 a, i64 b, AdjointScratch &s) { adjoint_block<GenericKernel>(j, a, b, s); }
void forward_generic(const ForwardJob &j, i64 a, i64 n, ForwardScratch &s) { forward_group<GenericKernel>(j, a, n, s); }
#if MRI_SEPARABLE_X86
MRI_TARGET_AVX2 void adjoint_avx2(const AdjointJob &j, i64 a, i64 b, AdjointScratch &s) { adjoint_block<Avx2Kernel>(j, a, b, s); }
MRI_TARGET_AVX2 void forward_avx2(const ForwardJob &j, i64 a, i64 n, ForwardScratch &s) { forward_group<Avx2Kernel>(j, a, n, s); }
MRI_TARGET_AVX512 void adjoint_avx512(const AdjointJob &j, i64 a, i64 b, AdjointScratch &s) { adjoint_block<Avx512Kernel>(j, a, b, s); }
MRI_TARGET_AVX512 void forward_avx512(const ForwardJob &j, i64 a, i64 n, ForwardScratch &s) { forward_group<Avx512Kernel>(j, a, n, s); }
#endif

template <class K> void run_adjoint(const AdjointJob &job, void (*block)(const AdjointJob &, i64, i64, AdjointScratch &)) {
  const i64 cols = job.ax[1].L * job.ax[2].L, Lx = job.ax[0].L;
  // One column block per thread, a multiple of NR columns, capped at 1024 columns and 2^16
  // accumulator entries: the per-thread double accumulator (16 B * Lx * block <= 1 MB) and
  // column panels (8 B * kChunk * block <= 2 MB) stay near L2 size whatever the grid and M.
  const i64 cap = std::max<i64>(K::NR, std::min<i64>(1024, (i64{1} << 16) / std::max<i64>(Lx, 1)) / K::NR * K::NR);
  const i64 per_thread = ceil_div(ceil_div(cols, thread_count()), K::NR) * K::NR;
  const i64 nc = std::min(cap, per_thread);
  const i64 tasks = ceil_div(cols, nc);
  parallel_tasks<AdjointScratch>(tasks, [&](AdjointScratch &s, i64 t) {
    block(job, t * nc, std::min(cols, (t + 1) * nc), s);
  });
}

template <class K> void run_forward(const Trajectory &t, const Image &img, cfloat *result,
                                    void (*group)(const ForwardJob &, i64, i64, ForwardScratch &)) {
  const Grid &g = img.grid();
  ForwardJob job;
  job.k = t.data();
  job.m = static_cast<i64>(t.size());
  for (int a = 0; a < 3; ++a) job.ax[a] = make_axis(g, g, a);
  job.cols = g.ny() * g.nz();
  std::vector<float> packed;
  pack_image<K::NR>(img, packed, job.nq);
  job.image = packed.data();
  std::vector<std::int32_t> ymap, zmap;
  column_maps(g, ymap, zmap);
  job.ymap = ymap.data();
  job.zmap = zmap.data();
  job.out = result;
  const i64 per_task = kForwardPanels * K::XW;
  const i64 tasks = ceil_div(job.m, per_task);
  parallel_tasks<ForwardScratch>(tasks, [&](ForwardScratch &s, i64 task) {
    const i64 s0 = task * per_task;
    group(job, s0, std::min(per_task, job.m - s0), s);
  });
}

} // namespace

void adjoint_sum_f32(const Trajectory &t, std::span<const cfloat> c, const Grid &out, const Grid &period,
                     cfloat *result) {
  AdjointJob job;
  job.k = t.data();
  job.c = c.data();
  job.m = static_cast<i64>(std::min(t.size(), c.size()));
  for (int a = 0; a < 3; ++a) job.ax[a] = make_axis(out, period, a);
  job.out = result;
  if (job.m == 0) {
    std::fill(result, result + out.voxels(), cfloat(0, 0));
    return;
  }
  switch (select_isa()) {
#if MRI_SEPARABLE_X86
  case Isa::Avx512: return run_adjoint<Avx512Kernel>(job, adjoint_avx512);
  case Isa::Avx2: return run_adjoint<Avx2Kernel>(job, adjoint_avx2);
#endif
  default: return run_adjoint<GenericKernel>(job, adjoint_generic);
  }
}

void forward_sum_f32(const Trajectory &t, const Image &x, cfloat *result) {
  if (t.empty()) return;
  switch (select_isa()) {
#if MRI_SEPARABLE_X86
  case Isa::Avx512: return run_forward<Avx512Kernel>(t, x, result, forward_avx512);
  case Isa::Avx2: return run_forward<Avx2Kernel>(t, x, result, forward_avx2);
#endif
  default: return run_forward<GenericKernel>(t, x, result, forward_generic);
  }
}

} // namespace mri::detail
