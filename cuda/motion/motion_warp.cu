// Trilinear warping of the moving frame (the GPU motion paper's section 4.4; mri/motion.hpp) and
// the pyramid's resampling, both mri::detail::motion::trilinear (clamp-to-edge). The paper found
// texture fetches too coarse (8-bit interpolation weights) for this: plain loads, one thread per
// voxel.
#include "motion_ops.cuh"

namespace mri::cuda::detail::motion {
namespace {

using mri::detail::motion::resample_position;
using mri::detail::motion::trilinear;

__global__ void warp_kernel(const float *__restrict__ f, const float *__restrict__ u,
                            const float *__restrict__ v, const float *__restrict__ w, float *out,
                            Dims d) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
            z = blockIdx.z;
  if (x >= d.nx || y >= d.ny)
    return;
  const long long i = x + (long long)d.nx * (y + (long long)d.ny * z);
  out[i] = trilinear(f, d.nx, d.ny, d.nz, float(x) + u[i], float(y) + v[i], float(z) + w[i]);
}

__global__ void resample_kernel(const float *__restrict__ f, Dims from, float *out, Dims to,
                                float scale) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
            z = blockIdx.z;
  if (x >= to.nx || y >= to.ny)
    return;
  out[x + (long long)to.nx * (y + (long long)to.ny * z)] =
      scale * trilinear(f, from.nx, from.ny, from.nz, resample_position<float>(x, to.nx, from.nx),
                        resample_position<float>(y, to.ny, from.ny),
                        resample_position<float>(z, to.nz, from.nz));
}

dim3 blocks(const Dims &d) { return dim3((d.nx + 31) / 32, (d.ny + 7) / 8, d.nz); }

} // namespace

void warp(const DeviceVolume &f, const DeviceField &w, DeviceVolume &out, cudaStream_t s) {
  const Dims d(f.grid);
  warp_kernel<<<blocks(d), dim3(32, 8), 0, s>>>(f.data(), w[0].data(), w[1].data(), w[2].data(),
                                                out.data(), d);
  MRI_CUDA_CHECK(cudaGetLastError());
}

void resample(const DeviceVolume &f, DeviceVolume &out, float scale, cudaStream_t s) {
  const Dims to(out.grid);
  resample_kernel<<<blocks(to), dim3(32, 8), 0, s>>>(f.data(), Dims(f.grid), out.data(), to, scale);
  MRI_CUDA_CHECK(cudaGetLastError());
}

} // namespace mri::cuda::detail::motion
