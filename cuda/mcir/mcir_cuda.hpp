#pragma once
// reconstruct_motion_corrected's states on the device (CudaBackend::motion_corrected,
// lib/interface/mri_backend/cuda_backend.hpp's DeviceMcir): every state's b_s and Toeplitz operator
// kept on the device; the device warps (image_warp_cuda.hpp) around each state's SENSE Toeplitz
// normal, summed over the states, the regulariser once, and the one ConjugateGradient template (or
// ProximalSolver) on DeviceImage.
#include <memory>
#include <vector>

#include "mri/mcir.hpp"
#include "mri_backend/cuda_backend.hpp"

namespace mri::cuda::detail {

std::unique_ptr<mri::detail::DeviceMcir> motion_corrected_cuda(const std::vector<const KSpaceData *> &states,
                                                               const Grid &grid, const ReconOptions &options,
                                                               const CoilSensitivities *maps, ReconReport &report);

} // namespace mri::cuda::detail
