#pragma once
// mri::reconstruct's GPU path (plain C++): lib/recon/reconstruct.cpp calls it once the backend has
// resolved to Cuda and the options are validated.
#include <chrono>
#include <vector>

#include "mri/dynamic.hpp"
#include "mri/reconstruct.hpp"

namespace mri::cuda::detail {

// F^H D, Q (or its cached spectrum) and CG on the device, the image back to the host once; with
// maps (SENSE) the maps go up once and each coil's F^H D and normal run in turn on the one Q.
// The report arrives with its coil fields filled; its total_seconds counts from t_start.
ReconResult reconstruct_cuda(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                             const CoilSensitivities *maps, ReconReport report,
                             std::chrono::steady_clock::time_point t_start);

// The same for a series of frames (reconstruct_frames): each frame its own F^H D and normal
// operator on the device, one solver on the stack (mri_backend/frames_driver.hpp).
FramesResult reconstruct_frames_cuda(const std::vector<KSpaceData> &frames, const Grid &grid,
                                     const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                     std::chrono::steady_clock::time_point t_start);

} // namespace mri::cuda::detail
