#pragma once
// The k-space centre both map estimates start from (sensitivity_estimation.cpp: the direct
// estimate; espirit.cpp: ESPIRiT's calibration data).
#include <vector>

#include "mri/coils.hpp"
#include "mri/kspace.hpp"
#include "mri/options.hpp"

namespace mri::detail {

// Low-resolution coil images on `grid`, coil-major: one adjoint NUFFT (at `tolerance`) per coil
// of the samples with |k_a| < calibration / 2 on every axis (their periodic images, as the
// operators use them), density-compensated by the data's weights or else Pipe-Menon's on those
// samples, and with `taper` a Hann window 0.5 (1 + cos(pi |k| / (calibration / 2))), zero at the
// region's edge. Throws InvalidArgument when fewer than 8 samples lie there.
// The adjoint NUFFTs run on `backend` (reconstruct passes its own: on the GPU the calibration
// images are device NUFFTs).
std::vector<cfloat> low_resolution_images(const KSpaceData &data, const Grid &grid, int calibration, bool taper,
                                          double tolerance, Backend backend);

// The calibration width options ask for on `grid`: SensitivityOptions::calibration, or for 0 (auto)
// 24 (BART's caldir default) capped at the grid's smallest extent.
int calibration_width(const SensitivityOptions &options, const Grid &grid);
// estimate_sensitivities (mri/coils.hpp) with its calibration images on `backend`.
CoilSensitivities estimate_sensitivities_on(const KSpaceData &data, const Grid &grid, const SensitivityOptions &options,
                                            Backend backend);

} // namespace mri::detail
