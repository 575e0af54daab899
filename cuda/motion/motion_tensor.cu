// The motion tensor's 10 unique products (sub-task 2 of the GPU motion paper, section 3.2;
// mri/motion.hpp), the per-warp fold of the field into its time column and the Charbonnier data
// term's reweighting, through the shared mri::detail::motion::tensor_products / fold_warp_offset /
// charbonnier_weight.
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

struct ConstTensorPtrs {
  const float *c[kChannels];
};

// j = psi'(e) data on channels kXX..kZT (mri::detail::motion::charbonnier_weight, shared with
// the CPU's charbonnier_reweight in lib/motion/tensor.cpp).
__global__ void charbonnier_kernel(ConstTensorPtrs data, const float *__restrict__ u0,
                                   const float *__restrict__ v0, const float *__restrict__ w0,
                                   const float *__restrict__ u, const float *__restrict__ v,
                                   const float *__restrict__ w, TensorPtrs j, float inv_eps2,
                                   long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float p[kChannels];
#pragma unroll
  for (int c = 0; c < kChannels; ++c)
    p[c] = data.c[c][i];
  const float weight = mri::detail::motion::charbonnier_weight(p, u[i] - u0[i], v[i] - v0[i],
                                                               w[i] - w0[i], inv_eps2);
#pragma unroll
  for (int c = 0; c < kTT; ++c)
    j.c[c][i] = weight * p[c];
}

TensorPtrs pointers(DeviceTensor &j) {
  TensorPtrs t;
  for (int c = 0; c < kChannels; ++c)
    t.c[c] = j[c].data();
  return t;
}

ConstTensorPtrs pointers(const DeviceTensor &j) {
  ConstTensorPtrs t;
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

void charbonnier_reweight(const DeviceTensor &data, const DeviceField &w0, const DeviceField &w,
                          DeviceTensor &j, float inv_eps2, cudaStream_t s) {
  const long long n = w0[0].grid.voxels();
  charbonnier_kernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(
      pointers(data), w0[0].data(), w0[1].data(), w0[2].data(), w[0].data(), w[1].data(),
      w[2].data(), pointers(j), inv_eps2, n);
  MRI_CUDA_CHECK(cudaGetLastError());
}

} // namespace mri::cuda::detail::motion
