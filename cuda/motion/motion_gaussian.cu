// Separable 3D Gaussian (the GPU motion paper's section 4.2; mri/motion.hpp): one launch per axis,
// the taps in __constant__ memory (every thread of a warp reads the same tap: a broadcast),
// clamp-to-edge borders as the CPU's.
#include "motion_ops.cuh"

namespace mri::cuda::detail::motion {
namespace {

constexpr int kKernels = 3;
__constant__ float c_taps[kKernels][kMaxGaussianSize];
int h_radius[kKernels] = {0, 0, 0};

// The clamped-border sum along `axis` at voxel (x, y, z) of `in` into `out` (both d's volumes).
__device__ void convolve_voxel(const float *__restrict__ in, float *__restrict__ out, Dims d, int kernel,
                               int radius, int axis, int x, int y, int z) {
  const int pos[3] = {x, y, z}, n[3] = {d.nx, d.ny, d.nz};
  const long long stride = axis == 0 ? 1 : axis == 1 ? d.nx : (long long)d.nx * d.ny;
  const long long v = x + (long long)d.nx * (y + (long long)d.ny * z);
  const int i = pos[axis];
  float acc = 0;
  for (int k = -radius; k <= radius; ++k) {
    const int j = min(max(i + k, 0), n[axis] - 1);
    acc += c_taps[kernel][k + radius] * in[v + (j - i) * stride];
  }
  out[v] = acc;
}

__global__ void convolve_axis(const float *__restrict__ in, float *__restrict__ out, Dims d,
                              int kernel, int radius, int axis) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.nx || y >= d.ny)
    return;
  convolve_voxel(in, out, d, kernel, radius, axis, x, y, blockIdx.z);
}

// convolve_axis for `channels` volumes at once (blockIdx.z = channel * nz + z): the same sums,
// one launch instead of one per channel.
struct ChannelPtrs {
  const float *in[kChannels];
  float *out[kChannels];
};
__global__ void convolve_axis_channels(ChannelPtrs p, Dims d, int kernel, int radius, int axis) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
            z = int(blockIdx.z) % d.nz, c = int(blockIdx.z) / d.nz;
  if (x >= d.nx || y >= d.ny)
    return;
  convolve_voxel(p.in[c], p.out[c], d, kernel, radius, axis, x, y, z);
}

} // namespace

void set_gaussian_taps(const std::array<std::vector<double>, 3> &taps) {
  float h[kKernels][kMaxGaussianSize] = {};
  for (int k = 0; k < kKernels; ++k) {
    h_radius[k] = int(taps[k].size() / 2);
    for (std::size_t t = 0; t < taps[k].size(); ++t)
      h[k][t] = float(taps[k][t]);
  }
  MRI_CUDA_CHECK(cudaMemcpyToSymbol(c_taps, h, sizeof(h)));
}

void gaussian(DeviceVolume &f, DeviceVolume &tmp, int kernel, cudaStream_t s) {
  const int r = h_radius[kernel];
  if (r == 0)
    return;
  const Dims d(f.grid);
  const dim3 block(32, 8), grid((d.nx + 31) / 32, (d.ny + 7) / 8, d.nz);
  convolve_axis<<<grid, block, 0, s>>>(f.data(), tmp.data(), d, kernel, r, 0);
  MRI_CUDA_CHECK(cudaGetLastError());
  convolve_axis<<<grid, block, 0, s>>>(tmp.data(), f.data(), d, kernel, r, 1);
  MRI_CUDA_CHECK(cudaGetLastError());
  convolve_axis<<<grid, block, 0, s>>>(f.data(), tmp.data(), d, kernel, r, 2);
  MRI_CUDA_CHECK(cudaGetLastError());
  std::swap(f.d, tmp.d);
}

} // namespace mri::cuda::detail::motion

namespace mri::cuda::detail::motion {

void gaussian_channels(DeviceTensor &j, int channels, DeviceTensor &tmp, int kernel,
                       cudaStream_t s) {
  const int r = h_radius[kernel];
  if (r == 0 || channels == 0)
    return;
  const Dims d(j[0].grid);
  const dim3 block(32, 8), grid((d.nx + 31) / 32, (d.ny + 7) / 8, unsigned(d.nz) * channels);
  const auto pass = [&](DeviceTensor &from, DeviceTensor &to, int axis) {
    ChannelPtrs p{};
    for (int c = 0; c < channels; ++c)
      p.in[c] = from[c].data(), p.out[c] = to[c].data();
    convolve_axis_channels<<<grid, block, 0, s>>>(p, d, kernel, r, axis);
    MRI_CUDA_CHECK(cudaGetLastError());
  };
  pass(j, tmp, 0);
  pass(tmp, j, 1);
  pass(j, tmp, 2);
  for (int c = 0; c < channels; ++c)
    std::swap(j[c].d, tmp[c].d);
}

} // namespace mri::cuda::detail::motion
