// The CUDA gridding NUFFT: scatter (GA, atomics) and reverse gridding (RGA, gather), cuFFT,
// deapodization. See gridding_cuda.hpp for the algorithm; lib/nufft.cpp for the maths
// (kernel polynomial, window convention j0 = ceil(t - W/2), s = 2 (j0 - (t - W/2)) - 1).
#include "gridding_cuda.hpp"

#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "mri/error.hpp"

namespace mri::cuda::detail {
namespace {

void check_fft(cufftResult r, const char *call) {
  if (r != CUFFT_SUCCESS)
    throw CudaError(std::string(call) + " failed: cufftResult " + std::to_string(static_cast<int>(r)));
}

void check_launch(const char *kernel) { check(cudaGetLastError(), kernel, __FILE__, __LINE__); }

template <class T> class Buffer {
public:
  Buffer() = default;
  explicit Buffer(std::size_t n) { resize(n); }
  ~Buffer() {
    if (p_) cudaFree(p_);
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  void resize(std::size_t n) {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
    if (n == 0) return;
    void *p = nullptr;
    MRI_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
    p_ = static_cast<T *>(p);
    n_ = n;
  }
  void release() { resize(0); }
  T *get() const { return p_; }
  std::size_t size() const { return n_; }

private:
  T *p_ = nullptr;
  std::size_t n_ = 0;
};

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

// Per sample: cell key (z, y, x of j0), the record (sx, sy, sz, j0x) and its index.
__global__ void setup_points_kernel(const KPoint *k, int m, int width, int dims, Dev d, unsigned *keys,
                                    unsigned *idx, float4 *rec) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const KPoint p = k[i];
  const double kc[3] = {p.kx, p.ky, p.kz};
  const int g[3] = {d.gx, d.gy, d.gz}, n[3] = {d.nx, d.ny, d.nz};
  int j[3] = {0, 0, 0};
  float s[3] = {0, 0, 0};
  for (int a = 0; a < dims; ++a) {
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
  keys[i] = (static_cast<unsigned>(j[2]) * d.gy + j[1]) * d.gx + j[0];
  idx[i] = i;
  rec[i] = make_float4(s[0], s[1], s[2], __int_as_float(j[0]));
}

__global__ void reorder_kernel(const float4 *rec, const unsigned *perm, int m, float4 *out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) out[i] = rec[perm[i]];
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
// are one contiguous run of the sorted samples (two when the run wraps around x = 0).
template <int D, int W>
__global__ void __launch_bounds__(256) gather_kernel(const float4 *__restrict__ rec, const float2 *__restrict__ val,
                                                     const unsigned *__restrict__ offsets, Dev d,
                                                     const float *__restrict__ coef, float2 *__restrict__ grid) {
  __shared__ float c[kMaxCoef];
  load_coef<W>(coef, d.degree, c);
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z;
  if (x >= d.gx || y >= d.gy) return;
  float ar = 0.f, ai = 0.f;
  auto run = [&](unsigned b, unsigned e, int dy, int dz) {
    for (unsigned i = b; i < e; ++i) {
      const float4 r = rec[i];
      int dx = x - __float_as_int(r.w);
      if (dx < 0) dx += d.gx;
      float w = poly<W>(c, d.degree, dx, r.x) * poly<W>(c, d.degree, dy, r.y);
      if constexpr (D == 3) w *= poly<W>(c, d.degree, dz, r.z);
      const float2 v = val[i];
      ar = fmaf(w, v.x, ar);
      ai = fmaf(w, v.y, ai);
    }
  };
  for (int dz = 0; dz < (D == 3 ? W : 1); ++dz) {
    const int cz = D == 3 ? wrap(z - dz, d.gz) : 0;
    for (int dy = 0; dy < W; ++dy) {
      const int cy = wrap(y - dy, d.gy);
      const unsigned row = (static_cast<unsigned>(cz) * d.gy + cy) * d.gx;
      const int lo = x - W + 1;
      if (lo >= 0) {
        run(offsets[row + lo], offsets[row + x + 1], dy, dz);
      } else {
        run(offsets[row + lo + d.gx], offsets[row + d.gx], dy, dz);
        run(offsets[row], offsets[row + x + 1], dy, dz);
      }
    }
  }
  grid[(static_cast<unsigned>(z) * d.gy + y) * d.gx + x] = make_float2(ar, ai);
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

struct Kernels {
  decltype(&gather_kernel<2, 4>) gather;
  decltype(&scatter_kernel<2, 4>) scatter;
  decltype(&interp_kernel<2, 4>) interp;
};

template <int D, int W> Kernels kernels_of() { return {&gather_kernel<D, W>, &scatter_kernel<D, W>, &interp_kernel<D, W>}; }

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

} // namespace

struct NufftDevicePlan::State {
  GriddingSetup setup;
  Dev dev{};
  Kernels k{};
  int m = 0;
  std::int64_t points = 0, voxels = 0;
  cudaStream_t stream = nullptr;
  cufftHandle fft = 0;
  bool fft_made = false;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  float setup_ms = 0;
  Buffer<unsigned> keys, perm, offsets;
  Buffer<float4> rec;
  Buffer<float> coef, deapod;
  Buffer<float2> grid, sorted, samples, image;

  ~State() {
    if (fft_made) cufftDestroy(fft);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (stream) cudaStreamDestroy(stream);
  }
};

NufftDevicePlan::NufftDevicePlan(const Trajectory &trajectory, const GriddingSetup &setup)
    : s_(std::make_unique<State>()) {
  State &s = *s_;
  s.setup = setup;
  const auto &g = setup.g;
  s.points = g[0] * g[1] * g[2];
  s.voxels = setup.n[0] * setup.n[1] * setup.n[2];
  if (s.points >= (std::int64_t{1} << 31) || trajectory.size() >= (std::size_t{1} << 31))
    throw Unsupported("NufftOperator on cuda: oversampled grid or trajectory above 2^31 elements");
  if (setup.width > kMaxDeviceWidth)
    throw Unsupported("NufftOperator on cuda: kernel width " + std::to_string(setup.width) + " above " +
                      std::to_string(kMaxDeviceWidth) + " (tolerance below what float32 reaches)");
  s.k = setup.dims == 3 ? pick<3>(setup.width) : pick<2>(setup.width);
  s.m = static_cast<int>(trajectory.size());
  s.dev = {static_cast<int>(g[0]), static_cast<int>(g[1]), static_cast<int>(g[2]),
           static_cast<int>(setup.n[0]), static_cast<int>(setup.n[1]), static_cast<int>(setup.n[2]), setup.degree};
  MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  MRI_CUDA_CHECK(cudaEventCreate(&s.e0));
  MRI_CUDA_CHECK(cudaEventCreate(&s.e1));

  // Constants.
  s.coef.resize(setup.coef.size());
  MRI_CUDA_CHECK(cudaMemcpyAsync(s.coef.get(), setup.coef.data(), setup.coef.size() * sizeof(float),
                                 cudaMemcpyHostToDevice, s.stream));
  std::vector<float> deap;
  for (int a = 0; a < 3; ++a) deap.insert(deap.end(), setup.deapod[a].begin(), setup.deapod[a].end());
  s.deapod.resize(deap.size());
  MRI_CUDA_CHECK(cudaMemcpyAsync(s.deapod.get(), deap.data(), deap.size() * sizeof(float), cudaMemcpyHostToDevice,
                                 s.stream));

  // Points: setup, stable sort by cell, records in cell order, per-cell offsets.
  const int m = s.m;
  Buffer<KPoint> traj(static_cast<std::size_t>(m));
  MRI_CUDA_CHECK(cudaMemcpyAsync(traj.get(), trajectory.data(), static_cast<std::size_t>(m) * sizeof(KPoint),
                                 cudaMemcpyHostToDevice, s.stream));
  MRI_CUDA_CHECK(cudaEventRecord(s.e0, s.stream));
  Buffer<unsigned> keys_in(static_cast<std::size_t>(m)), idx_in(static_cast<std::size_t>(m));
  Buffer<float4> rec_in(static_cast<std::size_t>(m));
  s.keys.resize(static_cast<std::size_t>(m));
  s.perm.resize(static_cast<std::size_t>(m));
  s.rec.resize(static_cast<std::size_t>(m));
  setup_points_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(traj.get(), m, setup.width, setup.dims, s.dev,
                                                             keys_in.get(), idx_in.get(), rec_in.get());
  check_launch("setup_points_kernel");
  int bits = 1;
  while ((std::int64_t{1} << bits) < s.points) ++bits;
  std::size_t sort_bytes = 0, scan_bytes = 0;
  MRI_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys_in.get(), s.keys.get(), idx_in.get(),
                                                 s.perm.get(), m, 0, bits, s.stream));
  Buffer<unsigned> counts(static_cast<std::size_t>(s.points) + 1);
  s.offsets.resize(static_cast<std::size_t>(s.points) + 1);
  MRI_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts.get(), s.offsets.get(),
                                               static_cast<int>(s.points) + 1, s.stream));
  Buffer<unsigned char> temp(std::max(sort_bytes, scan_bytes));
  MRI_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), sort_bytes, keys_in.get(), s.keys.get(), idx_in.get(),
                                                 s.perm.get(), m, 0, bits, s.stream));
  reorder_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(rec_in.get(), s.perm.get(), m, s.rec.get());
  check_launch("reorder_kernel");
  MRI_CUDA_CHECK(cudaMemsetAsync(counts.get(), 0, (static_cast<std::size_t>(s.points) + 1) * sizeof(unsigned), s.stream));
  count_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(s.keys.get(), m, counts.get());
  check_launch("count_kernel");
  MRI_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.get(), scan_bytes, counts.get(), s.offsets.get(),
                                               static_cast<int>(s.points) + 1, s.stream));
  MRI_CUDA_CHECK(cudaEventRecord(s.e1, s.stream));

  s.grid.resize(static_cast<std::size_t>(s.points));
  s.sorted.resize(static_cast<std::size_t>(m));
  s.samples.resize(static_cast<std::size_t>(m));
  s.image.resize(static_cast<std::size_t>(s.voxels));
  if (setup.dims == 3)
    check_fft(cufftPlan3d(&s.fft, s.dev.gz, s.dev.gy, s.dev.gx, CUFFT_C2C), "cufftPlan3d");
  else
    check_fft(cufftPlan2d(&s.fft, s.dev.gy, s.dev.gx, CUFFT_C2C), "cufftPlan2d");
  s.fft_made = true;
  check_fft(cufftSetStream(s.fft, s.stream), "cufftSetStream");
  MRI_CUDA_CHECK(cudaStreamSynchronize(s.stream)); // the temporaries above are freed on return
  MRI_CUDA_CHECK(cudaEventElapsedTime(&s.setup_ms, s.e0, s.e1));
}

