// The CUDA gridding NUFFT: scatter (GA, atomics) and reverse gridding (RGA, gather), cuFFT,
// deapodization. See gridding_cuda.hpp for the algorithm; lib/nufft.cpp for the maths
// (kernel polynomial, window convention j0 = ceil(t - W/2), s = 2 (j0 - (t - W/2)) - 1).
#include "gridding_cuda.hpp"

#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "cufft_check.cuh"
#include "mri/error.hpp"
#include "staged_upload.cuh"

namespace mri::cuda::detail {
namespace {

void check_launch(const char *kernel) { check(cudaGetLastError(), kernel, __FILE__, __LINE__); }

// ---------------------------------------------------------------------------------------------
// What plans keep between plans, process-wide (release_gridding_cache()). Never destroyed at
// exit: the CUDA runtime and cuFFT may already be torn down when static destructors run.

std::mutex g_cache_mutex;

// Host-side phase times of the plan constructor on stderr (MRI_GRIDDING_TRACE=1).
bool trace_enabled() {
  static const bool on = [] {
    const char *e = std::getenv("MRI_GRIDDING_TRACE");
    return e != nullptr && e[0] != '\0' && e[0] != '0';
  }();
  return on;
}

// One stream-ordered memory pool per device. Freed buffers stay in the pool up to the release
// threshold (an eighth of the device memory, at most 8 GiB), so a second plan reuses them
// instead of mapping new memory; null where the device has no memory pools (plain cudaMalloc).
struct PoolEntry {
  int device;
  cudaMemPool_t pool;
};
auto &g_pools = *new std::vector<PoolEntry>();

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
auto &g_idle_ffts = *new std::vector<FftPlan>();
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

constexpr int kMaxCoef = 25 * kMaxDeviceWidth; // degree <= 24

struct Dev {
  int gx, gy, gz;
  int nx, ny, nz;
  int degree;
};

// Kernel value of window index i at s: sum_d c[d][i] s^d (Horner).
template <int W> __device__ __forceinline__ float poly(const float *c, int degree, int i, float s) {
  float v = c[degree * W + i];
  for (int d = degree - 1; d >= 0; --d) v = fmaf(v, s, c[d * W + i]);
  return v;
}

template <int W> __device__ __forceinline__ void load_coef(const float *coef, int degree, float *sh) {
  for (int i = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); i < (degree + 1) * W;
       i += blockDim.x * blockDim.y * blockDim.z)
    sh[i] = coef[i];
  __syncthreads();
}

__device__ __forceinline__ int wrap(int v, int n) { return v < 0 ? v + n : (v >= n ? v - n : v); }

// Per sample: cell key (z, y, x of j0), the record (sx, sy, sz, j0x) and its index; `outside`
// set where a coordinate lies outside [-n/2, n/2) (Trajectory::check_within's test).
// k scaled per axis (exact for the powers of two the callers use: 1, or 2 for Q's doubled grid).
__global__ void setup_points_kernel(const KPoint *k, float3 scale, int m, int width, int dims, Dev d, unsigned *keys,
                                    unsigned *idx, float4 *rec, unsigned *outside) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const KPoint p = k[i];
  const double kc[3] = {p.kx * scale.x, p.ky * scale.y, p.kz * scale.z};
  const int g[3] = {d.gx, d.gy, d.gz}, n[3] = {d.nx, d.ny, d.nz};
  int j[3] = {0, 0, 0};
  float s[3] = {0, 0, 0};
  bool out = false;
  for (int a = 0; a < dims; ++a) {
    const double half = n[a] / 2.0;
    out |= !(kc[a] >= -half && kc[a] < half);
    const double t = kc[a] * g[a] / n[a];
    const double left = t - 0.5 * width;
    const double first = ceil(left);
    double z = first - left;
    if (z >= 1.0) z = 0.0;
    long long jj = static_cast<long long>(first) % g[a];
    if (jj < 0) jj += g[a];
    j[a] = static_cast<int>(jj);
    s[a] = static_cast<float>(2.0 * z - 1.0);
  }
  if (out) atomicOr(outside, 1u);
  keys[i] = (static_cast<unsigned>(j[2]) * d.gy + j[1]) * d.gx + j[0];
  idx[i] = i;
  rec[i] = make_float4(s[0], s[1], s[2], __int_as_float(j[0]));
}

// Sorted order: the record, the window's first x, and the W kernel weights per axis
// (wts[i * D * W + a * W + k], axis a, window point k) that gather and SM read; the weights go
// out through shared memory so that the block's stores are contiguous.
template <int D, int W>
__global__ void __launch_bounds__(256) prep_kernel(const float4 *__restrict__ rec_in, const unsigned *__restrict__ perm,
                                                   int m, Dev d, const float *__restrict__ coef, float4 *__restrict__ rec,
                                                   int *__restrict__ jxs, float *__restrict__ wts) {
  constexpr int DW = D * W;
  __shared__ float c[kMaxCoef];
  __shared__ float out[256 * DW];
  load_coef<W>(coef, d.degree, c);
  const int first = blockIdx.x * 256;
  const int i = first + static_cast<int>(threadIdx.x);
  if (i < m) {
    const float4 r = rec_in[perm[i]];
    rec[i] = r;
    jxs[i] = __float_as_int(r.w);
    const float sv[3] = {r.x, r.y, r.z};
#pragma unroll
    for (int a = 0; a < D; ++a)
#pragma unroll
      for (int k = 0; k < W; ++k) out[threadIdx.x * DW + a * W + k] = poly<W>(c, d.degree, k, sv[a]);
  }
  __syncthreads();
  const int n = min(256, m - first) * DW;
  float *dst = wts + static_cast<std::size_t>(first) * DW;
  for (int j = threadIdx.x; j < n; j += 256) dst[j] = out[j];
}

