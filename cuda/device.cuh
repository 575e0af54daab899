#pragma once
#include <cstddef>
#include <cstdint>

// The current device, asked rather than assumed (cuda/device.cu). Plain C++: the GPU tests include it.
namespace mri::cuda::detail {

// Whether a driver and at least one device answer (no error: "not available" is an answer).
bool device_present();
// Streaming multiprocessors of the current device (grid sizes that fill the card).
int multiprocessor_count();
// Bytes of the current device in use by every process (total - free, cudaMemGetInfo): the leak
// checks of the GPU tests.
std::size_t device_memory_in_use();

// Fault injection for the reliability tests (cuda_check.cuh): the n-th checked CUDA, cuBLAS or
// cuFFT call from now on (any thread) fails without being made, as an allocation failure, and
// raises mri::CudaError with "[injected]" in its message; n <= 0 disarms.
void inject_fault_at(std::int64_t n);
// Checked calls made so far (all threads): a test counts one run's calls to sweep every one.
std::int64_t checked_calls();

} // namespace mri::cuda::detail
