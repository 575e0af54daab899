// DeviceImageWarp (image_warp_cuda.hpp): mri::ImageWarp's trilinear gather and its transpose on
// the device. One thread per state voxel in both directions; the per-voxel stencil, weights and
// lerps are mri/detail/mcir_stencil.hpp's, the host's own.
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "cuda_check.cuh"
#include "device.cuh"
#include "device_buffer.cuh"
#include "mcir/image_warp_cuda.hpp"
#include "mri/detail/mcir_stencil.hpp"
#include "mri/error.hpp"

namespace mri::cuda {
namespace {

namespace dm = ::mri::detail::mcir;

constexpr int kThreads = 256;

struct Extents {
  std::int64_t n[3];
};

// What each kernel reads: the field's components and the weights (null without weighting).
struct FieldView {
  const float *u, *v, *w, *jacobian;
};

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }

int blocks_for(std::int64_t n) {
  return static_cast<int>(
      std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 64LL * detail::multiprocessor_count()));
}

__device__ dm::Stencil stencil_of(const FieldView &f, const std::int64_t (&n)[3], std::int64_t v) {
  const std::int64_t x = v % n[0], r = v / n[0], y = r % n[1], z = r / n[1];
  const float p[3] = {float(x) + f.u[v], float(y) + f.v[v], float(z) + f.w[v]};
  return dm::stencil_at(n, p);
}

__global__ void forward_kernel(FieldView f, Extents e, const float *__restrict__ in, float2 *__restrict__ out) {
  const std::int64_t(&n)[3] = e.n;
  const std::int64_t voxels = n[0] * n[1] * n[2];
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < voxels;
       v += std::int64_t(gridDim.x) * blockDim.x) {
    const dm::Stencil s = stencil_of(f, n, v);
    float2 value = make_float2(dm::interpolate(in, 2, s, n), dm::interpolate(in + 1, 2, s, n));
    if (f.jacobian) {
      const float j = f.jacobian[v];
      value.x *= j;
      value.y *= j;
    }
    out[v] = value;
  }
}

__global__ void adjoint_kernel(FieldView f, Extents e, const float2 *__restrict__ in, float2 *out) {
  const std::int64_t(&n)[3] = e.n;
  const std::int64_t voxels = n[0] * n[1] * n[2];
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < voxels;
       v += std::int64_t(gridDim.x) * blockDim.x) {
    const dm::Stencil s = stencil_of(f, n, v);
    float2 value = in[v];
    if (f.jacobian) {
      const float j = f.jacobian[v];
      value.x *= j;
      value.y *= j;
    }
    if (value.x == 0.0f && value.y == 0.0f)
      continue;
    for (int k = 0; k < 8; ++k) {
      const float w = dm::corner_weight(s, k);
      if (w != 0.0f)
        atomicAdd(&out[dm::corner_index(s, n, k)], make_float2(w * value.x, w * value.y));
    }
  }
}

// The Gather adjoint's lists (image_warp_cuda.hpp). A pair is encoded as 8 v + k (corner k of
// state voxel v); only pairs of non-zero weight are listed, as the CPU scatter skips the others.
__global__ void count_pairs_kernel(FieldView f, Extents e, unsigned *counts) {
  const std::int64_t(&n)[3] = e.n;
  const std::int64_t voxels = n[0] * n[1] * n[2];
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < voxels;
       v += std::int64_t(gridDim.x) * blockDim.x) {
    const dm::Stencil s = stencil_of(f, n, v);
    for (int k = 0; k < 8; ++k)
      if (dm::corner_weight(s, k) != 0.0f)
        atomicAdd(&counts[dm::corner_index(s, n, k)], 1u); // integer: order-free
  }
}

__global__ void fill_pairs_kernel(FieldView f, Extents e, const unsigned *offsets, unsigned *cursor, unsigned *pairs) {
  const std::int64_t(&n)[3] = e.n;
  const std::int64_t voxels = n[0] * n[1] * n[2];
  for (std::int64_t v = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; v < voxels;
       v += std::int64_t(gridDim.x) * blockDim.x) {
    const dm::Stencil s = stencil_of(f, n, v);
    for (int k = 0; k < 8; ++k)
      if (dm::corner_weight(s, k) != 0.0f) {
        const std::int64_t c = dm::corner_index(s, n, k);
        pairs[offsets[c] + atomicAdd(&cursor[c], 1u)] = static_cast<unsigned>(8 * v + k);
      }
  }
}

