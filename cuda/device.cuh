#pragma once
#include <cstddef>

// The current device, asked rather than assumed (cuda/device.cu). Plain C++: the GPU tests include it.
namespace mri::cuda::detail {

// Whether a driver and at least one device answer (no error: "not available" is an answer).
bool device_present();
// Streaming multiprocessors of the current device (grid sizes that fill the card).
int multiprocessor_count();
// Bytes of the current device in use by every process (total - free, cudaMemGetInfo): the leak
// checks of the GPU tests.
std::size_t device_memory_in_use();

} // namespace mri::cuda::detail
