#pragma once
// The one-shot gridding reconstruction Stone et al. (2008) compare iterative reconstruction against
// (their phantom study: 16.8 dB for gridding + inverse FFT vs 27.6 dB iterative): weight,
// grid, FFT, deapodize, crop, i.e.
//   image = F_nufft^H (w .* D) / voxels(),
// which is on the image's own scale when w are k-space areas (density.hpp), because
// sum_m w_m D_m exp(+i 2 pi k_m . x / n) approximates the continuous inverse transform,
// voxels() times the image for Phantom::kspace's units.
//
// Thread safety: gridding_reconstruction makes its own plan per call: any number of threads may
// call it at once (tests/concurrency).
#include "mri/image.hpp"
#include "mri/kspace.hpp"
#include "mri/nufft.hpp"

namespace mri {

struct GriddingOptions {
  NufftOptions nufft;             // kernel tolerance, Scatter (GA) or Gather (RGA), threads
  int pipe_menon_iterations = 20; // density compensation when the data carry no weights
};

// Uses data.weights() when present, else Pipe-Menon weights (density::pipe_menon). Multi-coil
// data: each coil gridded, combined by root-sum-of-squares (a real, non-negative image). Throws
// InvalidArgument for a trajectory that does not fit the grid or bad NUFFT options (see
// NufftOperator).
Image gridding_reconstruction(const KSpaceData &data, const Grid &grid, const GriddingOptions &options = {});

} // namespace mri