__global__ void count_kernel(const unsigned *keys, int m, unsigned *counts) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) atomicAdd(&counts[keys[i]], 1u); // integer counts: order-independent
}

__global__ void permute_kernel(const float2 *in, const unsigned *perm, int m, float2 *out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) out[i] = in[perm[i]];
}

// RGA: thread per grid point (x, y, z); the samples whose window covers it have j0 in
// (x - W, x] on every axis: for each (dz, dy) the cells x - W + 1 .. x of row (z - dz, y - dy)
// are one contiguous run of the sorted samples (two when the run wraps around x = 0). The W
// rows of one dz have their run bounds loaded together (independent loads in flight), then are
// summed in a fixed order with the precomputed weights: bitwise deterministic.
// Coils (CB > 1): `coils` <= CB coils at once, coil c's sorted samples at val + c * m and its grid
// at grid + c * points; the runs, cells and weights are read once for all of them (SENSE's F^H D).
template <int D, int W, int CB = 1>
__global__ void __launch_bounds__(256) gather_kernel(const int *__restrict__ jxs, const float *__restrict__ wts,
                                                     const float2 *__restrict__ val, const unsigned *__restrict__ offsets,
                                                     Dev d, float2 *__restrict__ grid, int coils = 1,
                                                     unsigned m = 0, std::size_t points = 0) {
  constexpr int DW = D * W;
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z;
  if (x >= d.gx || y >= d.gy) return;
  float ar[CB], ai[CB];
#pragma unroll
  for (int c = 0; c < CB; ++c) ar[c] = ai[c] = 0.f;
  const int lo = x - W + 1;
#pragma unroll 1
  for (int dz = 0; dz < (D == 3 ? W : 1); ++dz) {
    const int cz = D == 3 ? wrap(z - dz, d.gz) : 0;
    unsigned b[W], e[W], b2[W], e2[W];
#pragma unroll
    for (int dy = 0; dy < W; ++dy) {
      const unsigned row = (static_cast<unsigned>(cz) * d.gy + wrap(y - dy, d.gy)) * d.gx;
      if (lo >= 0) {
        b[dy] = offsets[row + lo];
        e[dy] = offsets[row + x + 1];
        b2[dy] = e2[dy] = 0;
      } else {
        b[dy] = offsets[row + lo + d.gx];
        e[dy] = offsets[row + d.gx];
        b2[dy] = offsets[row];
        e2[dy] = offsets[row + x + 1];
      }
    }
#pragma unroll
    for (int dy = 0; dy < W; ++dy) {
      auto run = [&](unsigned from, unsigned to) {
        for (unsigned i = from; i < to; ++i) {
          int dx = x - jxs[i];
          if (dx < 0) dx += d.gx;
          const float *w = wts + static_cast<std::size_t>(i) * DW;
          float wt = w[dx] * w[W + dy];
          if constexpr (D == 3) wt *= w[2 * W + dz];
#pragma unroll
          for (int c = 0; c < CB; ++c)
            if (c < coils) {
              const float2 v = val[i + static_cast<std::size_t>(c) * m];
              ar[c] = fmaf(wt, v.x, ar[c]);
              ai[c] = fmaf(wt, v.y, ai[c]);
            }
        }
      };
      run(b[dy], e[dy]);
      run(b2[dy], e2[dy]);
    }
  }
  const std::size_t at = (static_cast<std::size_t>(z) * d.gy + y) * d.gx + x;
#pragma unroll
  for (int c = 0; c < CB; ++c)
    if (c < coils) grid[at + static_cast<std::size_t>(c) * points] = make_float2(ar[c], ai[c]);
}

// The window of sorted sample i (record r, cell key) for the thread-per-sample kernels: calls
// row(first, jx, wx, wyz) for each of its W (2D) or W^2 (3D) rows on the periodic grid, where
// grid point x of the row is first + wrap(jx + dx, gx) with weight wx[dx] * wyz (wz = 1 in 2D).
template <int D, int W, class Row>
__device__ __forceinline__ void for_each_window_row(const float *c, const Dev &d, float4 r, unsigned key, Row &&row) {
  const int jx = __float_as_int(r.w), jy = static_cast<int>((key / d.gx) % d.gy), jz = static_cast<int>(key / (static_cast<unsigned>(d.gx) * d.gy));
  float wx[W], wy[W], wz[W];
#pragma unroll
  for (int k = 0; k < W; ++k) {
    wx[k] = poly<W>(c, d.degree, k, r.x);
    wy[k] = poly<W>(c, d.degree, k, r.y);
    wz[k] = D == 3 ? poly<W>(c, d.degree, k, r.z) : 1.f;
  }
#pragma unroll
  for (int dz = 0; dz < (D == 3 ? W : 1); ++dz) {
    const int zz = D == 3 ? wrap(jz + dz, d.gz) : 0;
#pragma unroll
    for (int dy = 0; dy < W; ++dy) {
      const int yy = wrap(jy + dy, d.gy);
      row((static_cast<unsigned>(zz) * d.gy + yy) * d.gx, jx, wx, wy[dy] * wz[dz]);
    }
  }
}

// GA: thread per sample (cell order, for locality), atomicAdd into its window.
template <int D, int W>
__global__ void __launch_bounds__(256) scatter_kernel(const float4 *__restrict__ rec, const unsigned *__restrict__ keys,
                                                      const float2 *__restrict__ val, int m, Dev d,
                                                      const float *__restrict__ coef, float2 *grid) {
  __shared__ float c[kMaxCoef];
  load_coef<W>(coef, d.degree, c);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  for_each_window_row<D, W>(c, d, rec[i], keys[i], [&](unsigned first, int jx, const float(&wx)[W], float wyz) {
    // Read here, not ahead of the window's weights, where it cost registers in 3D; one load remains.
    const float2 v = val[i];
    float2 *row = grid + first;
#pragma unroll
    for (int dx = 0; dx < W; ++dx) {
      const float w = wyz * wx[dx];
      atomicAdd(&row[wrap(jx + dx, d.gx)], make_float2(w * v.x, w * v.y));
    }
  });
}

