// Spatial derivatives of the fixed frame (the GPU motion paper's section 4.1; mri/motion.hpp), zero
// at the border: the shared formula mri::detail::motion::derivative, one thread per voxel, loads
// through L1/L2.
#include "motion_ops.cuh"

namespace mri::cuda::detail::motion {
namespace {

__global__ void gradients_kernel(const float *__restrict__ f, float *gx, float *gy, float *gz,
                                 Dims d, bool central) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
            z = blockIdx.z;
  if (x >= d.nx || y >= d.ny)
    return;
  const long long v = x + (long long)d.nx * (y + (long long)d.ny * z);
  using mri::detail::motion::derivative;
  gx[v] = derivative(f, v, 1LL, (long long)x, (long long)d.nx, central);
  gy[v] = derivative(f, v, (long long)d.nx, (long long)y, (long long)d.ny, central);
  gz[v] = derivative(f, v, (long long)d.nx * d.ny, (long long)z, (long long)d.nz, central);
}

} // namespace

void gradients(const DeviceVolume &f, DeviceField &g, bool central, cudaStream_t s) {
  const Dims d(f.grid);
  gradients_kernel<<<dim3((d.nx + 31) / 32, (d.ny + 7) / 8, d.nz), dim3(32, 8), 0, s>>>(
      f.data(), g[0].data(), g[1].data(), g[2].data(), d, central);
  MRI_CUDA_CHECK(cudaGetLastError());
}

} // namespace mri::cuda::detail::motion
