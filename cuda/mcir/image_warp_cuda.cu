// DeviceImageWarp (image_warp_cuda.hpp): mri::ImageWarp's trilinear gather and its transpose on
// the device. One thread per state voxel in both directions; the per-voxel stencil, weights and
// lerps are mri/detail/mcir_stencil.hpp's, the host's own.
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
  return static_cast<int>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 64LL * detail::multiprocessor_count()));
}

__device__ dm::Stencil stencil_of(const FieldView &f, const std::int64_t (&n)[3], std::int64_t v) {
  const std::int64_t x = v % n[0], r = v / n[0], y = r % n[1], z = r / n[1];
  const float p[3] = {float(x) + f.u[v], float(y) + f.v[v], float(z) + f.w[v]};
  return dm::stencil_at(n, p);
}

__global__ void forward_kernel(FieldView f, Extents e, const float *__restrict__ in, float2 *__restrict__ out) {
  const std::int64_t (&n)[3] = e.n;
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
  const std::int64_t (&n)[3] = e.n;
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
    if (value.x == 0.0f && value.y == 0.0f) continue;
    for (int k = 0; k < 8; ++k) {
      const float w = dm::corner_weight(s, k);
      if (w != 0.0f) atomicAdd(&out[dm::corner_index(s, n, k)], make_float2(w * value.x, w * value.y));
    }
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
  detail::DeviceBuffer<float> u, v, w, jacobian;
  FieldView view() const { return {u.get(), v.get(), w.get(), jacobian.size() ? jacobian.get() : nullptr}; }
  Extents extents() const { return {{grid.nx(), grid.ny(), grid.nz()}}; }
};

namespace {
void upload(detail::DeviceBuffer<float> &to, const float *from, std::size_t count) {
  to.grow(count);
  MRI_CUDA_CHECK(cudaMemcpy(to.get(), from, count * sizeof(float), cudaMemcpyHostToDevice));
}
} // namespace

DeviceImageWarp::DeviceImageWarp(const ImageWarp &warp) : impl_(std::make_unique<Impl>()) {
  if (!detail::device_present()) throw Unsupported("DeviceImageWarp: no usable CUDA device");
  impl_->grid = warp.grid();
  impl_->identity = warp.is_identity();
  if (impl_->identity) return;
  const DisplacementField &f = warp.field();
  const std::size_t n = static_cast<std::size_t>(impl_->grid.voxels());
  upload(impl_->u, f.u.data(), n);
  upload(impl_->v, f.v.data(), n);
  upload(impl_->w, f.w.data(), n);
  if (!warp.jacobian().empty()) upload(impl_->jacobian, warp.jacobian().data(), n);
}

DeviceImageWarp::~DeviceImageWarp() = default;
DeviceImageWarp::DeviceImageWarp(DeviceImageWarp &&) noexcept = default;
DeviceImageWarp &DeviceImageWarp::operator=(DeviceImageWarp &&) noexcept = default;

const Grid &DeviceImageWarp::grid() const { return impl_->grid; }
bool DeviceImageWarp::is_identity() const { return impl_->identity; }

void DeviceImageWarp::forward(const DeviceImage &reference, DeviceImage &state) const {
  check_image(reference, impl_->grid, "reference");
  check_image(state, impl_->grid, "state");
  if (&reference == &state) ::mri::detail::invalid_argument("state", "the input image", "must not alias the input");
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
  if (&reference == &state) ::mri::detail::invalid_argument("reference", "the input image", "must not alias the input");
  const cudaStream_t stream = as_stream(reference.stream());
  const std::size_t bytes = reference.size() * sizeof(cfloat);
  if (impl_->identity) {
    MRI_CUDA_CHECK(cudaMemcpyAsync(reference.data(), state.data(), bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  MRI_CUDA_CHECK(cudaMemsetAsync(reference.data(), 0, bytes, stream));
  adjoint_kernel<<<blocks_for(impl_->grid.voxels()), kThreads, 0, stream>>>(
      impl_->view(), impl_->extents(), reinterpret_cast<const float2 *>(state.data()),
      reinterpret_cast<float2 *>(reference.data()));
  MRI_CUDA_CHECK(cudaGetLastError());
}

} // namespace mri::cuda
