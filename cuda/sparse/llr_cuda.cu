// LowRankOps<DeviceImage>: locally low rank's singular-value soft-thresholding on device frames
// (Trzasko and Manduca 2011; Cai, Candes and Shen 2010), block by block, in chunks of blocks:
//   gram_kernel     G = B^H B per block (double accumulation of exact float products)
//   cuSOLVER        G = V diag(lambda) V^H (cusolverDnZheevjBatched, n = F <= 32)
//   rebuild_kernel  B' = B M, M = V diag(g) V^H with g = max(s - t, 0) / s, s = sqrt(lambda)
//   norm_kernel     sum_i s_i per block; one fixed-order sum over the blocks
// The tiling is the host's (lib/sparse/locally_low_rank.cpp): per axis, block k covers
// (shift + k size + j) mod extent for j < min(size, extent - k size); an axis outside the term's
// spans one block. Blocks are disjoint, so each is read and rewritten in place by one CUDA block.
//
// Singular values from the Gram: eigenvalues below F eps lambda_max of a block are the rounding
// of a null space (a border block with fewer voxels than frames is rank deficient) and count as
// zero. M is built as whichever of V diag(g) V^H and I - V diag(1 - g) V^H has fewer terms, so that
// t = 0 gives M = I and a block wholly under the threshold M = 0, exactly.
#include <cuComplex.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <math_constants.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "mri/error.hpp"
#include "mri/sparse.hpp"
#include "mri_backend/low_rank_device_bytes.hpp"
#include "sparse/llr_cuda.hpp"