NufftDevicePlan::~NufftDevicePlan() {
  if (s_ && s_->stream) cudaStreamSynchronize(s_->stream);
}

void NufftDevicePlan::adjoint_device(const cfloat *d_samples, cfloat *d_image, Gridding gridding) {
  State &s = *s_;
  const int m = s.m;
  permute_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(reinterpret_cast<const float2 *>(d_samples), s.perm.get(),
                                                        m, s.sorted.get());
  check_launch("permute_kernel");
  if (gridding == Gridding::Scatter) {
    MRI_CUDA_CHECK(cudaMemsetAsync(s.grid.get(), 0, static_cast<std::size_t>(s.points) * sizeof(float2), s.stream));
    s.k.scatter<<<blocks(m, 256), 256, 0, s.stream>>>(s.rec.get(), s.keys.get(), s.sorted.get(), m, s.dev,
                                                      s.coef.get(), s.grid.get());
    check_launch("scatter_kernel");
  } else {
    const dim3 block(32, 8, 1);
    const dim3 grid(blocks(s.dev.gx, 32), blocks(s.dev.gy, 8), static_cast<unsigned>(s.dev.gz));
    s.k.gather<<<grid, block, 0, s.stream>>>(s.rec.get(), s.sorted.get(), s.offsets.get(), s.dev, s.coef.get(),
                                             s.grid.get());
    check_launch("gather_kernel");
  }
  check_fft(cufftExecC2C(s.fft, reinterpret_cast<cufftComplex *>(s.grid.get()),
                         reinterpret_cast<cufftComplex *>(s.grid.get()), CUFFT_INVERSE),
            "cufftExecC2C(inverse)");
  crop_kernel<<<blocks(s.voxels, 256), 256, 0, s.stream>>>(s.grid.get(), s.dev, s.deapod.get(),
                                                            reinterpret_cast<float2 *>(d_image));
  check_launch("crop_kernel");
}