// SM: the grid in tiles of TX x TY x TZ cells; a block per tile. The tile's samples (j0 in the
// tile) are the runs [offsets[row + x0], offsets[row + x1]) of its TY x TZ rows; the block takes
// them in chunks of S, stages their weights, values and padded-tile positions in shared memory,
// spreads them into the padded tile (TX + W - 1) x (TY + W - 1) x (TZ + W - 1) with shared
// atomics (work item = one window row of one sample: W points along x, so a dense tile keeps
// every thread busy; real and imaginary parts in separate arrays with an odd row pitch, against
// bank conflicts), and finally adds the padded tile's nonzero points into the grid (global
// float2 atomics, coordinates wrapped: the halo belongs to the neighbouring tiles).
template <int D, int W> struct SmTile {
  static constexpr int TX = D == 3 ? 16 : 32;
  static constexpr int TY = D == 3 ? 8 : 16;
  static constexpr int TZ = D == 3 ? (W <= 6 ? 8 : 4) : 1;
  static constexpr int S = D == 3 ? 128 : 256; // samples staged per chunk
  static constexpr int PX = TX + W - 1, PY = TY + W - 1, PZ = D == 3 ? TZ + W - 1 : 1;
  static constexpr int SX = PX | 1;          // shared row pitch (odd)
  static constexpr int P = PX * PY * PZ;      // padded points
  static constexpr int SP = SX * PY * PZ;     // shared floats per part
  static constexpr int R = TY * TZ;           // rows of cells per tile
  static constexpr int ROWS = D == 3 ? W * W : W; // window rows per sample
  static_assert(R <= 256, "one run per thread");
  static_assert(2 * SP * 4 + S * (D * W * 4 + 8 + 4) + R * 8 + 1024 <= 48 * 1024, "static shared memory");
};

template <int D, int W>
__global__ void __launch_bounds__(256) sm_scatter_kernel(const int *__restrict__ jxs, const float *__restrict__ wts,
                                                         const float2 *__restrict__ val,
                                                         const unsigned *__restrict__ offsets, Dev d, int tiles_x,
                                                         int tiles_y, float2 *grid) {
  using T = SmTile<D, W>;
  constexpr int DW = D * W;
  using Scan = cub::BlockScan<unsigned, 256>;
  __shared__ float re[T::SP], im[T::SP];
  __shared__ float sw[T::S * DW];
  __shared__ float2 sv[T::S];
  __shared__ int sbase[T::S];
  __shared__ unsigned run_begin[T::R], run_prefix[T::R];
  __shared__ typename Scan::TempStorage scan;

  const int t = threadIdx.x;
  const int tile_index = blockIdx.x;
  const int x0 = (tile_index % tiles_x) * T::TX;
  const int y0 = (tile_index / tiles_x % tiles_y) * T::TY;
  const int z0 = D == 3 ? tile_index / (tiles_x * tiles_y) * T::TZ : 0;
  const int x1 = min(x0 + T::TX, d.gx);
  unsigned len = 0;
  if (t < T::R) {
    const int y = y0 + t % T::TY, z = z0 + t / T::TY;
    unsigned b = 0;
    if (y < d.gy && z < d.gz) {
      const unsigned row = (static_cast<unsigned>(z) * d.gy + y) * d.gx;
      b = offsets[row + x0];
      len = offsets[row + x1] - b;
    }
    run_begin[t] = b;
  }
  unsigned prefix = 0, total = 0;
  Scan(scan).ExclusiveSum(len, prefix, total);
  if (total == 0) return; // every thread has the block's total: uniform
  if (t < T::R) run_prefix[t] = prefix;
  for (int p = t; p < T::SP; p += 256) {
    re[p] = 0.f;
    im[p] = 0.f;
  }
  __syncthreads();

  for (unsigned c0 = 0; c0 < total; c0 += T::S) {
    const int count = static_cast<int>(min(static_cast<unsigned>(T::S), total - c0));
    for (int k = t; k < count; k += 256) {
      const unsigned f = c0 + k;
      int lo = 0, hi = T::R - 1; // the last run starting at or before f (it holds f)
      while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (run_prefix[mid] <= f)
          lo = mid;
        else
          hi = mid - 1;
      }
      const unsigned i = run_begin[lo] + (f - run_prefix[lo]);
      const int lx = jxs[i] - x0, ly = lo % T::TY, lz = lo / T::TY;
      sbase[k] = (lz * T::PY + ly) * T::SX + lx;
      sv[k] = val[i];
      const float *w = wts + static_cast<std::size_t>(i) * DW;
#pragma unroll
      for (int a = 0; a < DW; ++a) sw[k * DW + a] = w[a];
    }
    __syncthreads();
    for (int item = t; item < count * T::ROWS; item += 256) {
      const int k = item / T::ROWS, r = item - k * T::ROWS;
      const int dy = r % W, dz = D == 3 ? r / W : 0;
      const float *w = sw + k * DW;
      float wyz = w[W + dy];
      if constexpr (D == 3) wyz *= w[2 * W + dz];
      const float2 v = sv[k];
      const float vr = wyz * v.x, vi = wyz * v.y;
      const int at = sbase[k] + (dz * T::PY + dy) * T::SX;
#pragma unroll
      for (int dx = 0; dx < W; ++dx) {
        const float wx = w[dx];
        atomicAdd(&re[at + dx], wx * vr);
        atomicAdd(&im[at + dx], wx * vi);
      }
    }
    __syncthreads();
  }
  for (int p = t; p < T::P; p += 256) {
    const int lx = p % T::PX, ly = p / T::PX % T::PY, lz = p / (T::PX * T::PY);
    const int q = (lz * T::PY + ly) * T::SX + lx;
    const float vr = re[q], vi = im[q];
    if (vr == 0.f && vi == 0.f) continue;
    const int gx = (x0 + lx) % d.gx, gy = (y0 + ly) % d.gy, gz = D == 3 ? (z0 + lz) % d.gz : 0;
    atomicAdd(&grid[(static_cast<unsigned>(gz) * d.gy + gy) * d.gx + gx], make_float2(vr, vi));
  }
}

