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
#include <cstdlib>
#include <string>

#include "platform/cpu_isa.hpp"
#include "gridding_cpu_kernels.hpp"

namespace mri::detail {
namespace {

using i64 = std::int64_t;
using gridding_kernels::Kernels;
using Isa = CpuIsa;

// isa_avx512 (gridding_cpu_avx512.cpp) is compiled for AVX-512F and AVX-512VL.
Isa select_isa() { return select_cpu_isa("MRI_GRIDDING_KERNEL", /*avx512_needs_vl=*/true); }

template <class T> Kernels<T> kernels_for(const GriddingLayout &L) {
  const Isa isa = select_isa();
#if MRI_GRIDDING_X86
  if (isa == Isa::Avx512) return gridding_kernels::isa_avx512::table<T>(L.dims, L.width, L.tile[0]);
  if (isa == Isa::Avx2) return gridding_kernels::isa_avx2::table<T>(L.dims, L.width, L.tile[0]);
#endif
  (void)isa;
  return gridding_kernels::isa_generic::table<T>(L.dims, L.width, L.tile[0]);
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

void check_coils(int coils) {
  if (coils < 1 || coils > kMaxGriddingCoils)
    invalid_argument("coils", coils, "one gridding pass takes 1 to " + std::to_string(kMaxGriddingCoils) + " coils");
}

} // namespace

template <class T>
void grid_scatter(const GriddingArgs<T> &a, const std::complex<T> *c, int coils, std::complex<T> *grid,
                  std::vector<std::complex<T>> &scratch, std::size_t max_private_bytes) {
  check_coils(coils);
  const Kernels<T> k = kernels_for<T>(*a.layout);
  const std::vector<T> coef2 = padded_coefficients(a, k.padded_width);
  const T *kc = coef2.data();
  const i64 m_count = static_cast<i64>(a.layout->order.size());
  const i64 g_count = coil_grid_stride(*a.layout) * coils; // all the coils' grids (and pads), one after another
  T *g = reinterpret_cast<T *>(grid);
  const int nt = std::max(1, a.threads);
  const std::size_t private_bytes = static_cast<std::size_t>(nt - 1) * static_cast<std::size_t>(g_count) * sizeof(std::complex<T>);
  if (nt == 1) {
    std::fill(grid, grid + g_count, std::complex<T>{});
    k.scatter(a, kc, c, coils, 0, m_count, g);
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
      k.scatter(a, kc, c, coils, m_count * t / team, m_count * (t + 1) / team, reinterpret_cast<T *>(mine));
#pragma omp barrier
      // Reduce in thread order, each thread a slice of the grids.
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
  for (i64 b = 0; b < chunks; ++b)
    k.scatter_atomic(a, kc, c, coils, b * kChunk, std::min(m_count, (b + 1) * kChunk), g);
}

template <class T>
void grid_gather(const GriddingArgs<T> &a, const std::complex<T> *c, int coils, std::complex<T> *grid) {
  check_coils(coils);
  const GriddingLayout &L = *a.layout;
  const Kernels<T> k = kernels_for<T>(L);
  const std::vector<T> coef2 = padded_coefficients(a, k.padded_width);
  const T *kc = coef2.data();
  const i64 tiles = L.tiles[0] * L.tiles[1] * L.tiles[2];
  const i64 local_size = 2 * k.local_row * L.tile[1] * L.tile[2] * coils; // one tile per coil
  const int nt = std::max(1, a.threads);
  std::vector<T> local(static_cast<std::size_t>(local_size * nt));
  T *g = reinterpret_cast<T *>(grid);
#pragma omp parallel num_threads(nt)
  {
    T *mine = local.data() + local_size * omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (i64 t = 0; t < tiles; ++t) k.gather(a, kc, c, coils, t, mine, g);
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

template void grid_scatter<float>(const GriddingArgs<float> &, const std::complex<float> *, int, std::complex<float> *,
                                  std::vector<std::complex<float>> &, std::size_t);
template void grid_scatter<double>(const GriddingArgs<double> &, const std::complex<double> *, int,
                                   std::complex<double> *, std::vector<std::complex<double>> &, std::size_t);
template void grid_gather<float>(const GriddingArgs<float> &, const std::complex<float> *, int, std::complex<float> *);
template void grid_gather<double>(const GriddingArgs<double> &, const std::complex<double> *, int,
                                  std::complex<double> *);
template void interpolate<float>(const GriddingArgs<float> &, const std::complex<float> *, std::complex<float> *);
template void interpolate<double>(const GriddingArgs<double> &, const std::complex<double> *,
                                  std::complex<double> *);

} // namespace mri::detail
