#pragma once
// reconstruct's and reconstruct_frames' checks of the data and the options, before any work.
#include "mri/reconstruct.hpp"

namespace mri::detail {

// Throws InvalidArgument (Unsupported for an off-resonance map on the GPU) for bad data or
// options, as reconstruct documents; the terms checked for a single image (frames = 0) or for a
// stack of `frames` (reconstruct_frames).
void validate_recon(const KSpaceData &data, const Grid &grid, const ReconOptions &options, int frames);

} // namespace mri::detail
