#pragma once
// The SENSE Toeplitz normal of a 2D image, all coils in one fused pass:
//   out = sum_c conj(S_c) .* crop(F^-1 (K .* F pad(S_c .* x)))
// with K QOperator's real spectrum on the doubled grid (mri/toeplitz.hpp). The same operator as
// SenseNormal (mri_backend/sense.hpp) over QOperator::forward, equal to float rounding, in about
// half its time on the CS-2D problem (256^2, 4 coils; benchmarks/cs): there each application ran,
// per coil, seven OpenMP loops over images and the doubled grid (expand, zero fill, pad, two
// pruned FFTs of two passes each, the kernel product, crop, combine), whose zero fill, copies and
// gathers of the doubled grid cost as much as the FFTs. Here, per group of coils:
//   1. rows: S_c .* x written into the first ny rows of the doubled width, the rest of each row
//      zero, transformed along x in place (the ny - 2ny rows are zero: never stored);
//   2. columns, kBlock at a time per thread: gathered into line buffers with the lower half
//      zero, transformed along y, times K, transformed back, and only the image's ny rows
//      scattered back;
//   3. rows back along x, and the coil sum conj(S_c) .* (first nx values) into out.
// The forward transform runs x then y as QOperator's pruned one does; the inverse runs y then x
// (QOperator: x then y), so the two differ by float rounding only. Every output value is made by
// the same operations in the same order (the coils summed in index order), so the result is
// bitwise the same for any number of threads.
#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

#include "mri/coils.hpp"
#include "mri/image.hpp"
#include "mri/toeplitz.hpp"

namespace mri::detail {

class SenseToeplitz2d {
public:
  // grid.nz() == 1 and nx, ny > 1 (applies_to); maps on q.grid(), kept by reference. Throws
  // Error when FFTW cannot plan.
  SenseToeplitz2d(const QOperator &q, const CoilSensitivities &maps);
  ~SenseToeplitz2d();
  SenseToeplitz2d(SenseToeplitz2d &&) noexcept;
  SenseToeplitz2d &operator=(SenseToeplitz2d &&) noexcept;

  static bool applies_to(const Grid &grid) { return grid.nz() == 1 && grid.nx() > 1 && grid.ny() > 1; }

  // out = sum_c conj(S_c) .* N(S_c .* x) (assigned; no regulariser). Not re-entrant on one
  // object; objects on different threads run concurrently.
  void apply(const Image &x, Image &out) const;

private:
  struct Plans;
  void group(int first_coil, int coils, const cfloat *x, cfloat *out) const;
  Grid grid_;
  std::int64_t px_, py_; // the doubled grid
  const CoilSensitivities *maps_;
  std::vector<float> kernel_columns_; // K transposed: column x's py values at x * py
  int threads_;
  std::unique_ptr<Plans> plans_;
};

} // namespace mri::detail
