#pragma once
// Off-resonance behind the plugin interface (plain C++): what CudaBackend::field_fourier and
// CudaBackend::reconstruct_offresonance (cuda_backend.cu) return.
#include <chrono>
#include <memory>
#include <span>

#include "mri/offresonance.hpp"
#include "mri/reconstruct.hpp"
#include "mri_backend/offresonance.hpp"

namespace mri::cuda::detail {

// The exact field-corrected F on the device for mri::FieldFourierOperator (the interface's
// contract: a vanishing field runs FhdPlan's uncorrected sums, bitwise DeviceFourier's).
std::unique_ptr<mri::detail::DeviceFieldFourier> make_device_field_fourier(const Trajectory &trajectory, const Grid &grid,
                                                                         const FieldMap &field,
                                                                         std::span<const float> times);

// mri::reconstruct with a non-zero field map on the device: the steps of
// lib/offresonance/recon_offresonance.cpp (FieldSteps) on device images, through the one driver.
// method = Exact: the field kernels (field_kernel(options.gpu.policy, options.precision)) and their
// direct normal; Nufft: time segmentation (fit_segmentation on the host, remembered across calls;
// the tables made on the device), F^H D by batched adjoint NUFFTs of coils x segments, the normal by the segment Toeplitz kernels with the coils batched
// (solver.normal = Toeplitz, at most SegmentedToeplitzDevice::kMaxSegments segments and within the
// memory budget), else the segmented NUFFTs. One device (options.gpu.devices: at most one entry).
// Unsupported, before anything is allocated, where the estimate (mri_backend/offresonance.hpp's
// field_reconstruct_device_bytes) passes the free memory or options.gpu.memory_limit.
ReconResult reconstruct_offresonance_cuda(const KSpaceData &data, std::span<const float> times, const Grid &grid,
                                          const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                          std::chrono::steady_clock::time_point t_start);

} // namespace mri::cuda::detail
