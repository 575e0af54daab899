#pragma once
// Every cudaMalloc of cuda/ goes through here and is counted per device, so that a test can
// read the exact high-water mark of what the SDK allocates (gpu.memory_limit against the real
// peak; the query is in device.cuh). Stream-ordered buffers come from the
// gridding's memory pool instead (DeviceBuffer::allocate with a pool) and are counted by the
// pool's own statistics. Not counted: memory the CUDA libraries allocate for themselves (cuBLAS's
// workspace, NCCL's buffers); every cuFFT plan of cuda/ runs on a work area allocated here.
#include <cstddef>

namespace mri::cuda::detail {

// cudaMalloc on the current device (checked: throws CudaError), counted.
void *device_malloc(std::size_t bytes);
// cudaFree of a device_malloc'd pointer (null: nothing), uncounted. Errors are ignored: it runs in
// destructors, possibly after the runtime has shut down at exit.
void device_free(void *p) noexcept;

} // namespace mri::cuda::detail
