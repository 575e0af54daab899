#pragma once
// The one owning device array of cuda/ (the F^H D plans, the Toeplitz and SENSE operators, the
// gridding plans' pooled buffers, the motion volumes): cudaMalloc'd, or allocated and freed in
// stream order from a memory pool (allocate() with a pool). Movable, not copyable; contents are
// undefined after an allocation.
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "cuda_check.cuh"
#include "recon/device_memory_ledger.cuh"

namespace mri::cuda::detail {

template <class T> class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { grow(count); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer &&o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), pooled_(o.pooled_), stream_(o.stream_) {}
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
      pooled_ = o.pooled_;
      stream_ = o.stream_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  // Reallocates (cudaMalloc) only when more than the current size is needed.
  T *grow(std::size_t count) {
    if (count <= n_) return p_;
    allocate(count, nullptr, nullptr);
    return p_;
  }
  // count values from `pool` in stream order on `stream` (freed there too), or by cudaMalloc
  // without a pool; count 0 leaves the buffer empty.
  void allocate(std::size_t count, cudaMemPool_t pool, cudaStream_t stream) {
    release();
    if (count == 0) return;
    void *p = nullptr;
    if (pool)
      MRI_CUDA_CHECK(cudaMallocFromPoolAsync(&p, count * sizeof(T), pool, stream));
    else
      p = device_malloc(count * sizeof(T));
    p_ = static_cast<T *>(p);
    n_ = count;
    pooled_ = pool != nullptr;
    stream_ = stream;
  }
  // A destructor cannot throw; a failing free leaves nothing to undo.
  void release() noexcept {
    if (p_) {
      if (pooled_)
        cudaFreeAsync(p_, stream_);
      else
        device_free(p_);
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

} // namespace mri::cuda::detail
