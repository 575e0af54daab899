#pragma once
#include <cstddef>
#include <cstdint>

// The current device, asked rather than assumed (device.cu). Plain C++: the GPU tests include it.
namespace mri::cuda::detail {

// Whether a driver and at least one device answer (no error: "not available" is an answer).
bool device_present();
// Streaming multiprocessors of the current device (grid sizes that fill the card).
int multiprocessor_count();
// Bytes of the current device in use by every process (total - free, cudaMemGetInfo): the leak
// checks of the GPU tests.
std::size_t device_memory_in_use();

// What cuda/ itself holds on the current device (device_memory_ledger.cuh), exact rather than
// polled: bytes cudaMalloc'd through the ledger, and bytes in use from the stream-ordered memory
// pool (its statistics, cudaMemPoolAttrUsedMem*), now and at their high-water marks since the last
// reset_device_memory_peak(). The two marks may fall at different moments: their sum bounds the
// combined peak from above.
struct DeviceMemoryPeak {
  std::size_t allocated_now = 0, allocated_high = 0;
  std::size_t pooled_now = 0, pooled_high = 0;
  std::size_t high_bound() const { return allocated_high + pooled_high; }
};
// Sets both high-water marks of the current device to what is in use now.
void reset_device_memory_peak();
DeviceMemoryPeak device_memory_peak();

// Fault injection for the reliability tests (cuda_check.cuh): the n-th checked CUDA, cuBLAS or
// cuFFT call from now on (any thread) fails without being made, as an allocation failure, and
// raises mri::CudaError with "[injected]" in its message; n <= 0 disarms.
void inject_fault_at(std::int64_t n);
// Checked calls made so far (all threads): a test counts one run's calls to sweep every one.
std::int64_t checked_calls();

} // namespace mri::cuda::detail
