#pragma once
// mri::reconstruct with a field map, on the CPU: the steps of mri_backend/recon_driver.hpp with the
// field-corrected operators (mri/offresonance.hpp). A CUDA backend would supply the same steps on
// device images (the exact field-corrected F^H D as a kernel policy, the segments batched on the
// device) behind the plugin interface; lib/ keeps the model, the segmentation and the choice.
#include <span>

#include "mri/coils.hpp"
#include "mri/reconstruct.hpp"
#include "mri_backend/recon_report.hpp"

namespace mri::detail {

// options.offresonance.field_map on `grid`, non-zero; times: the data's sample times (one coil's).
// Fills the report's off-resonance fields.
ReconResult reconstruct_offresonance_cpu(const KSpaceData &data, std::span<const float> times, const Grid &grid,
                                         const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                         ReconClock::time_point t_start);

} // namespace mri::detail
