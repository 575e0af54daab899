// CPU gridding: scatter (GA), gather (RGA) and interpolation with a polynomial Kaiser-Bessel
// kernel on the oversampled grid. See gridding_cpu.hpp and nufft.hpp.
//
// Per sample, the kernel weights along each axis are W polynomials in one variable evaluated
// together (Horner, vectorised across the W lanes). The window's x-run is contiguous in
// memory unless it wraps around the periodic grid, so the hot loop is a 2W-float row update
// (AVX2: one ymm at W = 4) per window row; wrapped windows take a scalar path.
//
// Determinism: gather writes each grid point from exactly one tile, summing the tile's list
// in list order (fixed by the plan); scatter with per-thread grids is deterministic for a
// given team size (grids reduced in thread order); the atomic fallback is not.
#include "gridding_cpu.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "cpu_isa.hpp"
#include "mri/error.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#define MRI_GRIDDING_X86 1
#else
#define MRI_GRIDDING_X86 0
#endif

#define MRI_ALWAYS_INLINE __attribute__((always_inline)) inline

// The vector helpers below return vectors wider than the baseline ISA; they are always
// inlined into the per-ISA entry points, so no call ever uses that ABI.
#pragma GCC diagnostic ignored "-Wpsabi"
// GCC 12 reports lanes of the weight vectors read at a run-time index (the clipped row range of
// a gather tile, always < W) as maybe-uninitialised: every lane is set by the Horner loop.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace mri::detail {
namespace {

using i64 = std::int64_t;

// Vector of N lanes of T (GCC/Clang vector extension): lowered to the enclosing function's
// ISA (the entry points below are compiled per ISA).
template <class T, int N> struct VecOf {
  typedef T type __attribute__((vector_size(N * sizeof(T))));
};

// A window of W kernel weights padded to Wp = 2, 4, 8 or 16 lanes (zero weights beyond W),
// each lane duplicated for the real and imaginary part: one vector of R = 2 Wp values is one
// window row of complex grid values.
template <class T, int W> struct Simd {
  static constexpr int Wp = W <= 2 ? 2 : W <= 4 ? 4 : W <= 8 ? 8 : 16;
  static constexpr int R = 2 * Wp;
  using V = typename VecOf<T, R>::type;
  static MRI_ALWAYS_INLINE V load(const T *p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static MRI_ALWAYS_INLINE void store(T *p, V v) { std::memcpy(p, &v, sizeof v); }
  // coef2: (degree + 1) rows of R lanes.
  static MRI_ALWAYS_INLINE V horner(const T *__restrict coef2, int degree, T s) {
    V v = load(coef2 + degree * R);
    for (int d = degree - 1; d >= 0; --d) v = v * s + load(coef2 + d * R);
    return v;
  }
  // (re, im, re, im, ...) as a blend of two broadcasts. (Building it lane by lane, or from a
  // 2-lane vector, makes GCC go through the stack and stall on store forwarding.)
  static MRI_ALWAYS_INLINE V complex_broadcast(const std::complex<T> *c) {
    const V re = V{} + c->real(), im = V{} + c->imag();
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return __builtin_shufflevector(re, im, static_cast<int>((I & 1) ? R + I : I)...);
    }(std::make_index_sequence<R>{});
  }
};

template <class T, bool Atomic> MRI_ALWAYS_INLINE void add_to(T *p, T v) {
  if constexpr (Atomic)
    std::atomic_ref<T>(*p).fetch_add(v, std::memory_order_relaxed);
  else
    *p += v;
}

template <class T, int D, int W> struct Weights {
  using S = Simd<T, W>;
  typename S::V x, y, z;
  MRI_ALWAYS_INLINE Weights(const GriddingArgs<T> &a, const T *coef2, i64 m) {
    const T *s = a.s + 3 * m;
    x = S::horner(coef2, a.degree, s[0]);
    y = S::horner(coef2, a.degree, s[1]);
    if constexpr (D == 3)
      z = S::horner(coef2, a.degree, s[2]);
    else
      z = typename S::V{};
  }
  MRI_ALWAYS_INLINE T wy(int dy) const { return y[2 * dy]; }
  MRI_ALWAYS_INLINE T wz(int dz) const {
    if constexpr (D == 3)
      return z[2 * dz];
    else
      return T(1);
  }
};

// The thread-per-sample passes over samples [begin, end) (sorted order): Scatter adds sample
// c[m], weighted, into its window of `grid` (ScatterAtomic: with atomic adds, scalar);
// Interpolate sets out[m] to the weighted sum of its window of `grid`. One body, so that both
// walk a window alike: W (2D) or W^2 (3D) rows wrapped on the periodic grid, each one vector of
// 2 Wp values unless its x-run wraps (then value by value).
enum class Pass { Scatter, ScatterAtomic, Interpolate };

// GridValue: T (the scatters write the grid) or const T (interpolation reads it).
template <class T, int D, int W, Pass P, class GridValue>
MRI_ALWAYS_INLINE void window_pass(const GriddingArgs<T> &a, const T *coef2, const std::complex<T> *c, i64 begin,
                                   i64 end, GridValue *__restrict grid, std::complex<T> *out) {
  using S = Simd<T, W>;
  using V = typename S::V;
  constexpr bool kScatter = P != Pass::Interpolate, kAtomic = P == Pass::ScatterAtomic;
  const GriddingLayout &L = *a.layout;
  const i64 gx = L.g[0], gy = L.g[1], gz = L.g[2];
  constexpr int WZ = D == 3 ? W : 1;
  for (i64 m = begin; m < end; ++m) {
    const Weights<T, D, W> k(a, coef2, m);
    const std::int32_t *j = &L.j0[static_cast<std::size_t>(3 * m)];
    V v = {}; // Scatter: the weighted sample; Interpolate: the sum over the window's rows
    if constexpr (kScatter) v = k.x * S::complex_broadcast(c + m);
    const i64 jx = j[0];
    const bool contiguous = !kAtomic && jx + S::Wp <= gx;
    for (int dz = 0; dz < WZ; ++dz) {
      i64 z = D == 3 ? j[2] + dz : 0;
      if (z >= gz) z -= gz;
      for (int dy = 0; dy < W; ++dy) {
        i64 y = j[1] + dy;
        if (y >= gy) y -= gy;
        const T w = k.wz(dz) * k.wy(dy);
        GridValue *row = grid + 2 * ((z * gy + y) * gx);
        if constexpr (kScatter) {
          if (contiguous) {
            T *p = row + 2 * jx;
            S::store(p, S::load(p) + w * v);
          } else {
            const V wv = w * v;
            for (int i = 0; i < W; ++i) {
              i64 x = jx + i;
              if (x >= gx) x -= gx;
              add_to<T, kAtomic>(row + 2 * x, wv[2 * i]);
              add_to<T, kAtomic>(row + 2 * x + 1, wv[2 * i + 1]);
            }
          }
        } else {
          if (contiguous) {
            v += w * S::load(row + 2 * jx);
          } else {
            V r = {};
            for (int i = 0; i < W; ++i) {
              i64 x = jx + i;
              if (x >= gx) x -= gx;
              r[2 * i] = row[2 * x];
              r[2 * i + 1] = row[2 * x + 1];
            }
            v += w * r;
          }
        }
      }
    }
    if constexpr (!kScatter) {
      const V prod = v * k.x;
      T re = 0, im = 0;
      for (int i = 0; i < S::R; i += 2) {
        re += prod[i];
        im += prod[i + 1];
      }
      out[m] = {re, im};
    }
  }
}

// Local row length (complex values) of a gather tile: the window may start W-1 left of the
// tile and its padded run reach Wp-1 right of the tile's last point.
template <class T, int W> constexpr i64 local_row(i64 tx) { return tx + (W - 1) + (Simd<T, W>::Wp - 1); }

// One tile of the gather: sums its list into `local` (x-halo on both sides, rows and planes
// clipped to the tile) and writes the tile's interior into the grid.
template <class T, int D, int W>
MRI_ALWAYS_INLINE void gather_body(const GriddingArgs<T> &a, const T *coef2, const std::complex<T> *c, i64 t,
                                   T *__restrict local, T *__restrict grid) {
  using S = Simd<T, W>;
  const GriddingLayout &L = *a.layout;
  const i64 tx = L.tile[0], ty = L.tile[1], tz = L.tile[2];
  const i64 lx = local_row<T, W>(tx);
  const i64 ix = t % L.tiles[0], iy = (t / L.tiles[0]) % L.tiles[1], iz = t / (L.tiles[0] * L.tiles[1]);
  std::fill(local, local + 2 * lx * ty * tz, T(0));
  const GriddingLayout::Entry *e = L.entries.data() + L.offsets[static_cast<std::size_t>(t)];
  const GriddingLayout::Entry *e_end = L.entries.data() + L.offsets[static_cast<std::size_t>(t) + 1];
  for (; e != e_end; ++e) {
    const i64 m = e->sample;
    const Weights<T, D, W> k(a, coef2, m);
    const typename S::V v = k.x * S::complex_broadcast(c + m);
    const int dy0 = e->d[1], dz0 = e->d[2];
    const int ylo = std::max(0, -dy0), yhi = static_cast<int>(std::min<i64>(W, ty - dy0));
    int zlo = 0, zhi = 1;
    if constexpr (D == 3) {
      zlo = std::max(0, -dz0);
      zhi = static_cast<int>(std::min<i64>(W, tz - dz0));
    }
    T *base = local + 2 * (e->d[0] + (W - 1));
    for (int dz = zlo; dz < zhi; ++dz) {
      const i64 zl = D == 3 ? dz0 + dz : 0;
      for (int dy = ylo; dy < yhi; ++dy) {
        T *p = base + 2 * lx * (zl * ty + dy0 + dy);
        S::store(p, S::load(p) + (k.wz(dz) * k.wy(dy)) * v);
      }
    }
  }
  const i64 gx = L.g[0], gy = L.g[1];
  for (i64 zl = 0; zl < tz; ++zl)
    for (i64 yl = 0; yl < ty; ++yl)
      std::memcpy(grid + 2 * (((iz * tz + zl) * gy + iy * ty + yl) * gx + ix * tx),
                  local + 2 * (lx * (zl * ty + yl) + (W - 1)), sizeof(T) * 2 * static_cast<std::size_t>(tx));
}

template <class T> struct Kernels {
  void (*scatter)(const GriddingArgs<T> &, const T *, const std::complex<T> *, i64, i64, T *);
  void (*scatter_atomic)(const GriddingArgs<T> &, const T *, const std::complex<T> *, i64, i64, T *);
  void (*gather)(const GriddingArgs<T> &, const T *, const std::complex<T> *, i64, T *, T *);
  void (*interp)(const GriddingArgs<T> &, const T *, const T *, i64, i64, std::complex<T> *);
  int padded_width;
  i64 local_row;
};

// One set of entry points per ISA; the bodies are inlined into each, so the target
// attribute decides the vector width.
#define MRI_GRIDDING_ISA(NS, ATTR)                                                                       \
  namespace NS {                                                                                         \
  template <class T, int D, int W>                                                                       \
  ATTR void scatter(const GriddingArgs<T> &a, const T *k, const std::complex<T> *c, i64 b, i64 e, T *g) { \
    window_pass<T, D, W, Pass::Scatter>(a, k, c, b, e, g, nullptr);                                      \
  }                                                                                                      \
  template <class T, int D, int W>                                                                       \
  ATTR void scatter_atomic(const GriddingArgs<T> &a, const T *k, const std::complex<T> *c, i64 b, i64 e,  \
                           T *g) {                                                                       \
    window_pass<T, D, W, Pass::ScatterAtomic>(a, k, c, b, e, g, nullptr);                                \
  }                                                                                                      \
  template <class T, int D, int W>                                                                       \
  ATTR void gather(const GriddingArgs<T> &a, const T *k, const std::complex<T> *c, i64 t, T *local, T *g) { \
    gather_body<T, D, W>(a, k, c, t, local, g);                                                          \
  }                                                                                                      \
  template <class T, int D, int W>                                                                       \
  ATTR void interp(const GriddingArgs<T> &a, const T *k, const T *g, i64 b, i64 e, std::complex<T> *out) { \
    window_pass<T, D, W, Pass::Interpolate>(a, k, nullptr, b, e, g, out);                                \
  }                                                                                                      \
  template <class T, int D, int W> Kernels<T> kernels(i64 tile_x) {                                      \
    return {&scatter<T, D, W>, &scatter_atomic<T, D, W>, &gather<T, D, W>, &interp<T, D, W>,             \
            Simd<T, W>::Wp, local_row<T, W>(tile_x)};                                                    \
  }                                                                                                      \
  }

MRI_GRIDDING_ISA(isa_generic, )
#if MRI_GRIDDING_X86
MRI_GRIDDING_ISA(isa_avx2, __attribute__((target("avx2,fma"))))
MRI_GRIDDING_ISA(isa_avx512, __attribute__((target("avx512f,avx512vl,avx2,fma"))))
#endif

using Isa = CpuIsa;

// isa_avx512 above is compiled for AVX-512F and AVX-512VL.
Isa select_isa() { return select_cpu_isa("MRI_GRIDDING_KERNEL", /*avx512_needs_vl=*/true); }

template <class T, int D, int W> Kernels<T> pick_isa(Isa isa, i64 tx) {
#if MRI_GRIDDING_X86
  if (isa == Isa::Avx512) return isa_avx512::kernels<T, D, W>(tx);
  if (isa == Isa::Avx2) return isa_avx2::kernels<T, D, W>(tx);
#endif
  (void)isa;
  return isa_generic::kernels<T, D, W>(tx);
}

template <class T, int D, int W = KaiserBessel::kMinWidth> Kernels<T> pick_width(int width, Isa isa, i64 tx) {
  if constexpr (W > KaiserBessel::kMaxWidth) {
    (void)isa;
    (void)tx;
    invalid_argument("kernel width", width, "must be in [2, 16]");
  } else {
    if (width == W) return pick_isa<T, D, W>(isa, tx);
    return pick_width<T, D, W + 1>(width, isa, tx);
  }
}

template <class T> Kernels<T> kernels_for(const GriddingLayout &L) {
  const Isa isa = select_isa();
  return L.dims == 3 ? pick_width<T, 3>(L.width, isa, L.tile[0]) : pick_width<T, 2>(L.width, isa, L.tile[0]);
}

// The kernel polynomial as the vector loops read it: per degree, R = 2 Wp lanes, each weight
// duplicated (re, im), zero beyond the width.
template <class T> std::vector<T> padded_coefficients(const GriddingArgs<T> &a, int wp) {
  const int w = a.layout->width, r = 2 * wp;
  std::vector<T> out(static_cast<std::size_t>((a.degree + 1) * r), T(0));
  for (int d = 0; d <= a.degree; ++d)
    for (int i = 0; i < w; ++i)
      out[static_cast<std::size_t>(d * r + 2 * i)] = out[static_cast<std::size_t>(d * r + 2 * i + 1)] =
          a.coef[d * w + i];
  return out;
}

constexpr i64 kChunk = 2048; // samples per interpolation task

} // namespace