namespace mri::cuda {
namespace {

constexpr int kMaxFrames = static_cast<int>(kDeviceLowRankMaxFrames);
constexpr int kThreads = 256;
constexpr int kEntriesPerThread = kMaxFrames * kMaxFrames / kThreads; // of an F x F matrix
constexpr int kTileRows = 32;                                         // block voxels staged at once

// The frames' data, passed by value (F <= 32 pointers).
struct Frames {
  float2 *p[kMaxFrames];
  int count;
};

// The block grid: per axis the extent, the block length, the shift in [0, extent) and the count.
struct Tiling {
  long long extent[3], size[3], shift[3], count[3];
};

// One block: its index along each axis, its length along each, its voxel count.
struct BlockShape {
  long long k[3], length[3], rows;
};

__device__ BlockShape block_shape(const Tiling &t, long long b) {
  BlockShape s;
  s.k[0] = b % t.count[0];
  s.k[1] = b / t.count[0] % t.count[1];
  s.k[2] = b / (t.count[0] * t.count[1]);
#pragma unroll
  for (int a = 0; a < 3; ++a) s.length[a] = min(t.size[a], t.extent[a] - s.k[a] * t.size[a]);
  s.rows = s.length[0] * s.length[1] * s.length[2];
  return s;
}

// The voxel index of row r of a block (rows in x-fastest order, as the host's).
__device__ long long voxel_of(const Tiling &t, const BlockShape &s, long long r) {
  const long long j[3] = {r % s.length[0], r / s.length[0] % s.length[1], r / (s.length[0] * s.length[1])};
  long long p[3];
#pragma unroll
  for (int a = 0; a < 3; ++a) p[a] = (t.shift[a] + s.k[a] * t.size[a] + j[a]) % t.extent[a];
  return p[0] + t.extent[0] * (p[1] + t.extent[1] * p[2]);
}

// Rows [r0, r0 + rows) of the block into tile[r * kMaxFrames + f].
__device__ void load_tile(const Frames &frames, const Tiling &t, const BlockShape &s, long long r0, int rows,
                          float2 *tile) {
  for (int e = threadIdx.x; e < rows * frames.count; e += blockDim.x) {
    const int r = e % rows, f = e / rows;
    tile[r * kMaxFrames + f] = frames.p[f][voxel_of(t, s, r0 + r)];
  }
}

// G = B^H B of block `first + blockIdx.x`, column-major with leading dimension F. Each thread owns
// up to kEntriesPerThread entries (i, j); the products of floats are exact in double.
__global__ void __launch_bounds__(kThreads)
    gram_kernel(Frames frames, Tiling tiling, long long first, cuDoubleComplex *gram) {
  __shared__ float2 tile[kTileRows * kMaxFrames];
  const int F = frames.count;
  const BlockShape shape = block_shape(tiling, first + blockIdx.x);
  double re[kEntriesPerThread] = {}, im[kEntriesPerThread] = {};
  for (long long r0 = 0; r0 < shape.rows; r0 += kTileRows) {
    const int rows = static_cast<int>(min(static_cast<long long>(kTileRows), shape.rows - r0));
    load_tile(frames, tiling, shape, r0, rows, tile);
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kEntriesPerThread; ++q) {
      const int e = threadIdx.x + q * kThreads, i = e % F, j = e / F;
      if (e >= F * F) break;
      for (int r = 0; r < rows; ++r) { // conj(B(r, i)) B(r, j)
        const float2 a = tile[r * kMaxFrames + i], c = tile[r * kMaxFrames + j];
        re[q] += double(a.x) * c.x + double(a.y) * c.y;
        im[q] += double(a.x) * c.y - double(a.y) * c.x;
      }
    }
    __syncthreads();
  }
  cuDoubleComplex *g = gram + static_cast<long long>(blockIdx.x) * F * F;
#pragma unroll
  for (int q = 0; q < kEntriesPerThread; ++q) {
    const int e = threadIdx.x + q * kThreads;
    if (e < F * F) g[e] = make_cuDoubleComplex(re[q], im[q]); // e = i + j F
  }
}

// A block of zeros (a region a previous shrink zeroed) has G = 0: its eigen-decomposition is given
// here rather than asked of the Jacobi solver, whose convergence test is relative to ||G||. G of
// such a block becomes I (eigenvectors I, converged at once); zero_block_values then sets its
// eigenvalues to 0. A Gram's trace is 0 exactly when the block is (its diagonal sums |B|^2).
__global__ void identity_for_zero_blocks(cuDoubleComplex *gram, int F, int count, int *zero) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= count) return;
  cuDoubleComplex *g = gram + static_cast<long long>(b) * F * F;
  double trace = 0;
  for (int i = 0; i < F; ++i) trace += cuCreal(g[i + i * F]);
  zero[b] = trace == 0;
  if (trace != 0) return;
  for (int e = 0; e < F * F; ++e) g[e] = make_cuDoubleComplex(e % F == e / F ? 1 : 0, 0);
}

__global__ void zero_block_values(double *values, int F, int count, const int *zero) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= count || !zero[b]) return;
  for (int i = 0; i < F; ++i) values[static_cast<long long>(b) * F + i] = 0;
}

// One frame: G is 1 x 1, its own eigenvalue with eigenvector 1 (no eigensolver needed).
__global__ void scalar_eigen_kernel(cuDoubleComplex *gram, double *values, int *info, int count) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= count) return;
  values[b] = cuCreal(gram[b]);
  gram[b] = make_cuDoubleComplex(1, 0);
  info[b] = 0;
}

// The singular values of a block from its Gram's eigenvalues, the null space's rounding zeroed.
__device__ double singular_value(const double *values, int F, int i) {
  double largest = 0;
  for (int k = 0; k < F; ++k) largest = fmax(largest, values[k]);
  const double v = values[i];
  return v > F * DBL_EPSILON * largest ? sqrt(v) : 0.0;
}

// The share of component i that the shrink removes: min(t / s, 1) (0 when t = 0).
__device__ double removed_share(double s, double t) { return t == 0 ? 0.0 : s <= t ? 1.0 : t / s; }

