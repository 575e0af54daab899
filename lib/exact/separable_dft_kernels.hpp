#pragma once
// The float32 separable DFT's building blocks (internal to lib/exact/separable_dft*.cpp): the phase
// tables, the adjoint and forward drivers as always-inline templates over a micro-kernel K, and the
// per-ISA entry points (SeparableIsa) that each ISA's file compiles them into:
// separable_dft_generic.cpp, separable_dft_avx2.cpp, separable_dft_avx512.cpp. How the sums are
// organised, their accuracy and speed: lib/exact/separable_dft.cpp.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numbers>
#include <vector>

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

#include "mri/fourier.hpp"

namespace mri::detail::separable {

using i64 = std::int64_t;

// Samples per adjoint chunk: the number of terms one float register accumulator sums
// before it is added into the double accumulator (float error ~ eps * sqrt(kChunk)).
constexpr i64 kChunk = 256;
// Sample panels (of K::XW samples each) per forward task: their x tables stay in L2 while
// one packed image panel is reused from L1.
constexpr i64 kForwardPanels = 4;

constexpr i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

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

inline Axis make_axis(const Grid &out, const Grid &period, int a) {
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

// Each ISA's file defines its kernel struct (XW lanes, NR columns, run()) there.

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

// One ISA's compiled drivers and its kernel's shape (lanes XW, columns NR), for the dispatcher.
struct SeparableIsa {
  int xw, nr;
  void (*adjoint)(const AdjointJob &, i64 j0, i64 j1, AdjointScratch &);
  void (*forward)(const ForwardJob &, i64 s0, i64 ns, ForwardScratch &);
};
SeparableIsa generic_isa();
#if MRI_SEPARABLE_X86
SeparableIsa avx2_isa();
SeparableIsa avx512_isa(); // AVX-512F (no VL)
#endif

} // namespace mri::detail::separable
