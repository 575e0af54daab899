#pragma once
// One acquisition's F^H D and Toeplitz operator on the device, made as reconstruct_cuda makes
// them, for callers that keep several of them (the device MCIR's states).
#include "mri/reconstruct.hpp"
#include "recon/device_image.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

namespace mri::cuda::detail {

struct DeviceProducts {
  DeviceImage rhs;   // sum_c conj(S_c) F^H (w .* D_c), or F^H (w .* D) without maps
  QOperator toeplitz; // Q on the doubled grid (options.method's way: the NUFFT's or the exact sum)
};

// The report gets the phases' seconds (F^H D, Q, transfers, setup) and the device notes as
// reconstruct_cuda's would; the memory check runs first (Unsupported when it does not fit).
DeviceProducts device_products_cuda(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                                    const CoilSensitivities *maps, ReconReport &report);

} // namespace mri::cuda::detail
