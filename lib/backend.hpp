#pragma once
// The one place a requested Backend becomes the backend that runs.
#include "mri/error.hpp"
#include "mri/options.hpp"

namespace mri::detail {

// Auto runs on the CPU until the CUDA F^H D policies exist (issue: CUDA backend); an explicit
// Cuda request says why it cannot run instead of silently falling back.
inline Backend resolve_backend(Backend requested) {
  if (requested == Backend::Cuda) {
    if (!cuda_available())
      throw Unsupported("backend = cuda: no CUDA device is usable (or the build has no CUDA backend)");
    throw Unsupported("backend = cuda: the CUDA operators are not implemented yet; use backend = cpu");
  }
  return Backend::Cpu;
}

} // namespace mri::detail