// Interpolation: thread per sample, writes out[perm[i]] (sample order).
template <int D, int W>
__global__ void __launch_bounds__(256) interp_kernel(const float4 *__restrict__ rec, const unsigned *__restrict__ keys,
                                                     const unsigned *__restrict__ perm, int m, Dev d,
                                                     const float *__restrict__ coef, const float2 *__restrict__ grid,
                                                     float2 *__restrict__ out) {
  __shared__ float c[kMaxCoef];
  load_coef<W>(coef, d.degree, c);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  float ar = 0.f, ai = 0.f;
  for_each_window_row<D, W>(c, d, rec[i], keys[i], [&](unsigned first, int jx, const float(&wx)[W], float wyz) {
    const float2 *row = grid + first;
    float rr = 0.f, ri = 0.f;
#pragma unroll
    for (int dx = 0; dx < W; ++dx) {
      const float2 g = row[wrap(jx + dx, d.gx)];
      rr = fmaf(wx[dx], g.x, rr);
      ri = fmaf(wx[dx], g.y, ri);
    }
    ar = fmaf(wyz, rr, ar);
    ai = fmaf(wyz, ri, ai);
  });
  out[perm[i]] = make_float2(ar, ai);
}

// Voxel v <-> oversampled index of its coordinate mod G, with the deapodization factor.
__device__ __forceinline__ void voxel_map(int v, const Dev &d, const float *deapod, unsigned &j, float &w) {
  const int ix = v % d.nx, iy = (v / d.nx) % d.ny, iz = v / (d.nx * d.ny);
  const int cx = ix - d.nx / 2, cy = iy - d.ny / 2, cz = iz - d.nz / 2;
  const int jx = cx < 0 ? cx + d.gx : cx, jy = cy < 0 ? cy + d.gy : cy, jz = cz < 0 ? cz + d.gz : cz;
  j = (static_cast<unsigned>(jz) * d.gy + jy) * d.gx + jx;
  w = deapod[ix] * deapod[d.nx + iy] * deapod[d.nx + d.ny + iz];
}

__global__ void crop_kernel(const float2 *grid, Dev d, const float *deapod, float2 *image) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= d.nx * d.ny * d.nz) return;
  unsigned j;
  float w;
  voxel_map(v, d, deapod, j, w);
  const float2 g = grid[j];
  image[v] = make_float2(g.x * w, g.y * w);
}

__global__ void pad_kernel(const float2 *image, Dev d, const float *deapod, float2 *grid) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= d.nx * d.ny * d.nz) return;
  unsigned j;
  float w;
  voxel_map(v, d, deapod, j, w);
  const float2 x = image[v];
  grid[j] = make_float2(x.x * w, x.y * w);
}

// Coils gridded together by the coil-batched gather (adjoint_coils_device).
constexpr int kCoilBlock = NufftDevicePlan::kCoilBlock;

struct Kernels {
  decltype(&prep_kernel<2, 4>) prep;
  decltype(&gather_kernel<2, 4>) gather;
  decltype(&gather_kernel<2, 4, kCoilBlock>) gather_coils;
  decltype(&scatter_kernel<2, 4>) scatter;
  decltype(&sm_scatter_kernel<2, 4>) sm;
  decltype(&interp_kernel<2, 4>) interp;
  int tx, ty, tz; // SM tile
};

template <int D, int W> Kernels kernels_of() {
  using T = SmTile<D, W>;
  return {&prep_kernel<D, W>,         &gather_kernel<D, W>, &gather_kernel<D, W, kCoilBlock>,
          &scatter_kernel<D, W>,      &sm_scatter_kernel<D, W>,
          &interp_kernel<D, W>,       T::TX,
          T::TY,                      T::TZ};
}

template <int D, int W = 2> Kernels pick(int width) {
  if constexpr (W > kMaxDeviceWidth) {
    throw Unsupported("NufftOperator on cuda: kernel width " + std::to_string(width) + " above " +
                      std::to_string(kMaxDeviceWidth));
  } else {
    if (width == W) return kernels_of<D, W>();
    return pick<D, W + 1>(width);
  }
}

unsigned blocks(std::int64_t n, int per) { return static_cast<unsigned>((n + per - 1) / per); }

// Auto: SM in 3D; GA in 2D, where the samples per cell are many and global atomics in L2 were
// measured faster than SM's tiles (H200: 2D 256^2 M = 2^20 and PROPELLER).
ScatterMethod resolved_scatter(ScatterMethod method, int dims) {
  if (method != ScatterMethod::Auto) return method;
  return dims == 3 ? ScatterMethod::Shared : ScatterMethod::Global;
}

} // namespace

