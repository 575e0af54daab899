// upload_staged: pageable host memory to the device through a small pinned ring (staged_upload.cuh).
#include "staged_upload.cuh"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_check.cuh"
#include "mri_backend/tuning.hpp"

namespace mri::cuda::detail {
namespace {

constexpr std::size_t kUploadThreads = mri::detail::tuning::Gpu::upload_threads;
constexpr std::size_t kChunkBytes = mri::detail::tuning::Gpu::upload_chunk_bytes;
constexpr std::size_t kStagingMinBytes = mri::detail::tuning::Gpu::upload_staging_min_bytes;

struct Staging {
  std::mutex mutex;
  char *host = nullptr; // 2 kUploadThreads slots of kChunkBytes
  std::vector<cudaEvent_t> done;
  std::vector<char> pending;
  bool unavailable = false; // pinning failed once: pageable from then on
  int device = 0;           // the device its events were made on: they can be recorded on its streams only
};
Staging &g_staging = *new Staging();
// g_staging.device once the ring is pinned, -1 before: read without the lock, so that a copy to
// another device (the coil split's entries upload at once from their own threads) never waits
// for the ring's current upload to end.
std::atomic<int> g_ring_device{-1};

// Runs work(w) for w = 0 .. workers - 1, on this thread and workers - 1 others (fewer if threads
// cannot be made: the rest run here).
template <class F> void run_workers(std::size_t workers, F &&work) {
  std::vector<std::thread> threads;
  std::size_t started = 1;
  try {
    for (; started < workers; ++started) threads.emplace_back(work, started);
  } catch (...) {
  }
  work(std::size_t{0});
  for (std::size_t w = started; w < workers; ++w) work(w);
  for (std::thread &t : threads) t.join();
}

// The ring, pinned on first use (g_staging.mutex held). False: take the pageable path.
bool ring_ready() {
  if (!g_staging.host && !g_staging.unavailable) {
    const std::size_t slots = 2 * kUploadThreads;
    if (cudaHostAlloc(reinterpret_cast<void **>(&g_staging.host), slots * kChunkBytes, cudaHostAllocDefault) !=
        cudaSuccess) {
      cudaGetLastError(); // not sticky: fall back to the pageable copy
      g_staging.host = nullptr;
      g_staging.unavailable = true;
    } else {
      MRI_CUDA_CHECK(cudaGetDevice(&g_staging.device));
      g_staging.done.assign(slots, nullptr);
      g_staging.pending.assign(slots, 0);
      for (cudaEvent_t &e : g_staging.done) MRI_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      g_ring_device.store(g_staging.device, std::memory_order_release);
    }
  }
  return g_staging.host != nullptr;
}

// The device `stream` belongs to (the current one for the legacy default stream).
int stream_device(cudaStream_t stream) {
  int device = 0;
  MRI_CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  return device;
}

} // namespace

namespace {

// The ring's copy of `bytes` to `dst`: each chunk made in a pinned slot by fill, then its DMA.
// False where the ring cannot serve this copy (small, another device, pinning failed).
bool ring_upload(void *dst, std::size_t bytes, StagedFill fill, const void *context, cudaStream_t stream) {
  if (bytes < kStagingMinBytes) return false;
  if (const int ring = g_ring_device.load(std::memory_order_acquire); ring >= 0 && stream_device(stream) != ring)
    return false; // another device's copy: without the lock
  std::unique_lock lock(g_staging.mutex);
  if (!ring_ready() || stream_device(stream) != g_staging.device) return false;
  const std::size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers = std::min({chunks, kUploadThreads, cores});
  std::vector<cudaError_t> errors(workers, cudaSuccess);
  run_workers(workers, [&](std::size_t w) {
    std::size_t turn = 0;
    for (std::size_t c = w; c < chunks; c += workers, ++turn) {
      const std::size_t slot = 2 * w + (turn & 1);
      char *pinned = g_staging.host + slot * kChunkBytes;
      cudaError_t e = cudaSuccess;
      if (g_staging.pending[slot]) e = cudaEventSynchronize(g_staging.done[slot]);
      const std::size_t first = c * kChunkBytes, n = std::min(kChunkBytes, bytes - first);
      if (e == cudaSuccess) {
        fill(pinned, first, n, context);
        e = cudaMemcpyAsync(static_cast<char *>(dst) + first, pinned, n, cudaMemcpyHostToDevice, stream);
      }
      if (e == cudaSuccess) e = cudaEventRecord(g_staging.done[slot], stream);
      if (e != cudaSuccess) {
        errors[w] = e;
        return;
      }
      g_staging.pending[slot] = 1;
    }
  });
  for (const cudaError_t e : errors) check(e, "staged upload", __FILE__, __LINE__);
  return true;
}

void copy_fill(char *pinned, std::size_t first, std::size_t n, const void *src) {
  std::memcpy(pinned, static_cast<const char *>(src) + first, n);
}

} // namespace

void upload_staged(void *dst, const void *src, std::size_t bytes, cudaStream_t stream) {
  if (!ring_upload(dst, bytes, copy_fill, src, stream))
    MRI_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
}

void upload_staged_fill(void *dst, std::size_t bytes, StagedFill fill, const void *context, cudaStream_t stream) {
  if (ring_upload(dst, bytes, fill, context, stream)) return;
  // No ring: the bytes made in pageable memory, then one copy (its return means src may be reused).
  std::vector<char> made(bytes);
  for (std::size_t first = 0; first < bytes; first += kChunkBytes)
    fill(made.data() + first, first, std::min(kChunkBytes, bytes - first), context);
  MRI_CUDA_CHECK(cudaMemcpyAsync(dst, made.data(), bytes, cudaMemcpyHostToDevice, stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream)); // `made` is freed on return
}

void release_staging() {
  std::lock_guard lock(g_staging.mutex);
  for (std::size_t i = 0; i < g_staging.done.size(); ++i) {
    if (g_staging.pending[i]) MRI_CUDA_CHECK(cudaEventSynchronize(g_staging.done[i]));
    MRI_CUDA_CHECK(cudaEventDestroy(g_staging.done[i]));
  }
  g_staging.done.clear();
  g_staging.pending.clear();
  if (g_staging.host) MRI_CUDA_CHECK(cudaFreeHost(g_staging.host));
  g_staging.host = nullptr;
  g_ring_device.store(-1, std::memory_order_release); // the next ring is pinned for its first user's device
}

} // namespace mri::cuda::detail
