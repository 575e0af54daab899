#include "caller_memory.cuh"

#include <string>

#include "mri/error.hpp"

namespace mri::cuda::detail {

int stream_device(cudaStream_t stream) {
  int device = 0;
  MRI_CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  return device;
}

void check_caller_pointer(const CallerPointer &p, int device) {
  const std::string need = "must be memory of CUDA device " + std::to_string(device) + ", where the operator runs";
  if (!p.address) mri::detail::invalid_argument(p.name, "null", need);
  cudaPointerAttributes a{};
  MRI_CUDA_CHECK(cudaPointerGetAttributes(&a, p.address));
  if (a.type == cudaMemoryTypeManaged) return;
  if (a.type != cudaMemoryTypeDevice) mri::detail::invalid_argument(p.name, "host memory", need);
  if (a.device != device) mri::detail::invalid_argument(p.name, "memory of CUDA device " + std::to_string(a.device), need);
}

} // namespace mri::cuda::detail