namespace {
using Clock = std::chrono::steady_clock;

[[noreturn]] void throw_outside(const GriddingSetup &setup) {
  mri::detail::invalid_argument("trajectory", "device points",
                                "a sample lies outside [-n/2, n/2) of the grid " + std::to_string(setup.n[0]) + "x" +
                                    std::to_string(setup.n[1]) + "x" + std::to_string(setup.n[2]) +
                                    " (or is not finite)");
}
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
} // namespace

struct NufftDevicePlan::State {
  GriddingSetup setup;
  Dev dev{};
  Kernels k{};
  ScatterMethod scatter = ScatterMethod::Shared;
  int m = 0;
  std::int64_t points = 0, voxels = 0;
  unsigned tiles_x = 1, tiles_y = 1, tiles = 1;
  bool within = true;
  Clock::time_point t_start;             // MRI_GRIDDING_TRACE: when the constructor began,
  double t_stream = 0, t_fft = 0, t_alloc = 0; // and its host phases (ms since then)
  cudaStream_t stream = nullptr;
  cudaMemPool_t pool = nullptr;
  FftPlan fft;
  bool fft_held = false;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  mutable float setup_ms = -1;
  Buffer<unsigned> keys, perm, offsets;
  Buffer<int> jxs;
  Buffer<float4> rec;
  Buffer<float> consts, wts; // consts: kernel polynomial (kMaxCoef floats), then deapodization
  Buffer<float2> grid, sorted, samples, image;
  Buffer<float2> coil_grids, coil_sorted; // adjoint_coils_device: kCoilBlock grids and sorted coils
  Buffer<unsigned char> fft_work;

  const float *coef() const { return consts.get(); }
  const float *deapod() const { return consts.get() + kMaxCoef; }

  ~State() {
    // Buffers go back to the pool in this stream's order, then the stream (its work finishes).
    for (auto *b : {&keys, &perm, &offsets}) b->release();
    jxs.release();
    rec.release();
    consts.release();
    wts.release();
    for (auto *b : {&grid, &sorted, &samples, &image, &coil_grids, &coil_sorted}) b->release();
    fft_work.release();
    if (fft_held) return_fft(fft);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (stream) cudaStreamDestroy(stream);
  }
};

NufftDevicePlan::NufftDevicePlan(const Trajectory &trajectory, const GriddingSetup &setup)
    : NufftDevicePlan(setup, trajectory.size()) {
  State &s = *s_;
  Buffer<KPoint> traj;
  traj.allocate(trajectory.size(), s.pool, s.stream);
  upload_staged(traj.get(), trajectory.data(), trajectory.size() * sizeof(KPoint), s.stream);
  set_points(traj.get(), {1.0f, 1.0f, 1.0f});
  if (!s.within) {
    trajectory.check_within(Grid(setup.n[0], setup.n[1], setup.n[2])); // names the sample
    throw_outside(setup);
  }
}

NufftDevicePlan::NufftDevicePlan(const KPoint *d_points, std::size_t m, const GriddingSetup &setup,
                                 std::array<float, 3> scale)
    : NufftDevicePlan(setup, m) {
  set_points(d_points, scale);
  if (!s_->within) throw_outside(setup);
}

NufftDevicePlan::NufftDevicePlan(const GriddingSetup &setup, std::size_t samples) : s_(std::make_unique<State>()) {
  State &s = *s_;
  s.t_start = Clock::now();
  s.setup = setup;
  const auto &g = setup.g;
  s.points = g[0] * g[1] * g[2];
  s.voxels = setup.n[0] * setup.n[1] * setup.n[2];
  if (samples == 0) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  if (s.points >= (std::int64_t{1} << 31) || samples >= (std::size_t{1} << 31))
    throw Unsupported("NufftOperator on cuda: oversampled grid or trajectory above 2^31 elements");
  if (setup.width > kMaxDeviceWidth)
    throw Unsupported("NufftOperator on cuda: kernel width " + std::to_string(setup.width) + " above " +
                      std::to_string(kMaxDeviceWidth) + " (tolerance below what float32 reaches)");
  if (setup.coef.size() > static_cast<std::size_t>(kMaxCoef))
    throw Unsupported("NufftOperator on cuda: kernel polynomial of degree " + std::to_string(setup.degree) +
                      " above 24");
  s.k = setup.dims == 3 ? pick<3>(setup.width) : pick<2>(setup.width);
  s.scatter = resolved_scatter(ScatterMethod::Auto, setup.dims);
  s.m = static_cast<int>(samples);
  s.dev = {static_cast<int>(g[0]), static_cast<int>(g[1]), static_cast<int>(g[2]),
           static_cast<int>(setup.n[0]), static_cast<int>(setup.n[1]), static_cast<int>(setup.n[2]), setup.degree};
  s.tiles_x = blocks(g[0], s.k.tx);
  s.tiles_y = blocks(g[1], s.k.ty);
  s.tiles = s.tiles_x * s.tiles_y * blocks(g[2], s.k.tz);
  MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  MRI_CUDA_CHECK(cudaEventCreate(&s.e0));
  MRI_CUDA_CHECK(cudaEventCreate(&s.e1));
  s.pool = plan_pool();
  s.t_stream = ms_since(s.t_start);

  // cuFFT plan (cached per shape) with its work area from the pool.
  s.fft = acquire_fft(setup.dims, s.dev.gx, s.dev.gy, s.dev.gz);
  s.fft_held = true;
  s.fft_work.allocate(s.fft.work, s.pool, s.stream);
  if (s.fft.work > 0) MRI_CUFFT_CHECK(cufftSetWorkArea(s.fft.handle, s.fft_work.get()));
  MRI_CUFFT_CHECK(cufftSetStream(s.fft.handle, s.stream));
  s.t_fft = ms_since(s.t_start);

  // Buffers, then the constants in one copy.
  const int m = s.m;
  const auto M = static_cast<std::size_t>(m);
  const auto points = static_cast<std::size_t>(s.points);
  s.keys.allocate(M, s.pool, s.stream);
  s.perm.allocate(M, s.pool, s.stream);
  s.rec.allocate(M, s.pool, s.stream);
  s.jxs.allocate(M, s.pool, s.stream);
  s.wts.allocate(M * static_cast<std::size_t>(setup.dims * setup.width), s.pool, s.stream);
  s.offsets.allocate(points + 1, s.pool, s.stream);
  s.grid.allocate(points, s.pool, s.stream);
  s.sorted.allocate(M, s.pool, s.stream);
  s.samples.allocate(M, s.pool, s.stream);
  s.image.allocate(static_cast<std::size_t>(s.voxels), s.pool, s.stream);
  std::vector<float> consts(static_cast<std::size_t>(kMaxCoef), 0.f);
  std::copy(setup.coef.begin(), setup.coef.end(), consts.begin());
  for (int a = 0; a < 3; ++a) {
    const auto &d = setup.deapod[static_cast<std::size_t>(a)];
    if (d.size() != static_cast<std::size_t>(setup.n[static_cast<std::size_t>(a)]))
      throw Unsupported("NufftOperator on cuda: deapodization of axis " + std::to_string(a) + " has " +
                        std::to_string(d.size()) + " values for " + std::to_string(setup.n[static_cast<std::size_t>(a)]) +
                        " voxels");
    consts.insert(consts.end(), d.begin(), d.end());
  }
  s.consts.allocate(consts.size(), s.pool, s.stream);
  MRI_CUDA_CHECK(cudaMemcpyAsync(s.consts.get(), consts.data(), consts.size() * sizeof(float), cudaMemcpyHostToDevice,
                                 s.stream));
  s.t_alloc = ms_since(s.t_start);
}

