#pragma once
// The current CUDA device, switched for a scope, and peer access between two devices: what the
// code that spreads one reconstruction over several devices needs (device_slabs.cu, coil_split.cu).
#include <cuda_runtime.h>

#include "cuda_check.cuh"

namespace mri::cuda::detail {

inline int current_device() {
  int d = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

// Makes `device` current for a scope, then restores the one before (destructors run there too:
// plans, handles and streams belong to the device they were made on).
class CurrentDevice {
public:
  explicit CurrentDevice(int device) : before_(current_device()) {
    if (device != before_) MRI_CUDA_CHECK(cudaSetDevice(device));
  }
  ~CurrentDevice() { cudaSetDevice(before_); } // a destructor cannot throw
  CurrentDevice(const CurrentDevice &) = delete;
  CurrentDevice &operator=(const CurrentDevice &) = delete;

private:
  int before_ = 0;
};

// Lets `from` reach `to`'s memory directly (NVLink or PCIe peer DMA) where the pair can; else
// cudaMemcpyPeerAsync stages through the host. Enabling twice is not an error.
inline void enable_peer_access(int from, int to) {
  if (from == to) return;
  int can = 0;
  MRI_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
  if (!can) return;
  const CurrentDevice on(from);
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError(); // an answer, not a failure: cleared
    return;
  }
  check(e, "cudaDeviceEnablePeerAccess", __FILE__, __LINE__);
}

} // namespace mri::cuda::detail
