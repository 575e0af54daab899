// The motion tensor's 10 unique products (sub-task 2 of the GPU motion paper, section 3.2;
// mri/motion.hpp) and the per-warp fold of the field into its time column, through the shared
// mri::detail::motion::tensor_products / fold_warp_offset.
#include "motion_ops.cuh"

namespace mri::cuda::detail::motion {
namespace {

using mri::detail::motion::kTT;
using mri::detail::motion::kXT;
using mri::detail::motion::kYT;
using mri::detail::motion::kZT;

struct TensorPtrs {
  float *c[kChannels];
};

__global__ void tensor_kernel(const float *__restrict__ gx, const float *__restrict__ gy,
                              const float *__restrict__ gz, const float *__restrict__ fixed,
                              const float *__restrict__ moved, TensorPtrs j, long long n) {
  const long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (v >= n)
    return;
  float p[kChannels];
  mri::detail::motion::tensor_products(gx[v], gy[v], gz[v], moved[v] - fixed[v], p);
#pragma unroll
  for (int c = 0; c < kChannels; ++c)
    j.c[c][v] = p[c];
}

__global__ void fold_kernel(TensorPtrs j, const float *__restrict__ u, const float *__restrict__ w1,
                            const float *__restrict__ w2, long long n) {
  const long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (v >= n)
    return;
  float p[kChannels];
#pragma unroll
  for (int c = 0; c < kTT; ++c)
    p[c] = j.c[c][v];
  p[kTT] = 0;
  mri::detail::motion::fold_warp_offset(p, u[v], w1[v], w2[v]);
  j.c[kXT][v] = p[kXT], j.c[kYT][v] = p[kYT], j.c[kZT][v] = p[kZT];
}

TensorPtrs pointers(DeviceTensor &j) {
  TensorPtrs t;
  for (int c = 0; c < kChannels; ++c)
    t.c[c] = j[c].data();
  return t;
}

} // namespace

void tensor(const DeviceField &g, const DeviceVolume &fixed, const DeviceVolume &moved,
            DeviceTensor &j, cudaStream_t s) {
  const long long n = fixed.grid.voxels();
  tensor_kernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(
      g[0].data(), g[1].data(), g[2].data(), fixed.data(), moved.data(), pointers(j), n);
  MRI_CUDA_CHECK(cudaGetLastError());
}

void fold(DeviceTensor &j, const DeviceField &w, cudaStream_t s) {
  const long long n = w[0].grid.voxels();
  fold_kernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(pointers(j), w[0].data(), w[1].data(),
                                                        w[2].data(), n);
  MRI_CUDA_CHECK(cudaGetLastError());
}

} // namespace mri::cuda::detail::motion