// B' = B M in place for block `first + blockIdx.x` (see the file comment for M).
__global__ void __launch_bounds__(kThreads)
    rebuild_kernel(Frames frames, Tiling tiling, long long first, const cuDoubleComplex *vectors, const double *values,
                   const int *info, double t) {
  __shared__ double2 v[kMaxFrames * kMaxFrames]; // v[row + k F]: eigenvector k
  __shared__ double2 m[kMaxFrames * kMaxFrames]; // m[i kMaxFrames + j] = M(i, j)
  __shared__ double removed[kMaxFrames];
  __shared__ float2 tile[kTileRows * kMaxFrames];
  const int F = frames.count;
  const long long local = blockIdx.x;
  const cuDoubleComplex *vb = vectors + local * F * F;
  for (int e = threadIdx.x; e < F * F; e += blockDim.x) v[e] = make_double2(cuCreal(vb[e]), cuCimag(vb[e]));
  if (threadIdx.x < F) removed[threadIdx.x] = removed_share(singular_value(values + local * F, F, threadIdx.x), t);
  __syncthreads();
  int all_removed = 0, none_removed = 0;
  for (int k = 0; k < F; ++k) {
    all_removed += removed[k] == 1.0;
    none_removed += removed[k] == 0.0;
  }
  // Kept form (V diag(1 - removed) V^H) when it has fewer terms than the removed form.
  const bool kept_form = F - all_removed < F - none_removed;
  const bool failed = info[local] != 0; // the eigensolver did not converge: NaN for the solver's check
  for (int e = threadIdx.x; e < F * F; e += blockDim.x) {
    const int i = e % F, j = e / F;
    double re = kept_form || i != j ? 0.0 : 1.0, im = 0.0;
    const double sign = kept_form ? 1.0 : -1.0;
    for (int k = 0; k < F; ++k) {
      const double c = kept_form ? 1.0 - removed[k] : removed[k];
      if (c == 0.0) continue;
      const double2 a = v[i + k * F], b = v[j + k * F]; // a conj(b)
      re += sign * c * (a.x * b.x + a.y * b.y);
      im += sign * c * (a.y * b.x - a.x * b.y);
    }
    m[i * kMaxFrames + j] = failed ? make_double2(CUDART_NAN, CUDART_NAN) : make_double2(re, im);
  }
  __syncthreads();
  const BlockShape shape = block_shape(tiling, first + local);
  for (long long r0 = 0; r0 < shape.rows; r0 += kTileRows) {
    const int rows = static_cast<int>(min(static_cast<long long>(kTileRows), shape.rows - r0));
    load_tile(frames, tiling, shape, r0, rows, tile);
    __syncthreads();
    for (int e = threadIdx.x; e < rows * F; e += blockDim.x) {
      const int j = e % F, r = e / F;
      double re = 0, im = 0;
      for (int i = 0; i < F; ++i) { // B(r, i) M(i, j)
        const float2 a = tile[r * kMaxFrames + i];
        const double2 c = m[i * kMaxFrames + j];
        re += a.x * c.x - a.y * c.y;
        im += a.x * c.y + a.y * c.x;
      }
      frames.p[j][voxel_of(tiling, shape, r0 + r)] = make_float2(static_cast<float>(re), static_cast<float>(im));
    }
    __syncthreads();
  }
}

// norms[first + b] = sum_i s_i of block b of the chunk (NaN where the eigensolver failed).
__global__ void norm_kernel(const double *values, const int *info, int F, int count, long long first, double *norms) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= count) return;
  double sum = 0;
  for (int i = 0; i < F; ++i) sum += singular_value(values + static_cast<long long>(b) * F, F, i);
  norms[first + b] = info[b] != 0 ? CUDART_NAN : sum;
}

