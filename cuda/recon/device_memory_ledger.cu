// The count of cuda/'s device allocations (device_memory_ledger.cuh) and its queries (device.cuh).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda_check.cuh"
#include "device.cuh"
#include "device_memory_ledger.cuh"
#include "nufft/gridding_resources.cuh"

namespace mri::cuda::detail {
namespace {

struct PerDevice {
  std::size_t in_use = 0, high = 0;
  // The pool's bytes in use when the peak was last reset (its high-water mark can only be reset
  // to zero, after which it counts from what is in use then).
  std::uint64_t pooled_at_reset = 0;
};

struct Ledger {
  std::mutex mutex;
  std::unordered_map<void *, std::pair<int, std::size_t>> live; // pointer -> device, bytes
  std::vector<PerDevice> devices;

  PerDevice &of(int device) {
    if (devices.size() <= static_cast<std::size_t>(device)) devices.resize(static_cast<std::size_t>(device) + 1);
    return devices[static_cast<std::size_t>(device)];
  }
};

// Never destroyed: buffers held by static or thread-local objects are freed at exit.
Ledger &ledger() {
  static Ledger *l = new Ledger;
  return *l;
}

int current_device() {
  int device = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

std::uint64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  std::uint64_t v = 0;
  if (pool) MRI_CUDA_CHECK(cudaMemPoolGetAttribute(pool, attribute, &v));
  return v;
}

} // namespace

void *device_malloc(std::size_t bytes) {
  const int device = current_device();
  void *p = nullptr;
  MRI_CUDA_CHECK(cudaMalloc(&p, bytes));
  Ledger &l = ledger();
  const std::lock_guard<std::mutex> lock(l.mutex);
  l.live[p] = {device, bytes};
  PerDevice &d = l.of(device);
  d.in_use += bytes;
  d.high = std::max(d.high, d.in_use);
  return p;
}

void device_free(void *p) noexcept {
  if (!p) return;
  cudaFree(p);
  Ledger &l = ledger();
  const std::lock_guard<std::mutex> lock(l.mutex);
  const auto it = l.live.find(p);
  if (it == l.live.end()) return;
  l.of(it->second.first).in_use -= it->second.second;
  l.live.erase(it);
}

void reset_device_memory_peak() {
  const int device = current_device();
  cudaMemPool_t pool = plan_pool();
  std::uint64_t pooled = 0;
  if (pool) {
    pooled = pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent);
    std::uint64_t zero = 0;
    MRI_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  }
  Ledger &l = ledger();
  const std::lock_guard<std::mutex> lock(l.mutex);
  PerDevice &d = l.of(device);
  d.high = d.in_use;
  d.pooled_at_reset = pooled;
}

DeviceMemoryPeak device_memory_peak() {
  const int device = current_device();
  DeviceMemoryPeak peak;
  std::uint64_t pooled_at_reset = 0;
  {
    Ledger &l = ledger();
    const std::lock_guard<std::mutex> lock(l.mutex);
    const PerDevice &d = l.of(device);
    peak.allocated_now = d.in_use;
    peak.allocated_high = d.high;
    pooled_at_reset = d.pooled_at_reset;
  }
  cudaMemPool_t pool = plan_pool();
  peak.pooled_now = pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent);
  peak.pooled_high = std::max(pool_attribute(pool, cudaMemPoolAttrUsedMemHigh), pooled_at_reset);
  return peak;
}

} // namespace mri::cuda::detail
