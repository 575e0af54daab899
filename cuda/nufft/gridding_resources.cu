// The gridding plans' process-wide resources (gridding_resources.cuh).
#include "gridding_resources.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "cufft_check.cuh"
#include "gridding_cuda.hpp"
#include "mri/error.hpp"
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

namespace {

void destroy_fft(const FftPlan &p) noexcept {
  for (cufftHandle h : {p.handle, p.z_columns, p.slabs[0], p.slabs[1]})
    if (h != FftPlan::kNone) cufftDestroy(h);
}

// Slab counts of the pruned 3D transform: the image's z >= 0 (low) and z < 0 (high) halves.
int low_slabs(const FftPlan &p) { return p.nz - p.nz / 2; }
int high_slabs(const FftPlan &p) { return p.nz / 2; }

// A handle without its own work area (the plan's, from the pool, is bound by FftPlan::bind).
cufftHandle new_handle() {
  cufftHandle h = FftPlan::kNone;
  MRI_CUFFT_CHECK(cufftCreate(&h));
  try {
    MRI_CUFFT_CHECK(cufftSetAutoAllocation(h, 0));
  } catch (...) {
    cufftDestroy(h);
    throw;
  }
  return h;
}

void make_pruned_3d(FftPlan &p) {
  std::size_t w = 0;
  const int columns = p.gx * p.gy;
  int n_z[1] = {p.gz};
  p.z_columns = new_handle();
  MRI_CUFFT_CHECK(cufftMakePlanMany(p.z_columns, 1, n_z, n_z, columns, 1, n_z, columns, 1, CUFFT_C2C, columns, &w));
  p.work = std::max(p.work, w);
  int n_slab[2] = {p.gy, p.gx};
  const int counts[2] = {low_slabs(p), high_slabs(p)};
  for (int h = 0; h < 2; ++h) {
    if (counts[h] == 0) continue;
    p.slabs[h] = new_handle();
    MRI_CUFFT_CHECK(cufftMakePlanMany(p.slabs[h], 2, n_slab, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, counts[h], &w));
    p.work = std::max(p.work, w);
  }
}

} // namespace

void FftPlan::bind(void *work_area, cudaStream_t stream) const {
  for (cufftHandle h : {handle, z_columns, slabs[0], slabs[1]}) {
    if (h == kNone) continue;
    if (work > 0) MRI_CUFFT_CHECK(cufftSetWorkArea(h, work_area));
    MRI_CUFFT_CHECK(cufftSetStream(h, stream));
  }
}

void FftPlan::execute(float2 *grid, int direction) const {
  auto *g = reinterpret_cast<cufftComplex *>(grid);
  if (dims != 3) {
    MRI_CUFFT_CHECK(cufftExecC2C(handle, g, g, direction));
    return;
  }
  const std::size_t slab = static_cast<std::size_t>(gx) * gy;
  const auto run_slabs = [&] {
    if (slabs[0] != kNone) MRI_CUFFT_CHECK(cufftExecC2C(slabs[0], g, g, direction));
    cufftComplex *high = g + static_cast<std::size_t>(gz - high_slabs(*this)) * slab;
    if (slabs[1] != kNone) MRI_CUFFT_CHECK(cufftExecC2C(slabs[1], high, high, direction));
  };
  if (direction == CUFFT_FORWARD) run_slabs(); // the grid is zero outside the image's slabs
  MRI_CUFFT_CHECK(cufftExecC2C(z_columns, g, g, direction));
  if (direction == CUFFT_INVERSE) run_slabs(); // only the image's slabs are read after it
}

FftPlan acquire_fft(int dims, int gx, int gy, int gz, int nz, int batch) {
  if (batch < 1 || (batch > 1 && dims == 3))
    throw Unsupported("cuFFT plan of " + std::to_string(batch) + " grids in " + std::to_string(dims) + "D");
  FftPlan p;
  MRI_CUDA_CHECK(cudaGetDevice(&p.device));
  p.dims = dims;
  p.gx = gx;
  p.gy = gy;
  p.gz = gz;
  p.nz = dims == 3 ? nz : 1;
  p.batch = batch;
  {
    std::lock_guard lock(g_cache_mutex);
    for (auto it = g_idle_ffts.begin(); it != g_idle_ffts.end(); ++it)
      if (it->same_shape(p)) {
        p = *it;
        g_idle_ffts.erase(it);
        return p;
      }
  }
  try {
    if (dims == 3) {
      make_pruned_3d(p);
    } else if (batch == 1) {
      p.handle = new_handle();
      MRI_CUFFT_CHECK(cufftMakePlan2d(p.handle, gy, gx, CUFFT_C2C, &p.work));
    } else {
      // The same (gy, gx) transform as cufftMakePlan2d's, of `batch` contiguous grids.
      p.handle = new_handle();
      int n[2] = {gy, gx};
      MRI_CUFFT_CHECK(cufftMakePlanMany(p.handle, 2, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, batch, &p.work));
    }
  } catch (...) {
    destroy_fft(p);
    throw;
  }
  return p;
}

void return_fft(const FftPlan &p) noexcept {
  std::lock_guard lock(g_cache_mutex);
  if (g_idle_ffts.size() < kMaxIdleFfts)
    g_idle_ffts.push_back(p);
  else
    destroy_fft(p);
}

void release_gridding_cache() {
  release_staging();
  std::lock_guard lock(g_cache_mutex);
  for (const FftPlan &p : g_idle_ffts) destroy_fft(p);
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
