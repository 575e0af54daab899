#pragma once
// Density compensation weights: the k-space area each sample stands for, in (cycles/FOV)^d.
// With these weights sum_m w_m D_m exp(+i 2 pi k_m . x / n) approximates the continuous
// inverse transform, which is voxels() times the image (see gridding.hpp): a Cartesian
// Nyquist grid gets w = 1 everywhere. Use them as KSpaceData weights (F^H W D, Q with W) or
// for the gridding reconstruction.
//
// Thread safety: the functions here make their own NUFFT plans per call: any number of threads may
// call them at once, on the same (const) trajectory too.
#include <vector>

#include "mri/grid.hpp"
#include "mri/nufft.hpp"
#include "mri/trajectory.hpp"

namespace mri::density {

// Analytic ramp for full-diameter radial spokes as traj::radial lays them out (`spokes`
// consecutive runs of M / spokes readout samples, readout spacing 2/readout of the half
// extent): w = pi |u| du / spokes in normalised units u = k / (n/2), scaled by the area of a
// unit of u, (nx/2)(ny/2); the DC sample of each spoke gets pi (du/2)^2 / spokes. Exact for
// uniform spoke angles, the usual approximation for golden-angle ordering.
// Throws InvalidArgument if the trajectory is not 2D, grid dims differ, spokes <= 0 or M is
// not a multiple of spokes.
std::vector<float> radial(const Trajectory &trajectory, const Grid &grid, int spokes);

// Analytic weights for traj::spiral's Archimedean interleaves (`interleaves` consecutive runs,
// arms `undersampling` cycles/FOV apart along the longer axis): the sample's arc step across
// the local arm spacing, w = spacing |u x du| / |u| (du the central difference along the
// interleave); the centre sample gets the disc inside the first step, shared by the arms.
// Throws InvalidArgument for a non-2D trajectory, interleaves <= 0, M not a multiple of
// interleaves, undersampling <= 0.
std::vector<float> spiral(const Trajectory &trajectory, const Grid &grid, int interleaves,
                          double undersampling = 1.0);

struct PipeMenonOptions {
  int iterations = 20;
  // The Kaiser-Bessel kernel of the convolution C: width in oversampled-grid points and the
  // oversampling; it spans width / oversampling cycles/FOV (default 2.7). The default keeps a
  // Cartesian grid's weights at 1 (W 4 at oversampling 2 aliases on a regular grid and gives it
  // about 0.91) and matches the analytic ramp on radial data (both tested:
  // tests/nufft/test_density.cpp); wider kernels (W 6 at 1.25) blur the radial centre.
  int width = 4;
  double oversampling = 1.5;
  int threads = 0;
};

struct PipeMenonResult {
  std::vector<float> weights;
  // RMS over samples of (C w)_m - 1 before each update (residuals[0] for w = 1), and after
  // the last: iterations + 1 values. Pipe-Menon drives (C w)_m -> 1.
  std::vector<double> residuals;
};

// Pipe and Menon (MRM 1999): w <- w / (C w), C the convolution with the gridding kernel's
// autocorrelation (grid then interpolate, no FFT), for any trajectory; scaled to k-space area
// (a Cartesian Nyquist grid converges to 1). Throws InvalidArgument for an empty trajectory,
// samples outside the grid, iterations < 0, width outside [2, 16], oversampling outside
// [1.25, 4].
PipeMenonResult pipe_menon(const Trajectory &trajectory, const Grid &grid, const PipeMenonOptions &options = {});

} // namespace mri::density
