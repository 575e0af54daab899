#pragma once
// The CPU gridding kernels' bodies (internal to lib/gridding_cpu*.cpp): the scatter, gather and
// interpolation passes as always-inline templates, and MRI_GRIDDING_ISA, which compiles them into
// one set of entry points per ISA. Each ISA has its own file (gridding_cpu_generic.cpp,
// gridding_cpu_avx2.cpp, gridding_cpu_avx512.cpp: 2 types x 2 dimensions x 15 widths x 4 passes
// each, so they compile in parallel); gridding_cpu.cpp picks one at run time.
#include <algorithm>
#include <atomic>
#include <complex>
#include <cstdint>
#include <cstring>
#include <utility>

#include "gridding_cpu.hpp"
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

namespace mri::detail::gridding_kernels {

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
// m of each of `coils` coils (c[m * coils + b], coil b's grid at grid + b coil_grid_stride),
// weighted, into its window (ScatterAtomic: with atomic adds, scalar); Interpolate (coils = 1)
// sets out[m] to the weighted sum of its window of `grid`. One body, so that both walk a window
// alike: W (2D) or W^2 (3D) rows wrapped on the periodic grid, each one vector of 2 Wp values
// unless its x-run wraps (then value by value). The weights are evaluated once per sample for all
// coils; each coil's grid gets the same products in the same order as a one-coil pass.
enum class Pass { Scatter, ScatterAtomic, Interpolate };

inline constexpr int kMaxCoilBlock = kMaxGriddingCoils;

// One window row at x-offset jx: Scatter adds w * v into it, Interpolate adds w times it to v.
template <class T, int W, Pass P, class GridValue>
MRI_ALWAYS_INLINE void row_pass(GridValue *__restrict row, i64 jx, i64 gx, bool contiguous, T w,
                                typename Simd<T, W>::V &v) {
  using S = Simd<T, W>;
  using V = typename S::V;
  if constexpr (P != Pass::Interpolate) {
    if (contiguous) {
      T *p = row + 2 * jx;
      S::store(p, S::load(p) + w * v);
    } else {
      const V wv = w * v;
      for (int i = 0; i < W; ++i) {
        i64 x = jx + i;
        if (x >= gx) x -= gx;
        add_to<T, P == Pass::ScatterAtomic>(row + 2 * x, wv[2 * i]);
        add_to<T, P == Pass::ScatterAtomic>(row + 2 * x + 1, wv[2 * i + 1]);
      }
    }
  } else if (contiguous) {
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

// GridValue: T (the scatters write the grid) or const T (interpolation reads it).
template <class T, int D, int W, Pass P, class GridValue>
MRI_ALWAYS_INLINE void window_pass(const GriddingArgs<T> &a, const T *coef2, const std::complex<T> *c, int coils,
                                   i64 begin, i64 end, GridValue *__restrict grid, std::complex<T> *out) {
  using S = Simd<T, W>;
  using V = typename S::V;
  constexpr bool kScatter = P != Pass::Interpolate;
  const GriddingLayout &L = *a.layout;
  const i64 gx = L.g[0], gy = L.g[1], gz = L.g[2], coil_stride = 2 * coil_grid_stride(L);
  const int nv = kScatter ? coils : 1;
  constexpr int WZ = D == 3 ? W : 1;
  for (i64 m = begin; m < end; ++m) {
    const Weights<T, D, W> k(a, coef2, m);
    const std::int32_t *j = &L.j0[static_cast<std::size_t>(3 * m)];
    V v[kScatter ? kMaxCoilBlock : 1]; // Scatter: the weighted sample per coil; Interpolate: the row sum
    if constexpr (kScatter) {
      for (int b = 0; b < nv; ++b) v[b] = k.x * S::complex_broadcast(c + m * coils + b);
    } else {
      v[0] = V{};
    }
    const i64 jx = j[0];
    const bool contiguous = P != Pass::ScatterAtomic && jx + S::Wp <= gx;
    for (int dz = 0; dz < WZ; ++dz) {
      i64 z = D == 3 ? j[2] + dz : 0;
      if (z >= gz) z -= gz;
      for (int dy = 0; dy < W; ++dy) {
        i64 y = j[1] + dy;
        if (y >= gy) y -= gy;
        const T w = k.wz(dz) * k.wy(dy);
        GridValue *row = grid + 2 * ((z * gy + y) * gx);
        for (int b = 0; b < nv; ++b) row_pass<T, W, P>(row + b * coil_stride, jx, gx, contiguous, w, v[b]);
      }
    }
    if constexpr (!kScatter) {
      const V prod = v[0] * k.x;
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

// One tile of the gather for `coils` coils (sample m of coil b at c[m * coils + b], coil b's
// grid at grid + b coil_grid_stride): sums its list into `local` (one block of local_size values per coil; x-halo
// on both sides, rows and planes clipped to the tile) and writes the tile's interior into each
// grid. Each entry's weights are evaluated once for all coils.
template <class T, int D, int W>
MRI_ALWAYS_INLINE void gather_body(const GriddingArgs<T> &a, const T *coef2, const std::complex<T> *c, int coils,
                                   i64 t, T *__restrict local, T *__restrict grid) {
  using S = Simd<T, W>;
  const GriddingLayout &L = *a.layout;
  const i64 tx = L.tile[0], ty = L.tile[1], tz = L.tile[2];
  const i64 lx = local_row<T, W>(tx), local_size = 2 * lx * ty * tz;
  const i64 ix = t % L.tiles[0], iy = (t / L.tiles[0]) % L.tiles[1], iz = t / (L.tiles[0] * L.tiles[1]);
  std::fill(local, local + local_size * coils, T(0));
  const GriddingLayout::Entry *e = L.entries.data() + L.offsets[static_cast<std::size_t>(t)];
  const GriddingLayout::Entry *e_end = L.entries.data() + L.offsets[static_cast<std::size_t>(t) + 1];
  for (; e != e_end; ++e) {
    const i64 m = e->sample;
    const Weights<T, D, W> k(a, coef2, m);
    typename S::V v[kMaxCoilBlock];
    for (int b = 0; b < coils; ++b) v[b] = k.x * S::complex_broadcast(c + m * coils + b);
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
        const T w = k.wz(dz) * k.wy(dy);
        for (int b = 0; b < coils; ++b, p += local_size) S::store(p, S::load(p) + w * v[b]);
      }
    }
  }
  const i64 gx = L.g[0], gy = L.g[1], stride = coil_grid_stride(L);
  for (int b = 0; b < coils; ++b)
    for (i64 zl = 0; zl < tz; ++zl)
      for (i64 yl = 0; yl < ty; ++yl)
        std::memcpy(grid + 2 * (b * stride + ((iz * tz + zl) * gy + iy * ty + yl) * gx + ix * tx),
                    local + b * local_size + 2 * (lx * (zl * ty + yl) + (W - 1)), sizeof(T) * 2 * static_cast<std::size_t>(tx));
}

template <class T> struct Kernels {
  // c, coils: the samples of `coils` coils (coil fastest); coil b's grid at b coil_grid_stride.
  void (*scatter)(const GriddingArgs<T> &, const T *, const std::complex<T> *, int, i64, i64, T *);
  void (*scatter_atomic)(const GriddingArgs<T> &, const T *, const std::complex<T> *, int, i64, i64, T *);
  void (*gather)(const GriddingArgs<T> &, const T *, const std::complex<T> *, int, i64, T *, T *);
  void (*interp)(const GriddingArgs<T> &, const T *, const T *, i64, i64, std::complex<T> *);
  int padded_width;
  i64 local_row;
};

// One set of entry points per ISA; the bodies are inlined into each, so the target
// attribute decides the vector width. NS::table<T>(dims, width, tile_x): the set of one kernel.
#define MRI_GRIDDING_ISA(NS, ATTR)                                                                       \
  namespace NS {                                                                                         \
  template <class T, int D, int W>                                                                       \
  ATTR void scatter(const GriddingArgs<T> &a, const T *k, const std::complex<T> *c, int n, i64 b, i64 e,     \
                    T *g) {                                                                              \
    window_pass<T, D, W, Pass::Scatter>(a, k, c, n, b, e, g, nullptr);                                   \
  }                                                                                                      \
  template <class T, int D, int W>                                                                       \
  ATTR void scatter_atomic(const GriddingArgs<T> &a, const T *k, const std::complex<T> *c, int n, i64 b,    \
                           i64 e, T *g) {                                                                \
    window_pass<T, D, W, Pass::ScatterAtomic>(a, k, c, n, b, e, g, nullptr);                             \
  }                                                                                                      \
  template <class T, int D, int W>                                                                       \
  ATTR void gather(const GriddingArgs<T> &a, const T *k, const std::complex<T> *c, int n, i64 t, T *local, \
                   T *g) {                                                                               \
    gather_body<T, D, W>(a, k, c, n, t, local, g);                                                       \
  }                                                                                                      \
  template <class T, int D, int W>                                                                       \
  ATTR void interp(const GriddingArgs<T> &a, const T *k, const T *g, i64 b, i64 e, std::complex<T> *out) { \
    window_pass<T, D, W, Pass::Interpolate>(a, k, nullptr, 1, b, e, g, out);                                \
  }                                                                                                      \
  template <class T, int D, int W> Kernels<T> kernels(i64 tile_x) {                                      \
    return {&scatter<T, D, W>, &scatter_atomic<T, D, W>, &gather<T, D, W>, &interp<T, D, W>,             \
            Simd<T, W>::Wp, local_row<T, W>(tile_x)};                                                    \
  }                                                                                                      \
  template <class T, int D, int W = KaiserBessel::kMinWidth> Kernels<T> by_width(int width, i64 tile_x) { \
    if constexpr (W > KaiserBessel::kMaxWidth) {                                                         \
      (void)tile_x;                                                                                      \
      invalid_argument("kernel width", width, "must be in [2, 16]");                                     \
    } else {                                                                                             \
      if (width == W) return kernels<T, D, W>(tile_x);                                                   \
      return by_width<T, D, W + 1>(width, tile_x);                                                       \
    }                                                                                                    \
  }                                                                                                      \
  template <class T> Kernels<T> table(int dims, int width, i64 tile_x) {                                 \
    return dims == 3 ? by_width<T, 3>(width, tile_x) : by_width<T, 2>(width, tile_x);                    \
  }                                                                                                      \
  template Kernels<float> table<float>(int, int, i64);                                                   \
  template Kernels<double> table<double>(int, int, i64);                                                 \
  }

// The per-ISA tables, each made by MRI_GRIDDING_ISA in its own file.
namespace isa_generic {
template <class T> Kernels<T> table(int dims, int width, i64 tile_x);
}
#if MRI_GRIDDING_X86
namespace isa_avx2 {
template <class T> Kernels<T> table(int dims, int width, i64 tile_x);
}
namespace isa_avx512 {
template <class T> Kernels<T> table(int dims, int width, i64 tile_x);
}
#endif

} // namespace mri::detail::gridding_kernels
