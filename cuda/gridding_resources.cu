// The gridding plans' process-wide resources (gridding_resources.cuh).
#include "gridding_resources.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "cufft_check.cuh"
#include "gridding_cuda.hpp"
#include "staged_upload.cuh"

namespace mri::cuda::detail {

// Never destroyed at exit: the CUDA runtime and cuFFT may already be torn down when static
// destructors run.

static std::mutex g_cache_mutex;

bool trace_enabled() {
  static const bool on = [] {
    const char *e = std::getenv("MRI_GRIDDING_TRACE");
    return e != nullptr && e[0] != '\0' && e[0] != '0';
  }();
  return on;
}

// One stream-ordered memory pool per device.
struct PoolEntry {
  int device;
  cudaMemPool_t pool;
};
static auto &g_pools = *new std::vector<PoolEntry>();

cudaMemPool_t plan_pool() {
  int device = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard lock(g_cache_mutex);
  for (const PoolEntry &e : g_pools)
    if (e.device == device) return e.pool;
  int supported = 0;
  MRI_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
  cudaMemPool_t pool = nullptr;
  if (supported) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    MRI_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    std::size_t free_bytes = 0, total_bytes = 0;
    MRI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    std::uint64_t keep = std::min<std::uint64_t>(total_bytes / 8, std::uint64_t{8} << 30);
    MRI_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  g_pools.push_back({device, pool});
  return pool;
}

static auto &g_idle_ffts = *new std::vector<FftPlan>();
constexpr std::size_t kMaxIdleFfts = 8;

FftPlan acquire_fft(int dims, int gx, int gy, int gz) {
  FftPlan p;
  MRI_CUDA_CHECK(cudaGetDevice(&p.device));
  p.dims = dims;
  p.gx = gx;
  p.gy = gy;
  p.gz = gz;
  {
    std::lock_guard lock(g_cache_mutex);
    for (auto it = g_idle_ffts.begin(); it != g_idle_ffts.end(); ++it)
      if (it->same_shape(p)) {
        p = *it;
        g_idle_ffts.erase(it);
        return p;
      }
  }
  MRI_CUFFT_CHECK(cufftCreate(&p.handle));
  try {
    MRI_CUFFT_CHECK(cufftSetAutoAllocation(p.handle, 0));
    if (dims == 3)
      MRI_CUFFT_CHECK(cufftMakePlan3d(p.handle, gz, gy, gx, CUFFT_C2C, &p.work));
    else
      MRI_CUFFT_CHECK(cufftMakePlan2d(p.handle, gy, gx, CUFFT_C2C, &p.work));
  } catch (...) {
    cufftDestroy(p.handle);
    throw;
  }
  return p;
}

void return_fft(const FftPlan &p) noexcept {
  std::lock_guard lock(g_cache_mutex);
  if (g_idle_ffts.size() < kMaxIdleFfts)
    g_idle_ffts.push_back(p);
  else
    cufftDestroy(p.handle);
}

void release_gridding_cache() {
  release_staging();
  std::lock_guard lock(g_cache_mutex);
  for (const FftPlan &p : g_idle_ffts) cufftDestroy(p.handle);
  g_idle_ffts.clear();
  for (const PoolEntry &e : g_pools)
    if (e.pool) {
      // Frees finished since the last synchronisation are only returned once the device has
      // passed them.
      int current = 0;
      MRI_CUDA_CHECK(cudaGetDevice(&current));
      MRI_CUDA_CHECK(cudaSetDevice(e.device));
      MRI_CUDA_CHECK(cudaDeviceSynchronize());
      MRI_CUDA_CHECK(cudaMemPoolTrimTo(e.pool, 0));
      MRI_CUDA_CHECK(cudaSetDevice(current));
    }
}

} // namespace mri::cuda::detail
