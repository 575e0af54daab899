#pragma once
// mri::reconstruct on the CPU: the steps of mri_backend/recon_driver.hpp on host images.
#include <vector>

#include "mri/coils.hpp"
#include "mri/dynamic.hpp"
#include "mri/reconstruct.hpp"
#include "mri_backend/recon_report.hpp"

namespace mri::detail {

// The data and options validated, the coils prepared (maps: null without SENSE).
ReconResult reconstruct_cpu(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                            const CoilSensitivities *maps, ReconReport report, ReconClock::time_point t_start);

// The same for a series of frames (reconstruct_frames), validated, the coils prepared.
FramesResult reconstruct_frames_cpu(const std::vector<KSpaceData> &frames, const Grid &grid,
                                    const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                    ReconClock::time_point t_start);

} // namespace mri::detail
