#pragma once
// What the CUDA gridding plans keep between plans, process-wide (gridding_resources.cu): one
// stream-ordered memory pool per device, idle cuFFT plans per grid shape, and the plans' trace
// switch. release_gridding_cache() (gridding_cuda.hpp) gives them back.
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>

#include "cuda_check.cuh"

namespace mri::cuda::detail {

// Host-side phase times of the plan constructor on stderr (MRI_GRIDDING_TRACE=1).
bool trace_enabled();

// The current device's pool: freed buffers stay in it up to the release threshold (an eighth of
// the device memory, at most 8 GiB), so a second plan reuses them instead of mapping new memory;
// null where the device has no memory pools (plain cudaMalloc).
cudaMemPool_t plan_pool();

// A device array allocated and freed in stream order (from the pool where there is one).
template <class T> class Buffer {
public:
  Buffer() = default;
  ~Buffer() { release(); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  void allocate(std::size_t n, cudaMemPool_t pool, cudaStream_t stream) {
    release();
    if (n == 0) return;
    void *p = nullptr;
    if (pool)
      MRI_CUDA_CHECK(cudaMallocFromPoolAsync(&p, n * sizeof(T), pool, stream));
    else
      MRI_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
    p_ = static_cast<T *>(p);
    n_ = n;
    pooled_ = pool != nullptr;
    stream_ = stream;
  }
  void release() noexcept {
    if (p_) {
      if (pooled_)
        cudaFreeAsync(p_, stream_);
      else
        cudaFree(p_);
    }
    p_ = nullptr;
    n_ = 0;
  }
  T *get() const { return p_; }
  std::size_t size() const { return n_; }

private:
  T *p_ = nullptr;
  std::size_t n_ = 0;
  bool pooled_ = false;
  cudaStream_t stream_ = nullptr;
};

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
