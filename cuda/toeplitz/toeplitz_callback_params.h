#pragma once
// What the Toeplitz cuFFT callbacks (cuda/toeplitz/lto/toeplitz_callbacks.cu, compiled to LTO-IR
// and linked into cuFFT's kernels at plan time) read through their callerInfo pointer: one struct
// in device memory per plan set, updated by QOperator::apply when its operands change.
// Plain C layout, shared by nvcc's LTO compile and the host code.

namespace mri::cuda::detail {

struct ToeplitzCallbackParams {
  const void *in;       // float2[nx*ny*nz]: the image to zero-pad (forward load)
  void *out;            // float2[nx*ny*nz]: the cropped result (inverse store)
  const float *kernel;  // float[Lx*Ly*Lz]: the real Toeplitz spectrum, FFT order (forward store)
  int nx, ny, nz;       // image grid
  int lx, ly;           // padded grid extents along x and y (z: lz, not needed for the index)
  int lx_shift, ly_shift; // log2(lx), log2(ly) when powers of two, else -1 (division instead)
  int regularizer;      // mri::detail::RegularizerCode; added in the inverse store
  float lambda;
};

} // namespace mri::cuda::detail