const char *gridding_isa() {
  switch (select_isa()) {
  case Isa::Avx512: return "avx512";
  case Isa::Avx2: return "avx2";
  case Isa::Generic: break;
  }
  return "generic";
}

template <class T>
void grid_scatter(const GriddingArgs<T> &a, const std::complex<T> *c, std::complex<T> *grid,
                  std::vector<std::complex<T>> &scratch, std::size_t max_private_bytes) {
  const Kernels<T> k = kernels_for<T>(*a.layout);
  const std::vector<T> coef2 = padded_coefficients(a, k.padded_width);
  const T *kc = coef2.data();
  const i64 m_count = static_cast<i64>(a.layout->order.size());
  const i64 g_count = a.layout->grid_points();
  T *g = reinterpret_cast<T *>(grid);
  const int nt = std::max(1, a.threads);
  const std::size_t private_bytes = static_cast<std::size_t>(nt - 1) * static_cast<std::size_t>(g_count) * sizeof(std::complex<T>);
  if (nt == 1) {
    std::fill(grid, grid + g_count, std::complex<T>{});
    k.scatter(a, kc, c, 0, m_count, g);
    return;
  }
  if (private_bytes <= max_private_bytes) {
    scratch.resize(static_cast<std::size_t>(nt - 1) * static_cast<std::size_t>(g_count));
    std::complex<T> *priv = scratch.data();
#pragma omp parallel num_threads(nt)
    {
      const int team = omp_get_num_threads(), t = omp_get_thread_num();
      std::complex<T> *mine = t == 0 ? grid : priv + static_cast<i64>(t - 1) * g_count;
      std::fill(mine, mine + g_count, std::complex<T>{});
      k.scatter(a, kc, c, m_count * t / team, m_count * (t + 1) / team, reinterpret_cast<T *>(mine));
#pragma omp barrier
      // Reduce in thread order, each thread a slice of the grid.
      const i64 lo = g_count * t / team, hi = g_count * (t + 1) / team;
      for (int u = 1; u < team; ++u) {
        const std::complex<T> *src = priv + static_cast<i64>(u - 1) * g_count;
        T *dst = reinterpret_cast<T *>(grid + lo);
        const T *s = reinterpret_cast<const T *>(src + lo);
        for (i64 i = 0; i < 2 * (hi - lo); ++i) dst[i] += s[i];
      }
    }
    return;
  }
  std::fill(grid, grid + g_count, std::complex<T>{});
  const i64 chunks = (m_count + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (i64 b = 0; b < chunks; ++b) k.scatter_atomic(a, kc, c, b * kChunk, std::min(m_count, (b + 1) * kChunk), g);
}

template <class T> void grid_gather(const GriddingArgs<T> &a, const std::complex<T> *c, std::complex<T> *grid) {
  const GriddingLayout &L = *a.layout;
  const Kernels<T> k = kernels_for<T>(L);
  const std::vector<T> coef2 = padded_coefficients(a, k.padded_width);
  const T *kc = coef2.data();
  const i64 tiles = L.tiles[0] * L.tiles[1] * L.tiles[2];
  const i64 local_size = 2 * k.local_row * L.tile[1] * L.tile[2];
  const int nt = std::max(1, a.threads);
  std::vector<T> local(static_cast<std::size_t>(local_size * nt));
  T *g = reinterpret_cast<T *>(grid);
#pragma omp parallel num_threads(nt)
  {
    T *mine = local.data() + local_size * omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (i64 t = 0; t < tiles; ++t) k.gather(a, kc, c, t, mine, g);
  }
}

template <class T>
void interpolate(const GriddingArgs<T> &a, const std::complex<T> *grid, std::complex<T> *c) {
  const Kernels<T> k = kernels_for<T>(*a.layout);
  const std::vector<T> coef2 = padded_coefficients(a, k.padded_width);
  const T *kc = coef2.data();
  const i64 m_count = static_cast<i64>(a.layout->order.size());
  const i64 chunks = (m_count + kChunk - 1) / kChunk;
  const T *g = reinterpret_cast<const T *>(grid);
#pragma omp parallel for num_threads(std::max(1, a.threads)) schedule(static)
  for (i64 b = 0; b < chunks; ++b) k.interp(a, kc, g, b * kChunk, std::min(m_count, (b + 1) * kChunk), c);
}

template void grid_scatter<float>(const GriddingArgs<float> &, const std::complex<float> *, std::complex<float> *,
                                  std::vector<std::complex<float>> &, std::size_t);
template void grid_scatter<double>(const GriddingArgs<double> &, const std::complex<double> *,
                                   std::complex<double> *, std::vector<std::complex<double>> &, std::size_t);
template void grid_gather<float>(const GriddingArgs<float> &, const std::complex<float> *, std::complex<float> *);
template void grid_gather<double>(const GriddingArgs<double> &, const std::complex<double> *, std::complex<double> *);
template void interpolate<float>(const GriddingArgs<float> &, const std::complex<float> *, std::complex<float> *);
template void interpolate<double>(const GriddingArgs<double> &, const std::complex<double> *,
                                  std::complex<double> *);

} // namespace mri::detail
