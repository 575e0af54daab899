#pragma once
// Helpers shared by the GPU normal operators (toeplitz_cuda.cu: the Toeplitz operator;
// direct_normal_cuda.cu: the direct one) and the memory estimate (device_memory_estimate.cu):
// launch shapes, the image/padded extents the kernels see, the regulariser and weighting
// kernels, stream joins and argument checks. Internal linkage: each including file gets its own.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "mri/detail/regularizer_stencil.hpp"
#include "mri/error.hpp"
#include "mri/kspace.hpp"
#include "toeplitz_cuda.hpp"

namespace mri::cuda {
namespace {

constexpr int kThreads = 256;
using detail::DeviceBuffer;

inline cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }

inline int blocks_for(long long n) { return static_cast<int>(std::max<long long>(1, (n + kThreads - 1) / kThreads)); }

// Image and padded extents as the kernels see them.
struct Dims {
  int nx, ny, nz;
  int lx, ly, lz;
};
inline Dims dims_of(const Grid &g, const Grid &p) {
  return {static_cast<int>(g.nx()), static_cast<int>(g.ny()), static_cast<int>(g.nz()),
          static_cast<int>(p.nx()), static_cast<int>(p.ny()), static_cast<int>(p.nz())};
}

inline int log2_if_power_of_two(std::int64_t v) {
  if (v <= 0 || (v & (v - 1)) != 0) return -1;
  int s = 0;
  while ((std::int64_t{1} << s) < v) ++s;
  return s;
}

// lambda W^H W as the kernels take it (regularizer_stencil.hpp's code, float lambda); lambda = 0
// is no term. Throws InvalidArgument if lambda < 0 or not finite.
struct RegularizerTerm {
  int regularizer = mri::detail::kRegNone;
  float lambda = 0;
};
inline RegularizerTerm regularizer_term(Regularizer r, double lambda) {
  if (!(lambda >= 0) || !std::isfinite(lambda))
    mri::detail::invalid_argument("lambda", lambda, "must be finite and >= 0");
  if (lambda == 0 || r == Regularizer::None) return {};
  return {static_cast<int>(r), static_cast<float>(lambda)};
}

__device__ __forceinline__ void image_coordinates(int v, const Dims &d, int &ix, int &iy, int &iz) {
  ix = v % d.nx;
  const int rest = v / d.nx;
  iy = rest % d.ny;
  iz = rest / d.ny;
}
__device__ __forceinline__ long long padded_index(int ix, int iy, int iz, const Dims &d) {
  return ix + static_cast<long long>(d.lx) * (iy + static_cast<long long>(d.ly) * iz);
}
// Index p of the padded grid as coordinates (the inverse of padded_index).
__device__ __forceinline__ void padded_coordinates(long long p, const Dims &d, int &px, int &py, int &pz) {
  px = static_cast<int>(p % d.lx);
  const long long rest = p / d.lx;
  py = static_cast<int>(rest % d.ly);
  pz = static_cast<int>(rest / d.ly);
}
// The image voxel at padded index p (the image sits on the padded grid's corner), -1 outside it:
// what the zero-padding kernels copy from.
__device__ __forceinline__ int padded_source_voxel(long long p, const Dims &d) {
  int px, py, pz;
  padded_coordinates(p, d, px, py, pz);
  return px < d.nx && py < d.ny && pz < d.nz ? px + d.nx * (py + d.ny * pz) : -1;
}

// acc += lambda (W^H W x)[v], voxel v at (ix, iy, iz) (mri/detail/regularizer_stencil.hpp).
__device__ __forceinline__ void add_regularizer_voxel(int reg, float lambda, const float2 *x, int v, int ix, int iy,
                                                      int iz, const Dims &d, float2 &acc) {
  float rr, ri;
  mri::detail::regularizer_normal_voxel<int>(reg, lambda, reinterpret_cast<const float *>(x), v, ix, iy, iz, d.nx, d.ny,
                                             d.nz, rr, ri);
  acc.x += rr;
  acc.y += ri;
}

// out[v] += lambda (W^H W in)[v] (the direct operator's regulariser).
__global__ void add_regularizer_kernel(const float2 *__restrict__ in, Dims d, int n, int reg, float lambda,
                                       float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  int ix, iy, iz;
  image_coordinates(v, d, ix, iy, iz);
  float2 o = out[v];
  add_regularizer_voxel(reg, lambda, in, v, ix, iy, iz, d, o);
  out[v] = o;
}

__global__ void weight_kernel(float2 *__restrict__ y, const float *__restrict__ w, int m) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float2 v = y[i];
  y[i] = make_float2(v.x * w[i], v.y * w[i]);
}

// The last axis of extent > 1 (-1 for a single voxel).
inline int last_axis(const Grid &grid) {
  for (int a = 2; a >= 0; --a)
    if (grid.extent(a) > 1) return a;
  return -1;
}

// Where the exact Q is summed: the doubled grid with n_h + 1 planes along the last axis h
// (offsets -n_h .. 0); the other half follows from Q(-d) = conj(Q(d)).
inline Grid q_half_grid(const Grid &grid) {
  const Grid padded = grid.doubled();
  std::int64_t e[3] = {padded.nx(), padded.ny(), padded.nz()};
  const int h = last_axis(grid);
  if (h >= 0) e[h] = grid.extent(h) + 1;
  return Grid(e[0], e[1], e[2]);
}

inline void join(cudaStream_t from, cudaStream_t to, cudaEvent_t event) {
  if (from == to) return;
  MRI_CUDA_CHECK(cudaEventRecord(event, from));
  MRI_CUDA_CHECK(cudaStreamWaitEvent(to, event, 0));
}

inline cudaEvent_t make_event() {
  cudaEvent_t e = nullptr;
  MRI_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

inline void check_image(const DeviceImage &v, const Grid &grid, const char *what) {
  if (v.grid() != grid || v.data() == nullptr)
    mri::detail::invalid_argument(std::string(what) + ".grid().voxels()", v.grid().voxels(),
                                  "must be the operator's grid (" + std::to_string(grid.voxels()) + " voxels)");
}

inline std::vector<float> checked_weights(std::span<const float> weights, std::size_t m) {
  mri::detail::check_weights(weights, m);
  return {weights.begin(), weights.end()};
}

} // namespace
} // namespace mri::cuda
