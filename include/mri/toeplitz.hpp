#pragma once
// Q and the Toeplitz normal operator. On a Cartesian voxel grid
//   (F^H W F x)_n = sum_n' Q(x_n - x_n') x_n',   Q(d) = sum_m w_m exp(+i 2 pi k_m . d / n),
// a convolution whose offsets d span {-(n-1) .. n-1}: embedded in a 2n periodic grid it is
// pad -> FFT -> multiply by FFT(Q) -> IFFT -> crop (two FFTs per application).
#include <memory>
#include <span>
#include <vector>

#include "mri/image.hpp"
#include "mri/linear_operator.hpp" // the value forms mri::forward / mri::adjoint
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace mri {

class QOperator {
public:
  // Computes Q on grid.doubled() with the exact sum (Q of Stone et al. 2008) and keeps its FFT.
  // weights: empty (all ones) or one non-negative weight per sample. The trajectory's range as
  // FourierOperator's (Trajectory::check_range).
  QOperator(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
            OperatorOptions options = {});
  ~QOperator();
  QOperator(QOperator &&) noexcept;
  QOperator &operator=(QOperator &&) noexcept;

  // The operator from a Toeplitz spectrum (mri/toeplitz_cache.hpp: Re(FFT(Q)) / L on
  // grid.doubled(), FFT order), e.g. read from the cache. Q itself is not kept: q() is empty.
  // Throws InvalidArgument if spectrum.size() != grid.doubled().voxels().
  static QOperator from_spectrum(const Grid &grid, std::span<const float> spectrum);
  // The operator from Q itself on grid.doubled() (q()'s layout), e.g. computed by nufft_q. Throws
  // InvalidArgument if q is on another grid or holds NaN/Inf.
  static QOperator from_q(const Grid &grid, Image q);

  const Grid &grid() const { return grid_; }
  // Q(d) on the doubled grid, d in {-n .. n-1} per axis, index order as any Image (empty for an
  // operator made from_spectrum).
  const Image &q() const { return q_; }
  // The real Toeplitz spectrum of this operator, what the cache stores (toeplitz_cache.hpp).
  std::vector<float> spectrum() const;

  // The operator core's form (mri/linear_operator.hpp): out = F^H W F in, a self-adjoint operator
  // on images of grid() (InvalidArgument for another grid; values not checked: mri::forward(Q, x)
  // returns a new image and refuses NaN/Inf). It is the normal operator of F: compose it as it
  // is, not through normal_of (which would square it). The plan owns its padded buffer and FFTW
  // plans: forward() is not re-entrant on one QOperator (use one per thread; different QOperators
  // apply concurrently, tests/concurrency). grid(), q() and spectrum() only read and may run on
  // any thread, also while another thread applies.
  using Domain = Image;
  using Range = Image;
  Image domain_vector() const { return Image(grid_); }
  Image range_vector() const { return Image(grid_); }
  void forward(const Image &in, Image &out) const;
  void adjoint(const Image &in, Image &out) const { forward(in, out); }

private:
  explicit QOperator(const Grid &grid);
  void make_kernel(); // plan_ with FFT(q_) / L
  struct Plan;
  Grid grid_;
  Image q_;
  std::unique_ptr<Plan> plan_;
};

} // namespace mri