// Per-sample setup from device points (k times `scale` per axis), the range check (waited
// for: s.within), then the sort, records and offsets, enqueued and not waited for.
void NufftDevicePlan::set_points(const KPoint *d_points, std::array<float, 3> scale) {
  State &s = *s_;
  const GriddingSetup &setup = s.setup;
  const int m = s.m;
  const auto M = static_cast<std::size_t>(m);
  const auto points = static_cast<std::size_t>(s.points);
  const double t_upload = ms_since(s.t_start);
  MRI_CUDA_CHECK(cudaEventRecord(s.e0, s.stream));
  Buffer<unsigned> keys_in, idx_in, outside;
  Buffer<float4> rec_in;
  keys_in.allocate(M, s.pool, s.stream);
  idx_in.allocate(M, s.pool, s.stream);
  rec_in.allocate(M, s.pool, s.stream);
  outside.allocate(1, s.pool, s.stream);
  MRI_CUDA_CHECK(cudaMemsetAsync(outside.get(), 0, sizeof(unsigned), s.stream));
  setup_points_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(d_points, make_float3(scale[0], scale[1], scale[2]), m,
                                                             setup.width, setup.dims, s.dev, keys_in.get(),
                                                             idx_in.get(), rec_in.get(), outside.get());
  check_launch("setup_points_kernel");
  unsigned outside_host = 0; // pageable destination: the copy returns once complete
  MRI_CUDA_CHECK(cudaMemcpyAsync(&outside_host, outside.get(), sizeof(unsigned), cudaMemcpyDeviceToHost, s.stream));
  outside.release();
  s.within = outside_host == 0;
  if (!s.within) return; // the constructor names the problem
  const double t_check = ms_since(s.t_start);
  cudaEvent_t marks[4] = {};
  const bool trace = trace_enabled();
  if (trace)
    for (cudaEvent_t &e : marks) {
      MRI_CUDA_CHECK(cudaEventCreate(&e));
    }
  if (trace) MRI_CUDA_CHECK(cudaEventRecord(marks[0], s.stream));

  // Stable sort by cell, records and weights in cell order, per-cell offsets: enqueued, not waited.
  int bits = 1;
  while ((std::int64_t{1} << bits) < s.points) ++bits;
  std::size_t sort_bytes = 0, scan_bytes = 0;
  MRI_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys_in.get(), s.keys.get(), idx_in.get(),
                                                 s.perm.get(), m, 0, bits, s.stream));
  Buffer<unsigned> counts;
  counts.allocate(points + 1, s.pool, s.stream);
  MRI_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts.get(), s.offsets.get(),
                                               static_cast<int>(s.points) + 1, s.stream));
  Buffer<unsigned char> temp;
  temp.allocate(std::max(sort_bytes, scan_bytes), s.pool, s.stream);
  MRI_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), sort_bytes, keys_in.get(), s.keys.get(), idx_in.get(),
                                                 s.perm.get(), m, 0, bits, s.stream));
  if (trace) MRI_CUDA_CHECK(cudaEventRecord(marks[1], s.stream));
  keys_in.release();
  idx_in.release();
  s.k.prep<<<blocks(m, 256), 256, 0, s.stream>>>(rec_in.get(), s.perm.get(), m, s.dev, s.coef(), s.rec.get(),
                                                 s.jxs.get(), s.wts.get());
  check_launch("prep_kernel");
  rec_in.release();
  if (trace) MRI_CUDA_CHECK(cudaEventRecord(marks[2], s.stream));
  MRI_CUDA_CHECK(cudaMemsetAsync(counts.get(), 0, (points + 1) * sizeof(unsigned), s.stream));
  count_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(s.keys.get(), m, counts.get());
  check_launch("count_kernel");
  MRI_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.get(), scan_bytes, counts.get(), s.offsets.get(),
                                               static_cast<int>(s.points) + 1, s.stream));
  MRI_CUDA_CHECK(cudaEventRecord(s.e1, s.stream));
  if (trace) {
    const double t_end = ms_since(s.t_start);
    MRI_CUDA_CHECK(cudaEventSynchronize(s.e1));
    float dev[4] = {};
    MRI_CUDA_CHECK(cudaEventElapsedTime(&dev[0], s.e0, marks[0]));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&dev[1], marks[0], marks[1]));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&dev[2], marks[1], marks[2]));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&dev[3], marks[2], s.e1));
    for (cudaEvent_t e : marks) cudaEventDestroy(e);
    std::fprintf(stderr,
                 "[gridding plan] %dD M=%d G=%dx%dx%d host: stream %.3f, fft %.3f, alloc+consts %.3f, upload "
                 "%.3f, check %.3f, enqueue %.3f ms; device: setup %.3f, sort %.3f, prep %.3f, offsets %.3f ms\n",
                 setup.dims, m, s.dev.gx, s.dev.gy, s.dev.gz, s.t_stream, s.t_fft - s.t_stream, s.t_alloc - s.t_fft,
                 t_upload - s.t_alloc, t_check - t_upload, t_end - t_check, dev[0], dev[1], dev[2], dev[3]);
  }
}

