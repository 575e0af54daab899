#pragma once
// mri::reconstruct with a field map: the steps of mri_backend/recon_driver.hpp with the
// field-corrected operators (mri/offresonance.hpp), on the CPU here, on the device through the
// plugin (CudaBackend::reconstruct_offresonance: the same steps on device images, the exact
// field-corrected F^H D by the field kernels, the segments batched; mri_backend/offresonance.hpp).
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

// The same on `backend` (resolved: Cpu or Cuda), with what both need of the options: no Q cache (the
// field-corrected kernels are not cached) and, for method = Exact, the direct normal (the field term
// has no Toeplitz form).
ReconResult reconstruct_offresonance(const KSpaceData &data, std::span<const float> times, const Grid &grid,
                                     const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                     ReconClock::time_point t_start, Backend backend);

} // namespace mri::detail
