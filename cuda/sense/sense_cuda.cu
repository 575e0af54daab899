// DeviceCoils: SENSE's map products and the stand-alone regulariser on device images.
#include <cuda_runtime.h>

#include "cuda_check.cuh"
#include "recon/device_memory_ledger.cuh"
#include "mri/detail/regularizer_stencil.hpp"
#include "sense_cuda.hpp"
#include "staged_upload.cuh"

namespace mri::cuda::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks(std::size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }
cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }
const float2 *f2(const cfloat *p) { return reinterpret_cast<const float2 *>(p); }
float2 *f2(cfloat *p) { return reinterpret_cast<float2 *>(p); }

__global__ void expand_kernel(const float2 *__restrict__ s, const float2 *__restrict__ x, float2 *__restrict__ out,
                              long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float2 a = s[i], b = x[i];
  out[i] = make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__global__ void combine_kernel(const float2 *__restrict__ s, const float2 *__restrict__ y, float2 *__restrict__ out,
                               long long n, bool first) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float2 a = s[i], b = y[i];
  float2 v = make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x); // conj(a) b
  if (!first) {
    const float2 o = out[i];
    v.x += o.x;
    v.y += o.y;
  }
  out[i] = v;
}

__global__ void regularize_kernel(int code, float lambda, const float *__restrict__ x, float2 *__restrict__ out,
                                  long long nx, long long ny, long long nz) {
  const long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (v >= nx * ny * nz) return;
  float re, im;
  mri::detail::regularizer_normal_voxel(code, lambda, x, v, v % nx, (v / nx) % ny, v / (nx * ny), nx, ny, nz, re, im);
  out[v].x += re;
  out[v].y += im;
}

} // namespace

DeviceCoils::DeviceCoils(const CoilSensitivities &maps, Regularizer regularizer, double lambda, StreamHandle stream)
    : coils_(maps.coils()), voxels_(maps.voxels()), grid_(maps.grid()), regularizer_(regularizer),
      lambda_(static_cast<float>(lambda)) {
  MRI_CUDA_CHECK(cudaGetDevice(&device_));
  maps_ = static_cast<cfloat *>(device_malloc(maps.values().size() * sizeof(cfloat)));
  try {
    upload_staged(maps_, maps.values().data(), maps.values().size() * sizeof(cfloat), as_stream(stream));
  } catch (...) {
    device_free(maps_);
    throw;
  }
}

DeviceCoils::DeviceCoils(const DeviceCoils &all, int first, int count, Regularizer regularizer, double lambda,
                         StreamHandle stream)
    : coils_(count), voxels_(all.voxels_), grid_(all.grid_), regularizer_(regularizer),
      lambda_(static_cast<float>(lambda)) {
  if (first < 0 || count < 1 || first + count > all.count())
    mri::detail::invalid_argument("count", count,
                                  "from coil " + std::to_string(first) + ": must be at least 1 and end within the " +
                                      std::to_string(all.count()) + " coils");
  MRI_CUDA_CHECK(cudaGetDevice(&device_));
  const std::size_t bytes = static_cast<std::size_t>(count) * voxels_ * sizeof(cfloat);
  maps_ = static_cast<cfloat *>(device_malloc(bytes));
  const cudaError_t e = cudaMemcpyPeerAsync(maps_, device_, all.map(first), all.device_, bytes, as_stream(stream));
  if (e != cudaSuccess) device_free(maps_);
  check(e, "cudaMemcpyPeerAsync (coil maps)", __FILE__, __LINE__);
}

DeviceCoils::~DeviceCoils() { device_free(maps_); }

void DeviceCoils::expand(int c, const DeviceImage &x, DeviceImage &out) const {
  expand_kernel<<<blocks(voxels_), kThreads, 0, as_stream(out.stream())>>>(f2(map(c)), f2(x.data()), f2(out.data()),
                                                                          static_cast<long long>(voxels_));
  MRI_CUDA_CHECK(cudaGetLastError());
}

void DeviceCoils::combine(int c, const DeviceImage &y, DeviceImage &out, bool first) const {
  combine(c, y.data(), out, first);
}

void DeviceCoils::combine(int c, const cfloat *y, DeviceImage &out, bool first) const {
  combine_kernel<<<blocks(voxels_), kThreads, 0, as_stream(out.stream())>>>(f2(map(c)), f2(y), f2(out.data()),
                                                                           static_cast<long long>(voxels_), first);
  MRI_CUDA_CHECK(cudaGetLastError());
}

void DeviceCoils::regularize(const DeviceImage &x, DeviceImage &out) const {
  if (regularizer_ == Regularizer::None || lambda_ == 0.0f) return;
  regularize_kernel<<<blocks(voxels_), kThreads, 0, as_stream(out.stream())>>>(
      static_cast<int>(regularizer_), lambda_, reinterpret_cast<const float *>(x.data()), f2(out.data()), grid_.nx(),
      grid_.ny(), grid_.nz());
  MRI_CUDA_CHECK(cudaGetLastError());
}

} // namespace mri::cuda::detail