// Each reference voxel's list in ascending order (insertion sort: lists hold ~8 pairs where the
// field is smooth, more only where it compresses or clamps), so the sum's order is fixed.
__global__ void sort_pairs_kernel(std::int64_t voxels, const unsigned *offsets, unsigned *pairs) {
  for (std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; c < voxels;
       c += std::int64_t(gridDim.x) * blockDim.x) {
    const unsigned first = offsets[c], last = offsets[c + 1];
    for (unsigned i = first + 1; i < last; ++i) {
      const unsigned key = pairs[i];
      unsigned j = i;
      for (; j > first && pairs[j - 1] > key; --j)
        pairs[j] = pairs[j - 1];
      pairs[j] = key;
    }
  }
}

__global__ void adjoint_gather_kernel(FieldView f, Extents e, const unsigned *__restrict__ offsets,
                                      const unsigned *__restrict__ pairs, const float2 *__restrict__ in,
                                      float2 *__restrict__ out) {
  const std::int64_t(&n)[3] = e.n;
  const std::int64_t voxels = n[0] * n[1] * n[2];
  for (std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; c < voxels;
       c += std::int64_t(gridDim.x) * blockDim.x) {
    float2 sum = make_float2(0.0f, 0.0f);
    for (unsigned i = offsets[c]; i < offsets[c + 1]; ++i) {
      const std::int64_t v = pairs[i] >> 3;
      const int k = static_cast<int>(pairs[i] & 7u);
      const float w = dm::corner_weight(stencil_of(f, n, v), k);
      float2 value = in[v];
      if (f.jacobian) {
        const float j = f.jacobian[v];
        value.x *= j;
        value.y *= j;
      }
      sum.x += w * value.x;
      sum.y += w * value.y;
    }
    out[c] = sum;
  }
}

void check_image(const DeviceImage &x, const Grid &grid, const char *name) {
  if (!(x.grid() == grid))
    ::mri::detail::invalid_argument(std::string(name) + ".grid().voxels()", x.grid().voxels(),
                                    "differs from the warp's grid (" + std::to_string(grid.voxels()) + " voxels)");
}

} // namespace

struct DeviceImageWarp::Impl {
  Grid grid;
  bool identity = false;
  DeviceWarpAdjoint adjoint = DeviceWarpAdjoint::Gather;
  detail::DeviceBuffer<float> u, v, w, jacobian;
  detail::DeviceBuffer<unsigned> offsets, pairs; // Gather: voxels + 1 list starts, the lists
  void make_lists();
  FieldView view() const { return {u.get(), v.get(), w.get(), jacobian.size() ? jacobian.get() : nullptr}; }
  Extents extents() const { return {{grid.nx(), grid.ny(), grid.nz()}}; }
};

namespace {
void upload(detail::DeviceBuffer<float> &to, const float *from, std::size_t count) {
  to.grow(count);
  MRI_CUDA_CHECK(cudaMemcpy(to.get(), from, count * sizeof(float), cudaMemcpyHostToDevice));
}
} // namespace

