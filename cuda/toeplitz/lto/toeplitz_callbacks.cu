// The Toeplitz apply's cuFFT callbacks, compiled to LTO-IR (cuda/CMakeLists.txt: -dc -fatbin
// -dlto, embedded as a byte array) and inlined into cuFFT's own kernels at plan time
// (cufftXtSetJITCallback): the pad, the multiply by the spectrum and the crop (+ regulariser)
// cost no pass of their own over the 2x grid.
//
//   forward plan, load:   element p of the padded grid = in[v] inside the image, else 0 (no read)
//   forward plan, store:  FFT(pad(x))[p] * K[p]
//   inverse plan, store:  out[v] = IFFT(...)[p(v)] + lambda (W^H W x)[v] inside the image, else dropped
//
// The names and signatures are what cufftXtSetJITCallback looks up (global namespace, the
// cufftJITCallback* types of cufftXt.h).
#include <cufftXt.h>

#include "mri/detail/regularizer_stencil.hpp"
#include "toeplitz/toeplitz_callback_params.h"

namespace {

using Params = mri::cuda::detail::ToeplitzCallbackParams;

// Padded-grid coordinates of linear offset o; true when they lie inside the image.
__device__ __forceinline__ bool inside(const Params &p, unsigned long long offset, int &ix, int &iy, int &iz) {
  const unsigned int o = static_cast<unsigned int>(offset);
  unsigned int rest;
  if (p.lx_shift >= 0) {
    ix = static_cast<int>(o & (static_cast<unsigned int>(p.lx) - 1u));
    rest = o >> p.lx_shift;
  } else {
    ix = static_cast<int>(o % static_cast<unsigned int>(p.lx));
    rest = o / static_cast<unsigned int>(p.lx);
  }
  if (p.ly_shift >= 0) {
    iy = static_cast<int>(rest & (static_cast<unsigned int>(p.ly) - 1u));
    iz = static_cast<int>(rest >> p.ly_shift);
  } else {
    iy = static_cast<int>(rest % static_cast<unsigned int>(p.ly));
    iz = static_cast<int>(rest / static_cast<unsigned int>(p.ly));
  }
  return ix < p.nx && iy < p.ny && iz < p.nz;
}

} // namespace

__device__ cufftComplex mri_toeplitz_load_pad(void *data_in, unsigned long long offset, void *caller_info,
                                              void *shared_pointer) {
  const Params &p = *static_cast<const Params *>(caller_info);
  int ix, iy, iz;
  if (!inside(p, offset, ix, iy, iz)) return make_cuComplex(0.f, 0.f);
  return static_cast<const cufftComplex *>(p.in)[ix + p.nx * (iy + p.ny * iz)];
}

__device__ void mri_toeplitz_store_multiply(void *data_out, unsigned long long offset, cufftComplex element,
                                            void *caller_info, void *shared_pointer) {
  const Params &p = *static_cast<const Params *>(caller_info);
  const float k = p.kernel[offset];
  static_cast<cufftComplex *>(data_out)[offset] = make_cuComplex(element.x * k, element.y * k);
}

__device__ void mri_toeplitz_store_crop(void *data_out, unsigned long long offset, cufftComplex element,
                                        void *caller_info, void *shared_pointer) {
  const Params &p = *static_cast<const Params *>(caller_info);
  int ix, iy, iz;
  if (!inside(p, offset, ix, iy, iz)) return;
  const int v = ix + p.nx * (iy + p.ny * iz);
  float rr = 0.f, ri = 0.f;
  if (p.regularizer != mri::detail::kRegNone)
    mri::detail::regularizer_normal_voxel<int>(p.regularizer, p.lambda, static_cast<const float *>(p.in), v, ix, iy,
                                               iz, p.nx, p.ny, p.nz, rr, ri);
  static_cast<cufftComplex *>(p.out)[v] = make_cuComplex(element.x + rr, element.y + ri);
}
