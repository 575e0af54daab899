#pragma once
// The regularisers' per-voxel definitions, compiled by both the host compiler (lib/recon/regularizer.cpp)
// and nvcc (the CUDA reconstruction kernels and cuFFT callbacks in cuda/): one definition, not a
// copy per backend. Complex values are read as interleaved (re, im) floats, which is the layout
// of std::complex<float> arrays and of CUDA float2 arrays alike.
#include <cstdint>

#if defined(__CUDACC__)
#define MRI_HOST_DEVICE __host__ __device__
#else
#define MRI_HOST_DEVICE
#endif

namespace mri::detail {

// (D^H D x)[v] for forward differences along each axis with D x[n-1] = 0 (no wrap): the
// Neumann Laplacian 2x[i] - x[i-1] - x[i+1] in the interior, x[0]-x[1] and x[n-1]-x[n-2] at the
// ends, summed over the axes of extent > 1 (an axis of extent 1 has no neighbours). (ix, iy, iz)
// are the array indices of voxel v = ix + nx*(iy + ny*iz).
template <class Index>
MRI_HOST_DEVICE inline void difference_normal_voxel(const float *x, Index v, Index ix, Index iy, Index iz,
                                                    Index nx, Index ny, Index nz, float &re, float &im) {
  const Index pos[3] = {ix, iy, iz};
  const Index extent[3] = {nx, ny, nz};
  const Index stride[3] = {1, nx, nx * ny};
  const float cr = x[2 * v], ci = x[2 * v + 1];
  float ar = 0.0f, ai = 0.0f;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int a = 0; a < 3; ++a) {
    if (pos[a] > 0) {
      const Index u = v - stride[a];
      ar += cr - x[2 * u];
      ai += ci - x[2 * u + 1];
    }
    if (pos[a] + 1 < extent[a]) {
      const Index u = v + stride[a];
      ar += cr - x[2 * u];
      ai += ci - x[2 * u + 1];
    }
  }
  re = ar;
  im = ai;
}

// Regulariser codes as the kernels see them (the values of mri::Regularizer).
enum RegularizerCode : int { kRegNone = 0, kRegTikhonov = 1, kRegFiniteDifference = 2 };

// lambda * (W^H W x)[v] for the regulariser `code` (Tikhonov: W = I; finite differences as above).
template <class Index>
MRI_HOST_DEVICE inline void regularizer_normal_voxel(int code, float lambda, const float *x, Index v, Index ix,
                                                     Index iy, Index iz, Index nx, Index ny, Index nz, float &re,
                                                     float &im) {
  if (code == kRegTikhonov) {
    re = lambda * x[2 * v];
    im = lambda * x[2 * v + 1];
  } else if (code == kRegFiniteDifference) {
    float dr, di;
    difference_normal_voxel(x, v, ix, iy, iz, nx, ny, nz, dr, di);
    re = lambda * dr;
    im = lambda * di;
  } else {
    re = 0.0f;
    im = 0.0f;
  }
}

} // namespace mri::detail