// Count, scan, fill and sort on the default stream, then wait: the lists are ready on return.
void DeviceImageWarp::Impl::make_lists() {
  const std::int64_t voxels = grid.voxels();
  const cudaStream_t stream = as_stream(default_stream());
  detail::DeviceBuffer<unsigned> counts(static_cast<std::size_t>(voxels) + 1);
  offsets.grow(static_cast<std::size_t>(voxels) + 1);
  MRI_CUDA_CHECK(cudaMemsetAsync(counts.get(), 0, (voxels + 1) * sizeof(unsigned), stream));
  count_pairs_kernel<<<blocks_for(voxels), kThreads, 0, stream>>>(view(), extents(), counts.get());
  MRI_CUDA_CHECK(cudaGetLastError());
  std::size_t scan_bytes = 0;
  MRI_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts.get(), offsets.get(),
                                               static_cast<int>(voxels + 1), stream));
  detail::DeviceBuffer<unsigned char> scratch(std::max<std::size_t>(scan_bytes, 1));
  MRI_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scratch.get(), scan_bytes, counts.get(), offsets.get(),
                                               static_cast<int>(voxels + 1), stream));
  unsigned total = 0;
  MRI_CUDA_CHECK(cudaMemcpyAsync(&total, offsets.get() + voxels, sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
  pairs.grow(std::max<std::size_t>(total, 1));
  MRI_CUDA_CHECK(cudaMemsetAsync(counts.get(), 0, (voxels + 1) * sizeof(unsigned), stream)); // the fill's cursors
  fill_pairs_kernel<<<blocks_for(voxels), kThreads, 0, stream>>>(view(), extents(), offsets.get(), counts.get(),
                                                                 pairs.get());
  MRI_CUDA_CHECK(cudaGetLastError());
  sort_pairs_kernel<<<blocks_for(voxels), kThreads, 0, stream>>>(voxels, offsets.get(), pairs.get());
  MRI_CUDA_CHECK(cudaGetLastError());
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
}

DeviceImageWarp::DeviceImageWarp(const ImageWarp &warp, DeviceWarpAdjoint adjoint) : impl_(std::make_unique<Impl>()) {
  if (!detail::device_present())
    throw Unsupported("DeviceImageWarp: no usable CUDA device");
  impl_->grid = warp.grid();
  impl_->identity = warp.is_identity();
  impl_->adjoint = adjoint;
  if (adjoint == DeviceWarpAdjoint::Gather && warp.grid().voxels() >= (std::int64_t(1) << 29))
    throw Unsupported("DeviceImageWarp: the gather adjoint's lists take grids below 2^29 voxels (this one has " +
                      std::to_string(warp.grid().voxels()) + "); use DeviceWarpAdjoint::Atomic");
  if (impl_->identity)
    return;
  const DisplacementField &f = warp.field();
  const std::size_t n = static_cast<std::size_t>(impl_->grid.voxels());
  upload(impl_->u, f.u.data(), n);
  upload(impl_->v, f.v.data(), n);
  upload(impl_->w, f.w.data(), n);
  if (!warp.jacobian().empty())
    upload(impl_->jacobian, warp.jacobian().data(), n);
  if (adjoint == DeviceWarpAdjoint::Gather)
    impl_->make_lists();
}

DeviceImageWarp::~DeviceImageWarp() = default;
DeviceImageWarp::DeviceImageWarp(DeviceImageWarp &&) noexcept = default;
DeviceImageWarp &DeviceImageWarp::operator=(DeviceImageWarp &&) noexcept = default;

const Grid &DeviceImageWarp::grid() const { return impl_->grid; }
bool DeviceImageWarp::is_identity() const { return impl_->identity; }
DeviceWarpAdjoint DeviceImageWarp::adjoint_form() const { return impl_->adjoint; }

void DeviceImageWarp::forward(const DeviceImage &reference, DeviceImage &state) const {
  check_image(reference, impl_->grid, "reference");
  check_image(state, impl_->grid, "state");
  if (&reference == &state)
    ::mri::detail::invalid_argument("state", "the input image", "must not alias the input");
  const cudaStream_t stream = as_stream(state.stream());
  const std::size_t bytes = state.size() * sizeof(cfloat);
  if (impl_->identity) {
    MRI_CUDA_CHECK(cudaMemcpyAsync(state.data(), reference.data(), bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  forward_kernel<<<blocks_for(impl_->grid.voxels()), kThreads, 0, stream>>>(
      impl_->view(), impl_->extents(), reinterpret_cast<const float *>(reference.data()),
      reinterpret_cast<float2 *>(state.data()));
  MRI_CUDA_CHECK(cudaGetLastError());
}

void DeviceImageWarp::adjoint(const DeviceImage &state, DeviceImage &reference) const {
  check_image(state, impl_->grid, "state");
  check_image(reference, impl_->grid, "reference");
  if (&reference == &state)
    ::mri::detail::invalid_argument("reference", "the input image", "must not alias the input");
  const cudaStream_t stream = as_stream(reference.stream());
  const std::size_t bytes = reference.size() * sizeof(cfloat);
  if (impl_->identity) {
    MRI_CUDA_CHECK(cudaMemcpyAsync(reference.data(), state.data(), bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  if (impl_->adjoint == DeviceWarpAdjoint::Gather) {
    adjoint_gather_kernel<<<blocks_for(impl_->grid.voxels()), kThreads, 0, stream>>>(
        impl_->view(), impl_->extents(), impl_->offsets.get(), impl_->pairs.get(),
        reinterpret_cast<const float2 *>(state.data()), reinterpret_cast<float2 *>(reference.data()));
    MRI_CUDA_CHECK(cudaGetLastError());
    return;
  }
  MRI_CUDA_CHECK(cudaMemsetAsync(reference.data(), 0, bytes, stream));
  adjoint_kernel<<<blocks_for(impl_->grid.voxels()), kThreads, 0, stream>>>(
      impl_->view(), impl_->extents(), reinterpret_cast<const float2 *>(state.data()),
      reinterpret_cast<float2 *>(reference.data()));
  MRI_CUDA_CHECK(cudaGetLastError());
}

} // namespace mri::cuda
