#pragma once
// ESPIRiT maps (espirit.cpp): estimate_sensitivities with MapEstimate::Espirit, options checked.
#include "mri/coils.hpp"

namespace mri {
CoilSensitivities espirit_sensitivities(const KSpaceData &data, const Grid &grid, const SensitivityOptions &options,
                                        Backend backend);
} // namespace mri