// *result = the sum of values[0, count), in a fixed order (one block: strided partial sums, then a
// tree in shared memory).
__global__ void __launch_bounds__(kThreads) ordered_sum_kernel(const double *values, long long count, double *result) {
  __shared__ double partial[kThreads];
  double s = 0;
  for (long long i = threadIdx.x; i < count; i += kThreads) s += values[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *result = partial[0];
}

void check_launch() { MRI_CUDA_CHECK(cudaGetLastError()); }

void check_cusolver(cusolverStatus_t status, const char *call) {
  if (::mri::cuda::detail::inject_fault_now()) status = CUSOLVER_STATUS_ALLOC_FAILED;
  if (status != CUSOLVER_STATUS_SUCCESS)
    throw CudaError(::mri::cuda::detail::failure_text(call, __FILE__, __LINE__) + "cusolverStatus_t " +
                    std::to_string(static_cast<int>(status)));
}
#define MRI_CUSOLVER_CHECK(call) check_cusolver((call), #call)

std::string describe(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

} // namespace

class LowRankPlan {
public:
  LowRankPlan(const Grid &grid, unsigned axes, int block, std::size_t frames)
      : grid_(grid), frames_(static_cast<int>(frames)) {
    if (frames < 1) mri::detail::invalid_argument("frames", frames, "at least one frame");
    if (frames > kDeviceLowRankMaxFrames)
      throw Unsupported("locally low rank on the GPU takes at most " + std::to_string(kDeviceLowRankMaxFrames) +
                        " frames (cuSOLVER's batched eigensolver); " + std::to_string(frames) +
                        " given: use backend = cpu or auto");
    if (block < 1) mri::detail::invalid_argument("block", block, "a block is at least one voxel wide");
    axes = resolve_axes(grid, axes);
    long long blocks = 1;
    for (int a = 0; a < 3; ++a) {
      const long long n = grid.extent(a);
      const bool spans = (axes >> a & 1u) != 0;
      if (spans && block > n)
        mri::detail::invalid_argument("block", block, "larger than the image along an axis of extent " +
                                                          std::to_string(n));
      tiling_.extent[a] = n;
      tiling_.size[a] = spans ? block : n;
      tiling_.shift[a] = 0;
      tiling_.count[a] = (n + tiling_.size[a] - 1) / tiling_.size[a];
      blocks *= tiling_.count[a];
    }
    blocks_ = blocks;
    chunk_ = static_cast<int>(mri::detail::low_rank_chunk_blocks(blocks_, frames_)); // the memory estimate's
    gram_.grow(static_cast<std::size_t>(chunk_) * frames * frames);
    values_.grow(static_cast<std::size_t>(chunk_) * frames);
    info_.grow(static_cast<std::size_t>(chunk_));
    zero_.grow(static_cast<std::size_t>(chunk_));
    norms_.grow(static_cast<std::size_t>(blocks_) + 1); // + 1: the sum
    if (frames_ > 1) make_solver();
  }
  ~LowRankPlan() {
    if (event_) cudaEventDestroy(event_);
    if (params_) cusolverDnDestroySyevjInfo(params_);
    if (handle_) cusolverDnDestroy(handle_);
  }
  LowRankPlan(const LowRankPlan &) = delete;
  LowRankPlan &operator=(const LowRankPlan &) = delete;

  void shrink(std::vector<DeviceImage> &frames, const std::array<std::int64_t, 3> &shift, double t) {
    if (!std::isfinite(t) || t < 0) mri::detail::invalid_argument("t", t, "a threshold is finite and >= 0");
    const Frames pointers = frame_pointers(frames);
    const Tiling tiling = shifted(shift);
    const cudaStream_t stream = join(frames);
    for_each_chunk(pointers, tiling, CUSOLVER_EIG_MODE_VECTOR, stream, [&](long long first, int count) {
      rebuild_kernel<<<count, kThreads, 0, stream>>>(pointers, tiling, first, gram_.get(), values_.get(), info_.get(),
                                                     t);
    });
    release(frames, stream);
  }

  double norm(const std::vector<DeviceImage> &frames, const std::array<std::int64_t, 3> &shift) {
    const Frames pointers = frame_pointers(frames);
    const Tiling tiling = shifted(shift);
    const cudaStream_t stream = join(frames);
    for_each_chunk(pointers, tiling, CUSOLVER_EIG_MODE_NOVECTOR, stream, [&](long long first, int count) {
      norm_kernel<<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(values_.get(), info_.get(), frames_,
                                                                              count, first, norms_.get());
    });
    double *sum = norms_.get() + blocks_;
    ordered_sum_kernel<<<1, kThreads, 0, stream>>>(norms_.get(), blocks_, sum);
    check_launch();
    double host = 0;
    MRI_CUDA_CHECK(cudaMemcpyAsync(&host, sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
    MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
    release(frames, stream);
    return host;
  }

  std::size_t device_bytes() const {
    return (gram_.size() + work_.size()) * sizeof(cuDoubleComplex) + (values_.size() + norms_.size()) * sizeof(double) +
           (info_.size() + zero_.size()) * sizeof(int);
  }

private:
  // Blocks in chunks of chunk_ (the Gram matrices' memory bound): each chunk's Gram matrices and
  // their eigen-decomposition (mode: with or without vectors), then `then(first, count)` launches
  // what uses them on `stream`, before the next chunk overwrites them.
  template <class Then>
  void for_each_chunk(const Frames &pointers, const Tiling &tiling, cusolverEigMode_t mode, cudaStream_t stream,
                      Then &&then) {
    for (long long first = 0; first < blocks_; first += chunk_) {
      const int count = static_cast<int>(std::min<long long>(chunk_, blocks_ - first));
      gram_kernel<<<count, kThreads, 0, stream>>>(pointers, tiling, first, gram_.get());
      check_launch();
      eigen(count, mode, stream);
      then(first, count);
      check_launch();
    }
  }

  void make_solver() {
    MRI_CUSOLVER_CHECK(cusolverDnCreate(&handle_));
    MRI_CUSOLVER_CHECK(cusolverDnCreateSyevjInfo(&params_));
    // The default tolerance (machine epsilon) and sweep limit (100); eigenvalues need no order.
    MRI_CUSOLVER_CHECK(cusolverDnXsyevjSetSortEig(params_, 0));
    for (const cusolverEigMode_t mode : {CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_MODE_NOVECTOR}) { // the larger
      int lwork = 0;
      MRI_CUSOLVER_CHECK(cusolverDnZheevjBatched_bufferSize(handle_, mode, CUBLAS_FILL_MODE_LOWER, frames_,
                                                            gram_.get(), frames_, values_.get(), &lwork, params_,
                                                            chunk_));
      lwork_ = std::max(lwork_, lwork);
    }
    work_.grow(static_cast<std::size_t>(std::max(lwork_, 1)));
  }

  void eigen(int count, cusolverEigMode_t mode, cudaStream_t stream) {
    const int grid = (count + kThreads - 1) / kThreads;
    identity_for_zero_blocks<<<grid, kThreads, 0, stream>>>(gram_.get(), frames_, count, zero_.get());
    check_launch();
    solve_eigen(count, mode, stream);
    zero_block_values<<<grid, kThreads, 0, stream>>>(values_.get(), frames_, count, zero_.get());
    check_launch();
  }

  void solve_eigen(int count, cusolverEigMode_t mode, cudaStream_t stream) {
    if (frames_ == 1) {
      scalar_eigen_kernel<<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(gram_.get(), values_.get(),
                                                                                      info_.get(), count);
      check_launch();
      return;
    }
    MRI_CUSOLVER_CHECK(cusolverDnSetStream(handle_, stream));
    MRI_CUSOLVER_CHECK(cusolverDnZheevjBatched(handle_, mode, CUBLAS_FILL_MODE_LOWER, frames_, gram_.get(), frames_,
                                               values_.get(), work_.get(), lwork_, info_.get(), params_, count));
  }

  Frames frame_pointers(std::vector<DeviceImage> &frames) const {
    if (static_cast<int>(frames.size()) != frames_)
      mri::detail::invalid_argument("frames.size()", frames.size(),
                                    "the operator was made for " + std::to_string(frames_) + " frames");
    Frames p{};
    p.count = frames_;
    for (int f = 0; f < frames_; ++f) {
      DeviceImage &image = frames[static_cast<std::size_t>(f)];
      if (image.empty() || image.grid() != grid_)
        mri::detail::invalid_argument("frames[" + std::to_string(f) + "]",
                                      image.empty() ? std::string("empty") : describe(image.grid()),
                                      "must be an image on the grid " + describe(grid_));
      p.p[f] = reinterpret_cast<float2 *>(image.data());
    }
    return p;
  }
  Frames frame_pointers(const std::vector<DeviceImage> &frames) const { // read only (norm)
    return frame_pointers(const_cast<std::vector<DeviceImage> &>(frames));
  }

  Tiling shifted(const std::array<std::int64_t, 3> &shift) const {
    Tiling t = tiling_;
    for (int a = 0; a < 3; ++a) t.shift[a] = ((shift[a] % t.extent[a]) + t.extent[a]) % t.extent[a];
    return t;
  }

  // frames[0]'s stream, made to wait for the work already enqueued on the other frames' streams.
  cudaStream_t join(const std::vector<DeviceImage> &frames) {
    const auto stream = static_cast<cudaStream_t>(frames.front().stream());
    for (const DeviceImage &f : frames)
      if (static_cast<cudaStream_t>(f.stream()) != stream) {
        MRI_CUDA_CHECK(cudaEventRecord(event(), static_cast<cudaStream_t>(f.stream())));
        MRI_CUDA_CHECK(cudaStreamWaitEvent(stream, event(), 0));
      }
    return stream;
  }
  // The other frames' streams made to wait for this work.
  void release(const std::vector<DeviceImage> &frames, cudaStream_t stream) {
    bool recorded = false;
    for (const DeviceImage &f : frames)
      if (static_cast<cudaStream_t>(f.stream()) != stream) {
        if (!recorded) MRI_CUDA_CHECK(cudaEventRecord(event(), stream));
        recorded = true;
        MRI_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(f.stream()), event(), 0));
      }
  }
  cudaEvent_t event() {
    if (!event_) MRI_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    return event_;
  }

  Grid grid_;
  int frames_;
  Tiling tiling_{};
  long long blocks_ = 0;
  int chunk_ = 1;
  detail::DeviceBuffer<cuDoubleComplex> gram_, work_;
  detail::DeviceBuffer<double> values_, norms_;
  detail::DeviceBuffer<int> info_, zero_; // zero_: the chunk's all-zero blocks
  int lwork_ = 0;
  cusolverDnHandle_t handle_ = nullptr;
  syevjInfo_t params_ = nullptr;
  cudaEvent_t event_ = nullptr;
};

} // namespace mri::cuda

namespace mri {

LowRankOps<cuda::DeviceImage>::LowRankOps(const Grid &grid, unsigned axes, int block, std::size_t frames)
    : plan_(std::make_unique<cuda::LowRankPlan>(grid, axes, block, frames)) {}
LowRankOps<cuda::DeviceImage>::~LowRankOps() = default;
LowRankOps<cuda::DeviceImage>::LowRankOps(LowRankOps &&) noexcept = default;
LowRankOps<cuda::DeviceImage> &LowRankOps<cuda::DeviceImage>::operator=(LowRankOps &&) noexcept = default;

void LowRankOps<cuda::DeviceImage>::shrink(std::vector<cuda::DeviceImage> &frames,
                                           const std::array<std::int64_t, 3> &shift, double t) {
  plan_->shrink(frames, shift, t);
}

std::size_t LowRankOps<cuda::DeviceImage>::device_bytes() const { return plan_->device_bytes(); }

double LowRankOps<cuda::DeviceImage>::norm(const std::vector<cuda::DeviceImage> &frames,
                                           const std::array<std::int64_t, 3> &shift) {
  return plan_->norm(frames, shift);
}

} // namespace mri
