#pragma once
// CPU gridding kernels (internal): scatter (GA), gather (RGA) and interpolation on the
// oversampled grid, for T = float or double, 2D and 3D, kernel widths 2..16, compiled per
// ISA (generic, AVX2, AVX-512) and chosen at run time.
#include <complex>
#include <cstdint>
#include <vector>

#include "nufft_plan.hpp"

namespace mri::detail {

// The most coils one gridding call takes.
inline constexpr int kMaxGriddingCoils = 8;

// The distance between consecutive coils' grids (complex values): a grid and a few cache lines,
// so that one point of every coil's grid falls in a different cache set (512^2 grids 2 MiB apart
// all alias, and the scatter of 8 coils is slower than 8 one-coil passes).
inline constexpr std::int64_t kCoilGridPad = 32;
inline std::int64_t coil_grid_stride(const GriddingLayout &L) { return L.grid_points() + kCoilGridPad; }

template <class T> struct GriddingArgs {
  const GriddingLayout *layout = nullptr;
  int degree = 0;
  const T *coef = nullptr; // (degree + 1) x width kernel polynomial
  const T *s = nullptr;    // 3 per sorted sample
  int threads = 1;
};

// For each of `coils` coils (1 to kMaxGriddingCoils): grid b (G complex values, x fastest, at
// grid + b coil_grid_stride) = sum over samples of c[m * coils + b] (m in sorted order) times the kernel. The
// kernel weights are evaluated once per sample for all coils; each grid gets the sums a one-coil
// call would, in the same order (bitwise equal).
// Scatter: per-thread grids reduced in thread order (atomics when they would exceed
// `max_private_bytes`); `scratch` keeps the per-thread grids between calls.
template <class T>
void grid_scatter(const GriddingArgs<T> &a, const std::complex<T> *c, int coils, std::complex<T> *grid,
                  std::vector<std::complex<T>> &scratch, std::size_t max_private_bytes);
// Gather: every tile sums the samples of its list; writes every grid point (no zeroing needed).
template <class T>
void grid_gather(const GriddingArgs<T> &a, const std::complex<T> *c, int coils, std::complex<T> *grid);
// c (sorted order) = kernel-weighted sums of the grid around each sample.
template <class T>
void interpolate(const GriddingArgs<T> &a, const std::complex<T> *grid, std::complex<T> *c);

} // namespace mri::detail
