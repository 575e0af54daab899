#pragma once
// A free-breathing acquisition of the analytic phantom, simulated exactly in k-space
// (docs/dynamic.md): the object moves by an affine map per readout, and every readout is sampled
// from the continuous Fourier transform of the moved object (no discrete F: no inverse crime).
//
// Affine motion in voxel coordinates (x in {-n/2 .. n/2-1} per axis, mri/grid.hpp):
//   rho'(x) = rho(A^{-1} (x - t)),   i.e. the point y of the object moves to A y + t.
// With S(k) = integral rho(x) exp(-2 pi i sum_a k_a x_a / n_a) dx (mri/phantom.hpp's units, k in
// cycles/FOV), substituting x = A y + t gives
//   S'(k) = |det A| exp(-2 pi i sum_a k_a t_a / n_a) S(k'),   k'_b = n_b sum_a A_ab k_a / n_a,
// which is S(A^T k) on an isotropic grid. Coils fixed in space (SimulatedCoils: maps as finite
// Fourier series, S_c(x) = sum_f a_cf exp(+2 pi i f.x/n)) see sum_f a_cf S'(k - f).
//
// Breathing: a state s(t) >= 0 per readout (0 = end-expiration) drives a superior-inferior
// translation of amplitude_voxels * s and an anterior-posterior stretch 1 + ap_expansion * s about
// the centre of the field of view. Axes: 3D z = superior-inferior, y = anterior-posterior (the head
// phantom's axial slices); 2D y = superior-inferior, x = the stretched axis (a coronal-like view).
// The trace is Lujan et al.'s model (Med. Phys. 26:715 (1999)), s = a_j sin^(2n)(pi phase) in
// breathing cycle j, which dwells at end-expiration; each cycle's period and amplitude vary by
// `irregularity` (relative standard deviation, reproducible from the seed).
//
// Thread safety: pure functions of their arguments; any number of threads may call them at once.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "mri/frames.hpp"
#include "mri/motion.hpp"
#include "mri/phantom.hpp"

namespace mri {

struct AffineMotion {
  std::array<std::array<double, 3>, 3> matrix{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}; // A (row-major)
  std::array<double, 3> translation{0, 0, 0};                                      // t, voxels
};

struct BreathingOptions {
  double amplitude_voxels = 4;   // superior-inferior translation at a cycle of amplitude 1
  double ap_expansion = 0.05;    // anterior-posterior stretch at amplitude 1 (relative)
  double period_seconds = 4;     // mean breathing period
  double readout_seconds = 0.005; // TR: readout r at r * TR
  int sharpness = 3;             // n of Lujan's sin^(2n) (1: a plain sinusoid in time)
  double irregularity = 0.1;     // relative std of each cycle's period and amplitude (0: regular)
  std::uint64_t seed = 1;
};

// The breathing state of every readout (0 = end-expiration, about 1 at end-inspiration).
// Throws InvalidArgument naming the option (readouts < 1, a non-positive period or TR,
// sharpness outside [1, 8], irregularity outside [0, 0.5), non-finite amplitudes).
std::vector<double> breathing_trace(std::int64_t readouts, const BreathingOptions &options);

// The affine motion at state s on a grid of `dims` dimensions (header comment).
AffineMotion breathing_motion(double state, int dims, const BreathingOptions &options);

// Multi-coil k-space of the phantom moving by motion[r] during readout r (samples_per_readout
// samples each, consecutive), coil-major as KSpaceData stores it; coils == 1: no coil maps, else
// SimulatedCoils(dims, coils). Throws InvalidArgument when samples_per_readout does not divide the
// trajectory, motion.size() is not the readout count, an A is singular or not finite, or as
// Phantom::kspace and SimulatedCoils.
std::vector<cfloat> moving_phantom_kspace(const Phantom &phantom, const Trajectory &trajectory, const Grid &grid,
                                          int samples_per_readout, std::span<const AffineMotion> motion,
                                          int coils = 1);

// The phantom moved by `motion` on `grid`: the mean of supersample^d point samples per voxel, as
// Phantom::rasterize (whose identity-motion result it equals up to float rounding).
Image moved_phantom_image(const Phantom &phantom, const Grid &grid, const AffineMotion &motion, int supersample = 4);

// The true displacement field from state `fixed` to state `moving` in MotionEstimator's convention
// (moving(x + w(x)) = fixed(x)): w(x) = A_m A_f^{-1} (x - t_f) + t_m - x, in voxels.
DisplacementField motion_displacement(const Grid &grid, const AffineMotion &fixed, const AffineMotion &moving);

// A complete simulated acquisition: the trace, the motion per readout, and the data (noise at a
// signal-to-noise ratio `snr` as mri::add_noise, none when snr == 0).
struct BreathingAcquisition {
  KSpaceData data;
  ReadoutLayout layout;
  std::vector<double> trace;         // breathing_trace
  std::vector<AffineMotion> motion;  // per readout
};
BreathingAcquisition simulate_breathing(const Phantom &phantom, const Trajectory &trajectory, const Grid &grid,
                                        int samples_per_readout, int coils, const BreathingOptions &options,
                                        double snr = 0, std::uint64_t noise_seed = 1);

} // namespace mri
