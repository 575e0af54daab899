// Device discovery and CUDA error checking shared by every kernel file.
#include <cuda_runtime.h>

#include <array>
#include <atomic>

#include "cuda_check.cuh"
#include "device.cuh"

namespace mri::cuda::detail {

bool device_present() {
  int count = 0;
  // No driver or no device is an answer ("not available"), not an error.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky error so later calls are not poisoned
    return false;
  }
  return count > 0;
}

int multiprocessor_count() {
  // Asked once per device: launch shapes call this per launch.
  static std::array<std::atomic<int>, 64> known{};
  int device = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  std::atomic<int> *slot = device < static_cast<int>(known.size()) ? &known[static_cast<std::size_t>(device)] : nullptr;
  if (slot && slot->load(std::memory_order_relaxed) > 0) return slot->load(std::memory_order_relaxed);
  int sms = 1;
  MRI_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (slot) slot->store(sms, std::memory_order_relaxed);
  return sms;
}

std::size_t device_memory_in_use() {
  std::size_t free = 0, total = 0;
  MRI_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return total - free;
}

FaultInjection &fault_injection() {
  static FaultInjection f;
  return f;
}

void inject_fault_at(std::int64_t n) { fault_injection().countdown.store(n > 0 ? n : 0); }

std::int64_t checked_calls() { return fault_injection().calls.load(); }

} // namespace mri::cuda::detail