DevicePoints::DevicePoints(const Trajectory &trajectory) : size_(trajectory.size()) {
  void *p = nullptr;
  MRI_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(size_, 1) * sizeof(KPoint)));
  data_ = static_cast<KPoint *>(p);
  cudaStream_t stream = nullptr;
  try {
    MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    upload_staged(data_, trajectory.data(), size_ * sizeof(KPoint), stream);
    MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
    MRI_CUDA_CHECK(cudaStreamDestroy(stream));
  } catch (...) {
    if (stream) cudaStreamDestroy(stream);
    cudaFree(data_);
    throw;
  }
}

DevicePoints::~DevicePoints() { cudaFree(data_); }

NufftDevicePlan::~NufftDevicePlan() {
  if (s_ && s_->stream) cudaStreamSynchronize(s_->stream);
}

bool NufftDevicePlan::samples_within_grid() const { return s_->within; }

void NufftDevicePlan::set_scatter_method(ScatterMethod method) {
  s_->scatter = resolved_scatter(method, s_->setup.dims);
}

ScatterMethod NufftDevicePlan::scatter_method() const { return s_->scatter; }

void NufftDevicePlan::adjoint_device(const cfloat *d_samples, cfloat *d_image, Gridding gridding) {
  State &s = *s_;
  const int m = s.m;
  permute_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(reinterpret_cast<const float2 *>(d_samples), s.perm.get(),
                                                        m, s.sorted.get());
  check_launch("permute_kernel");
  if (gridding == Gridding::Scatter) {
    MRI_CUDA_CHECK(cudaMemsetAsync(s.grid.get(), 0, static_cast<std::size_t>(s.points) * sizeof(float2), s.stream));
    if (s.scatter == ScatterMethod::Global) {
      s.k.scatter<<<blocks(m, 256), 256, 0, s.stream>>>(s.rec.get(), s.keys.get(), s.sorted.get(), m, s.dev, s.coef(),
                                                        s.grid.get());
      check_launch("scatter_kernel");
    } else {
      s.k.sm<<<s.tiles, 256, 0, s.stream>>>(s.jxs.get(), s.wts.get(), s.sorted.get(), s.offsets.get(), s.dev,
                                            static_cast<int>(s.tiles_x), static_cast<int>(s.tiles_y), s.grid.get());
      check_launch("sm_scatter_kernel");
    }
  } else { // Gather; Auto means Gather here as in NufftOperator
    const dim3 block(32, 8, 1);
    const dim3 grid(blocks(s.dev.gx, 32), blocks(s.dev.gy, 8), static_cast<unsigned>(s.dev.gz));
    s.k.gather<<<grid, block, 0, s.stream>>>(s.jxs.get(), s.wts.get(), s.sorted.get(), s.offsets.get(), s.dev,
                                             s.grid.get(), 1, 0u, std::size_t{0});
    check_launch("gather_kernel");
  }
  MRI_CUFFT_CHECK(cufftExecC2C(s.fft.handle, reinterpret_cast<cufftComplex *>(s.grid.get()),
                         reinterpret_cast<cufftComplex *>(s.grid.get()), CUFFT_INVERSE));
  crop_kernel<<<blocks(s.voxels, 256), 256, 0, s.stream>>>(s.grid.get(), s.dev, s.deapod(),
                                                            reinterpret_cast<float2 *>(d_image));
  check_launch("crop_kernel");
}

