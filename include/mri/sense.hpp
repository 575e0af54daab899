#pragma once
// The SENSE encoding operator E: image -> multi-coil k-space, and its adjoint:
//   (E x)_c = F (S_c .* x),        E^H y = sum_c conj(S_c) .* F^H y_c,
// F the exact non-uniform DFT of fourier.hpp on each coil (coil-major samples, sample m of coil c
// at c * M + m). reconstruct's SENSE normal equations are E^H W E x = E^H W D; this operator
// exposes E itself, for tests, simulation and custom solvers.
//
// Thread safety: as the FourierOperator it holds (CPU: any number of threads at once).
#include <memory>
#include <span>
#include <vector>

#include "mri/coils.hpp"
#include "mri/fourier.hpp"

namespace mri {

class SenseOperator {
public:
  // Throws as FourierOperator, and InvalidArgument when maps is null or on another grid.
  SenseOperator(Trajectory trajectory, Grid grid, std::shared_ptr<const CoilSensitivities> maps,
                OperatorOptions options = {});

  const FourierOperator &fourier() const { return fourier_; }
  const CoilSensitivities &maps() const { return *maps_; }
  int coils() const { return maps_->coils(); }

  // The operator core's form (mri/linear_operator.hpp): E x and E^H y into the caller's vectors,
  // coils() * M samples (coil c's M at c * M). Throws InvalidArgument if the image's grid differs
  // from the operator's or the samples are not coils() * M; values are not checked.
  // mri::forward(E, x) and mri::adjoint(E, y) return a new vector and refuse NaN/Inf.
  using Domain = Image;
  using Range = std::vector<cfloat>;
  Image domain_vector() const { return Image(fourier_.grid()); }
  std::vector<cfloat> range_vector() const;
  void forward(const Image &image, std::span<cfloat> samples) const;
  void adjoint(std::span<const cfloat> samples, Image &image) const;

private:
  void check_coil_samples(std::size_t size, std::size_t m) const;
  FourierOperator fourier_;
  std::shared_ptr<const CoilSensitivities> maps_;
};

} // namespace mri
