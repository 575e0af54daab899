#pragma once
// A simulated receive array for the analytic phantoms, without the inverse crime: each coil's
// sensitivity is a finite Fourier series
//   S_c(x) = sum_f a_cf exp(+i 2 pi f . x / n),   f integer (cycles/FOV), |f_a| <= 2 (2D) or 1 (3D),
// so the k-space of S_c rho is exactly sum_f a_cf rho^(k - f): the phantom's closed-form transform
// at shifted points (BART's `phantom -s` works the same way). The coefficients are the low
// frequencies of smooth coil profiles: coils spread evenly on a ring around the field of view
// (2D), or on two rings above and below the centre (3D), a Gaussian fall-off from each coil and a
// phase that turns with its position, as a surface array sees.
//
// Thread safety: an immutable value; its const calls may run on any number of threads at once.
#include <vector>

#include "mri/coils.hpp"
#include "mri/phantom.hpp"

namespace mri {

class SimulatedCoils {
public:
  // Throws InvalidArgument for dims other than 2 or 3, or coils outside [1, 64].
  SimulatedCoils(int dims, int coils);

  int dims() const { return dims_; }
  int coils() const { return coils_; }
  // The maps on `grid` (the series evaluated at every voxel). Throws InvalidArgument when the
  // grid's dims differ.
  CoilSensitivities maps(const Grid &grid) const;
  // Multi-coil k-space of the phantom seen by the array, coil-major (sample m of coil c at
  // c * M + m), as KSpaceData takes it. Throws as Phantom::kspace and when dims differ.
  std::vector<cfloat> kspace(const Phantom &phantom, const Trajectory &trajectory, const Grid &grid) const;

private:
  struct Term {
    int f[3];
  };
  int dims_, coils_;
  std::vector<Term> terms_;
  std::vector<cdouble> coefficients_; // coil c, term t at c * terms + t
};

} // namespace mri