void NufftDevicePlan::adjoint_coils_device(const cfloat *d_samples, int coils, cfloat *d_images, Gridding gridding) {
  State &s = *s_;
  const std::size_t m = static_cast<std::size_t>(s.m), n = static_cast<std::size_t>(s.voxels),
                    points = static_cast<std::size_t>(s.points);
  if (gridding == Gridding::Scatter || coils == 1) {
    for (int c = 0; c < coils; ++c) adjoint_device(d_samples + c * m, d_images + c * n, gridding);
    return;
  }
  if (s.coil_grids.size() < kCoilBlock * points) s.coil_grids.allocate(kCoilBlock * points, s.pool, s.stream);
  if (s.coil_sorted.size() < kCoilBlock * m) s.coil_sorted.allocate(kCoilBlock * m, s.pool, s.stream);
  const dim3 block(32, 8, 1);
  const dim3 grid(blocks(s.dev.gx, 32), blocks(s.dev.gy, 8), static_cast<unsigned>(s.dev.gz));
  for (int c0 = 0; c0 < coils; c0 += kCoilBlock) {
    const int count = std::min(kCoilBlock, coils - c0);
    for (int c = 0; c < count; ++c) {
      permute_kernel<<<blocks(s.m, 256), 256, 0, s.stream>>>(reinterpret_cast<const float2 *>(d_samples) + (c0 + c) * m,
                                                             s.perm.get(), s.m, s.coil_sorted.get() + c * m);
      check_launch("permute_kernel");
    }
    s.k.gather_coils<<<grid, block, 0, s.stream>>>(s.jxs.get(), s.wts.get(), s.coil_sorted.get(), s.offsets.get(),
                                                   s.dev, s.coil_grids.get(), count, static_cast<unsigned>(m), points);
    check_launch("gather_kernel (coils)");
    for (int c = 0; c < count; ++c) {
      float2 *g = s.coil_grids.get() + c * points;
      MRI_CUFFT_CHECK(cufftExecC2C(s.fft.handle, reinterpret_cast<cufftComplex *>(g), reinterpret_cast<cufftComplex *>(g),
                                   CUFFT_INVERSE));
      crop_kernel<<<blocks(s.voxels, 256), 256, 0, s.stream>>>(g, s.dev, s.deapod(),
                                                                reinterpret_cast<float2 *>(d_images) + (c0 + c) * n);
      check_launch("crop_kernel");
    }
  }
  // Back to the pool in stream order: a plan kept for the direct normal operator holds no more.
  s.coil_grids.release();
  s.coil_sorted.release();
}

void NufftDevicePlan::forward_device(const cfloat *d_image, cfloat *d_samples) {
  State &s = *s_;
  MRI_CUDA_CHECK(cudaMemsetAsync(s.grid.get(), 0, static_cast<std::size_t>(s.points) * sizeof(float2), s.stream));
  pad_kernel<<<blocks(s.voxels, 256), 256, 0, s.stream>>>(reinterpret_cast<const float2 *>(d_image), s.dev,
                                                           s.deapod(), s.grid.get());
  check_launch("pad_kernel");
  MRI_CUFFT_CHECK(cufftExecC2C(s.fft.handle, reinterpret_cast<cufftComplex *>(s.grid.get()),
                         reinterpret_cast<cufftComplex *>(s.grid.get()), CUFFT_FORWARD));
  s.k.interp<<<blocks(s.m, 256), 256, 0, s.stream>>>(s.rec.get(), s.keys.get(), s.perm.get(), s.m, s.dev, s.coef(),
                                                     s.grid.get(), reinterpret_cast<float2 *>(d_samples));
  check_launch("interp_kernel");
}

void NufftDevicePlan::synchronize() { MRI_CUDA_CHECK(cudaStreamSynchronize(s_->stream)); }
void *NufftDevicePlan::stream() const { return s_->stream; }

void NufftDevicePlan::upload_samples(const cfloat *samples) {
  upload_staged(s_->samples.get(), samples, static_cast<std::size_t>(s_->m) * sizeof(float2), s_->stream);
  synchronize();
}
void NufftDevicePlan::upload_image(const cfloat *image) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(s_->image.get(), image, static_cast<std::size_t>(s_->voxels) * sizeof(float2),
                                 cudaMemcpyHostToDevice, s_->stream));
  synchronize();
}
void NufftDevicePlan::download_image(cfloat *image) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(image, s_->image.get(), static_cast<std::size_t>(s_->voxels) * sizeof(float2),
                                 cudaMemcpyDeviceToHost, s_->stream));
  synchronize();
}
void NufftDevicePlan::download_samples(cfloat *samples) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(samples, s_->samples.get(), static_cast<std::size_t>(s_->m) * sizeof(float2),
                                 cudaMemcpyDeviceToHost, s_->stream));
  synchronize();
}

void NufftDevicePlan::adjoint(const cfloat *samples, cfloat *image, Gridding gridding) {
  upload_samples(samples);
  adjoint_device(reinterpret_cast<const cfloat *>(s_->samples.get()), reinterpret_cast<cfloat *>(s_->image.get()),
                 gridding);
  download_image(image);
}

void NufftDevicePlan::forward(const cfloat *image, cfloat *samples) {
  upload_image(image);
  forward_device(reinterpret_cast<const cfloat *>(s_->image.get()), reinterpret_cast<cfloat *>(s_->samples.get()));
  download_samples(samples);
}

namespace {
template <class F> double median_event_ms(cudaStream_t stream, cudaEvent_t e0, cudaEvent_t e1, int reps, F &&f) {
  f(); // warm-up
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> t;
  for (int r = 0; r < std::max(1, reps); ++r) {
    MRI_CUDA_CHECK(cudaEventRecord(e0, stream));
    f();
    MRI_CUDA_CHECK(cudaEventRecord(e1, stream));
    MRI_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    MRI_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
} // namespace

double NufftDevicePlan::time_adjoint_ms(Gridding gridding, int repetitions) {
  State &s = *s_;
  return median_event_ms(s.stream, s.e0, s.e1, repetitions, [&] {
    adjoint_device(reinterpret_cast<const cfloat *>(s.samples.get()), reinterpret_cast<cfloat *>(s.image.get()),
                   gridding);
  });
}

double NufftDevicePlan::time_forward_ms(int repetitions) {
  State &s = *s_;
  return median_event_ms(s.stream, s.e0, s.e1, repetitions, [&] {
    forward_device(reinterpret_cast<const cfloat *>(s.image.get()), reinterpret_cast<cfloat *>(s.samples.get()));
  });
}

double NufftDevicePlan::setup_ms() const {
  if (s_->setup_ms < 0) {
    MRI_CUDA_CHECK(cudaEventSynchronize(s_->e1));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&s_->setup_ms, s_->e0, s_->e1));
  }
  return s_->setup_ms;
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
