#include "mri/options.hpp"

#include "mri_backend/cuda_backend.hpp"

namespace mri {

bool cuda_available() {
  const detail::CudaPlugin &p = detail::cuda_plugin();
  return p.backend && p.backend->device_present();
}

std::string cuda_unavailable_reason() {
  const detail::CudaPlugin &p = detail::cuda_plugin();
  if (!p.backend) return p.reason;
  return p.backend->device_present() ? "" : "no CUDA device is usable";
}

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
