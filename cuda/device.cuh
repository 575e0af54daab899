#pragma once
// The current device, asked rather than assumed (cuda/device.cu).
namespace mri::cuda::detail {

// Whether a driver and at least one device answer (no error: "not available" is an answer).
bool device_present();
// Streaming multiprocessors of the current device (grid sizes that fill the card).
int multiprocessor_count();

} // namespace mri::cuda::detail
