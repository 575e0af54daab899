#pragma once
// The time-segmented SENSE Toeplitz normal of a 2D image, all coils and segments in one fused pass:
//   out = sum_c conj(S_c) .* sum_l conj(E_l) .* crop(F^-1 sum_l' K_ll' F pad(E_l' .* S_c .* x))
// with K_ll' the segmented kernels (segmented_kernels.hpp) and E_l the segmentation's voxel
// phases: SenseNormal over SegmentedToeplitz::forward, equal to float rounding, without its full
// doubled-grid buffers per segment and coil (zero fill, two pruned transforms of two passes each,
// the L^2 spectral product as its own pass over L grids, the crop) and with each kernel read once
// per group of coils instead of once per coil. The layout is SenseToeplitz2d's
// (lib/toeplitz/sense_toeplitz_2d.hpp), per group of coils:
//   1. rows: S_c .* E_l .* x written into the first ny rows of the doubled width, the rest of each
//      row zero, transformed along x (rows ny .. 2ny - 1 are zero: never stored);
//   2. columns, kColumns at a time per thread: every coil's L segments' columns gathered (the
//      lower half zero), transformed along y, the L x L product (segment_product.hpp; each chunk
//      of kernels applied to all the group's coils while in L1), transformed back, and only the
//      image's ny rows scattered back;
//   3. rows back along x, and out += conj(S_c) .* sum_l conj(E_l) .* (the first nx values).
// Every transform runs out of place, through per-thread staging buffers.
// Every output value is made by the same operations in the same order (coils and segments summed
// in index order), so the result is bitwise the same for any number of threads.
#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "mri/coils.hpp"
#include "mri/image.hpp"
#include "mri/offresonance.hpp"
#include "segment_product.hpp"

namespace mri::detail {

class SegmentedSenseToeplitz2d {
public:
  // grid.nz() == 1 and nx, ny > 1 (applies_to); maps on op.grid(), kept by reference; weights
  // as SegmentedToeplitz's. Throws InvalidArgument for those, Error when FFTW cannot plan or
  // memory runs out.
  SegmentedSenseToeplitz2d(const SegmentedFieldOperator &op, std::span<const float> weights, const CoilSensitivities &maps);
  ~SegmentedSenseToeplitz2d();
  SegmentedSenseToeplitz2d(SegmentedSenseToeplitz2d &&) noexcept;
  SegmentedSenseToeplitz2d &operator=(SegmentedSenseToeplitz2d &&) noexcept;

  static bool applies_to(const Grid &grid) { return grid.nz() == 1 && grid.nx() > 1 && grid.ny() > 1; }
  // The bytes its kernels and buffers take (L(L+1)/2 spectra on the doubled grid, the coil group's
  // rows, and while the kernels are made a scratch grid and a chunk of 8 kernels).
  static std::size_t bytes(const Grid &grid, int segments);

  // out = sum_c conj(S_c) .* N(S_c .* x) (assigned; no regulariser). Not re-entrant on one object.
  void apply(const Image &x, Image &out) const;

private:
  struct Plans;
  void group(int first_coil, int coils, const cfloat *x, cfloat *out) const;
  Grid grid_;
  int segments_;
  std::int64_t px_, py_; // the doubled grid
  const CoilSensitivities *maps_;
  std::shared_ptr<const TimeSegmentation> segmentation_;
  std::unique_ptr<float[]> kernel_columns_; // column x's kernels at x * segment_kernel_line(L, py) (segment_product.hpp)
  SegmentProduct product_;
  int threads_;
  std::unique_ptr<Plans> plans_;
};

} // namespace mri::detail
