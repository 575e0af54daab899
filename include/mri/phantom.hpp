#pragma once
// Modified Shepp-Logan phantoms (2D ellipses, 3D ellipsoids) with their closed-form
// continuous Fourier transform, so simulated k-space never comes from the discrete F that
// reconstructs it (no inverse crime).
//
// Geometry lives in normalised coordinates u in [-1, 1]^d spanning the field of view; a
// grid of n voxels maps voxel coordinate x (in {-n/2 .. n/2-1}) to u = 2x/n. The k-space
// value at k (cycles/FOV) is the continuous transform in voxel units,
//   S(k) = integral rho(x) exp(-i 2 pi sum_a k_a x_a / n_a) dx,
// which is what the unnormalised discrete F of the rasterised image approximates.
//
// Thread safety: Phantom is an immutable value: its const calls may run on any number of threads at
// once; add_noise modifies only its argument (one thread per vector).
#include <cstdint>
#include <vector>

#include "mri/image.hpp"
#include "mri/trajectory.hpp"

namespace mri {

struct Ellipsoid {
  double intensity;       // added inside the ellipsoid
  double a, b, c;         // semi-axes (normalised units); c ignored in 2D
  double x0, y0, z0;      // centre (normalised units)
  double phi_deg;         // rotation about z (degrees)
};

class Phantom {
public:
  static Phantom shepp_logan_2d(); // modified (Toft) Shepp-Logan, 10 ellipses
  static Phantom shepp_logan_3d(); // 3D modified Shepp-Logan, 10 ellipsoids

  int dims() const { return dims_; }
  const std::vector<Ellipsoid> &shapes() const { return shapes_; }

  // The ground truth on `grid`: the mean of supersample^d point samples inside each voxel.
  // Throws InvalidArgument if grid dims differ from the phantom's or supersample < 1.
  Image rasterize(const Grid &grid, int supersample = 4) const;

  // Closed-form k-space at every trajectory point (see the header comment for the units).
  // Throws InvalidArgument if trajectory and grid dims disagree with the phantom's.
  std::vector<cfloat> kspace(const Trajectory &trajectory, const Grid &grid) const;

private:
  Phantom(int dims, std::vector<Ellipsoid> shapes) : dims_(dims), shapes_(std::move(shapes)) {}
  int dims_;
  std::vector<Ellipsoid> shapes_;
};

// Adds complex white Gaussian noise so that the ratio of RMS signal to the noise standard
// deviation (per complex sample) is `snr` (linear, not dB). Reproducible from `seed`.
// Throws InvalidArgument if snr <= 0 or is not finite.
void add_noise(std::vector<cfloat> &samples, double snr, std::uint64_t seed);

} // namespace mri
