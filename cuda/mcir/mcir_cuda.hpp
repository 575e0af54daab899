#pragma once
// reconstruct_motion_corrected's solve on the device (CudaBackend::solve_motion_corrected,
// lib/interface/mri_backend/cuda_backend.hpp): the device warps (image_warp_cuda.hpp) around each
// state's SENSE Toeplitz normal, summed over the states, the regulariser once, and the one
// ConjugateGradient template on DeviceImage.
#include <vector>

#include "mri/mcir.hpp"
#include "mri_backend/cuda_backend.hpp"

namespace mri::cuda::detail {

Image solve_motion_corrected_cuda(const std::vector<mri::detail::DeviceMcirState> &states, const Grid &grid,
                                  const ReconOptions &options, const CoilSensitivities *maps, ReconReport &report,
                                  MotionCorrectionReport &motion);

} // namespace mri::cuda::detail
