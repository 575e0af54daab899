#pragma once
// What the CUDA gridding plans keep between plans, process-wide (gridding_resources.cu): one
// stream-ordered memory pool per device, idle cuFFT plans per grid shape, and the plans' trace
// switch. release_gridding_cache() (gridding_cuda.hpp) gives them back.
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>

#include "cuda_check.cuh"
#include "device_buffer.cuh"

namespace mri::cuda::detail {

// Host-side phase times of the plan constructor on stderr (MRI_GRIDDING_TRACE=1).
bool trace_enabled();

// The current device's pool: freed buffers stay in it up to the release threshold (an eighth of
// the device memory, at most 8 GiB), so a second plan reuses them instead of mapping new memory;
// null where the device has no memory pools (plain cudaMalloc).
cudaMemPool_t plan_pool();

// cuFFT plans without their own work area, kept idle per (device, dims, grid) between plans: a
// plan checks one out for its lifetime (so two live plans never share one) and gives it back.
struct FftPlan {
  int device = 0, dims = 0, gx = 0, gy = 0, gz = 0;
  cufftHandle handle = 0;
  std::size_t work = 0;
  bool same_shape(const FftPlan &o) const {
    return device == o.device && dims == o.dims && gx == o.gx && gy == o.gy && gz == o.gz;
  }
};
// A plan of this shape for the current device, idle or new; give it back with return_fft.
FftPlan acquire_fft(int dims, int gx, int gy, int gz);
void return_fft(const FftPlan &p) noexcept;

} // namespace mri::cuda::detail
