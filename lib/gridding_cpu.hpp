#pragma once
// CPU gridding kernels (internal): scatter (GA), gather (RGA) and interpolation on the
// oversampled grid, for T = float or double, 2D and 3D, kernel widths 2..16, compiled per
// ISA (generic, AVX2, AVX-512) and chosen at run time.
#include <complex>
#include <cstdint>
#include <vector>

#include "nufft_plan.hpp"

namespace mri::detail {

template <class T> struct GriddingArgs {
  const GriddingLayout *layout = nullptr;
  int degree = 0;
  const T *coef = nullptr; // (degree + 1) x width kernel polynomial
  const T *s = nullptr;    // 3 per sorted sample
  int threads = 1;
};

// grid (G complex values, x fastest) = sum over samples of c (sorted order) times the kernel.
// Scatter: per-thread grids reduced in thread order (atomics when they would exceed
// `max_private_bytes`); `scratch` keeps the per-thread grids between calls.
template <class T>
void grid_scatter(const GriddingArgs<T> &a, const std::complex<T> *c, std::complex<T> *grid,
                  std::vector<std::complex<T>> &scratch, std::size_t max_private_bytes);
// Gather: every tile sums the samples of its list; writes every grid point (no zeroing needed).
template <class T>
void grid_gather(const GriddingArgs<T> &a, const std::complex<T> *c, std::complex<T> *grid);
// c (sorted order) = kernel-weighted sums of the grid around each sample.
template <class T>
void interpolate(const GriddingArgs<T> &a, const std::complex<T> *grid, std::complex<T> *c);

} // namespace mri::detail
