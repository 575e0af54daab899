#pragma once
// Image quality as Stone et al. (2008) measure it in their phantom study.
//
// Thread safety: pure functions of their (const) arguments: safe from any number of threads at
// once.
#include "mri/image.hpp"

namespace mri {

// PSNR = 20 log10(max|I0| / sqrt(MSE)), MSE = mean |I - I0|^2 (Stone et al.'s definition).
// Throws InvalidArgument if the grids differ.
double psnr(const Image &image, const Image &reference);
// ||I - I0||_2 / ||I0||_2.
double relative_l2(const Image &image, const Image &reference);
// The complex scale s minimising ||s I - I0||: puts an unnormalised adjoint on the
// reference's scale before PSNR (used for the F^H D and gridding baselines).
cfloat best_scale(const Image &image, const Image &reference);

} // namespace mri
