#pragma once
// The exact non-uniform DFT between a Cartesian image grid and a trajectory:
//   forward  (F x)_m   = sum_n x_n exp(-i 2 pi k_m . x_n / n)      image -> k-space
//   adjoint  (F^H y)_n = sum_m y_m exp(+i 2 pi k_m . x_n / n)      k-space -> image
// Unnormalised (Stone et al. 2008's sums); BART's nufft is this times 1/sqrt(voxels), see bart.hpp.
#include <memory>
#include <span>
#include <vector>

#include "mri/image.hpp"
#include "mri/kspace.hpp"
#include "mri/linear_operator.hpp" // the value forms mri::forward / mri::adjoint
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace mri {

namespace detail {
class DeviceFourier; // the CUDA backend's plan, behind the plugin interface
}

// Copies share one device plan (operators are cheap values).
// Thread safety: on the CPU backend forward/adjoint only read the operator: any number of threads
// may call them at once on one operator or on copies of it (tests/concurrency, bitwise equal to
// serial calls). On the CUDA backend copies share the device plan and its buffers: forward/adjoint
// on one operator or its copies must not run concurrently; make one operator per thread.
class FourierOperator {
public:
  // Throws InvalidArgument when the trajectory is empty, its dims differ from the grid's, or
  // a sample lies beyond 3n/2 (Trajectory::check_range); samples outside [-n/2, n/2) are the
  // same DFT samples as their periodic images and are used as such. Unsupported when backend =
  // Cuda cannot run here. options.backend is resolved here (Auto -> Cuda or Cpu): options()
  // tells which runs.
  FourierOperator(Trajectory trajectory, Grid grid, OperatorOptions options = {});

  // The samples as the operator uses them: wrapped into [-n/2, n/2) (Trajectory::wrapped).
  const Trajectory &trajectory() const { return trajectory_; }
  const Grid &grid() const { return grid_; }
  const OperatorOptions &options() const { return options_; }

  // The operator core's form (mri/linear_operator.hpp): F x and F^H y into the caller's vectors;
  // the samples any M contiguous values (one coil's of a coil-major array, a std::vector). Throws
  // InvalidArgument if the image's grid differs from grid() or the samples are not M; values are
  // not checked (a solver checks its own). mri::forward(F, x) and mri::adjoint(F, y) return a
  // new vector and refuse NaN/Inf.
  using Domain = Image;
  using Range = std::vector<cfloat>;
  Image domain_vector() const { return Image(grid_); }
  std::vector<cfloat> range_vector() const { return std::vector<cfloat>(trajectory_.size()); }
  void forward(const Image &image, std::span<cfloat> samples) const;
  void adjoint(std::span<const cfloat> samples, Image &image) const;

  // F x and F^H y in complex double end to end: the inputs are not rounded to float and the sums
  // run in double (CPU: the direct sums of Precision::Float64; CUDA: the SeparableGemm policy's
  // ZGEMM), whatever options().precision says. The image holds grid().voxels() values in the
  // Image's order (x fastest), the samples trajectory().size(). What float64 work needs: a
  // reference, or a gradient check by finite differences (the Python package's gradcheck).
  // Throws InvalidArgument when a size differs.
  void forward(std::span<const cdouble> image, std::span<cdouble> samples) const;
  void adjoint(std::span<const cdouble> samples, std::span<cdouble> image) const;

  // forward/adjoint on the caller's device memory (options().backend == Cuda), with
  // NufftOperator::forward_device's rules: device or managed memory of the operator's device,
  // ordered after the work queued there, no host copy. Unsupported on the CPU backend.
  void forward_device(const cfloat *image, cfloat *samples) const;
  void adjoint_device(const cfloat *samples, cfloat *image) const;

private:
  Trajectory trajectory_;
  Grid grid_;
  OperatorOptions options_;
  std::shared_ptr<detail::DeviceFourier> device_plan_; // null on the CPU backend
};

// F^H D with density weights: the right-hand side of the normal equations (Stone et al.'s FhD).
// Thread safety: as its FourierOperator.
class FhDOperator {
public:
  FhDOperator(Trajectory trajectory, Grid grid, OperatorOptions options = {});
  // F^H (w .* D). Throws InvalidArgument if the data's trajectory size differs from M.
  Image apply(const KSpaceData &data) const;
  const FourierOperator &fourier() const { return fourier_; }

private:
  FourierOperator fourier_;
};

} // namespace mri