void NufftDevicePlan::forward_device(const cfloat *d_image, cfloat *d_samples) {
  State &s = *s_;
  MRI_CUDA_CHECK(cudaMemsetAsync(s.grid.get(), 0, static_cast<std::size_t>(s.points) * sizeof(float2), s.stream));
  pad_kernel<<<blocks(s.voxels, 256), 256, 0, s.stream>>>(reinterpret_cast<const float2 *>(d_image), s.dev,
                                                           s.deapod.get(), s.grid.get());
  check_launch("pad_kernel");
  check_fft(cufftExecC2C(s.fft, reinterpret_cast<cufftComplex *>(s.grid.get()),
                         reinterpret_cast<cufftComplex *>(s.grid.get()), CUFFT_FORWARD),
            "cufftExecC2C(forward)");
  s.k.interp<<<blocks(s.m, 256), 256, 0, s.stream>>>(s.rec.get(), s.keys.get(), s.perm.get(), s.m, s.dev,
                                                     s.coef.get(), s.grid.get(),
                                                     reinterpret_cast<float2 *>(d_samples));
  check_launch("interp_kernel");
}

void NufftDevicePlan::synchronize() { MRI_CUDA_CHECK(cudaStreamSynchronize(s_->stream)); }

void NufftDevicePlan::upload_samples(const cfloat *samples) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(s_->samples.get(), samples, static_cast<std::size_t>(s_->m) * sizeof(float2),
                                 cudaMemcpyHostToDevice, s_->stream));
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

double NufftDevicePlan::setup_ms() const { return s_->setup_ms; }

} // namespace mri::cuda::detail
