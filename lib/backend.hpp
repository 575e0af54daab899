#pragma once
// The one place a requested Backend becomes the backend that runs.
#include "mri/error.hpp"
#include "mri/options.hpp"
#include "mri_backend/cuda_backend.hpp"

namespace mri::detail {

// Auto runs on the GPU when one is usable (float32: the kernel policies; float64: the
// SeparableGemm policy, ZGEMM in double), else on the CPU. An explicit Cuda request that cannot
// run says why (cuda_unavailable_reason) instead of silently falling back.
inline Backend resolve_backend(Backend requested, const char *who) {
  switch (requested) {
  case Backend::Cpu: return Backend::Cpu;
  case Backend::Cuda: require_cuda(who); return Backend::Cuda;
  case Backend::Auto: return cuda_available() ? Backend::Cuda : Backend::Cpu;
  }
  return Backend::Cpu;
}

} // namespace mri::detail
