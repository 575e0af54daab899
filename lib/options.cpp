#include "mri/options.hpp"

namespace mri {

#ifdef MRI_HAVE_CUDA
namespace cuda::detail {
bool device_present(); // cuda/device.cu
}
bool cuda_available() { return cuda::detail::device_present(); }
#else
bool cuda_available() { return false; }
#endif

const char *to_string(Backend b) {
  switch (b) {
  case Backend::Cpu: return "cpu";
  case Backend::Cuda: return "cuda";
  case Backend::Auto: return "auto";
  }
  return "?";
}

const char *to_string(Precision p) { return p == Precision::Float32 ? "float32" : "float64"; }

const char *to_string(KernelPolicy p) {
  switch (p) {
  case KernelPolicy::Auto: return "auto";
  case KernelPolicy::ScatterAtomic: return "scatter-atomic";
  case KernelPolicy::Gather: return "gather";
  case KernelPolicy::Register: return "register";
  case KernelPolicy::ConstantChunked: return "constant-chunked";
  case KernelPolicy::SfuTrig: return "sfu-trig";
  case KernelPolicy::Tuned: return "tuned";
  case KernelPolicy::SeparableGemm: return "separable-gemm";
  }
  return "?";
}

} // namespace mri
