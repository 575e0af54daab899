#pragma once
// The one place a requested Backend becomes the backend that runs.
#include "mri/error.hpp"
#include "mri/options.hpp"

namespace mri::detail {

// Auto runs on the GPU when one is usable and the precision has a GPU path (float32 today;
// float64 on the GPU waits for the SeparableGemm policy), else on the CPU. An explicit Cuda
// request that cannot run says why instead of silently falling back.
inline Backend resolve_backend(Backend requested, Precision precision) {
  switch (requested) {
  case Backend::Cpu: return Backend::Cpu;
  case Backend::Cuda:
    if (!cuda_available())
      throw Unsupported("backend = cuda: no CUDA device is usable (or the build has no CUDA backend)");
    if (precision == Precision::Float64)
      throw Unsupported("backend = cuda with precision = float64: needs the separable-gemm policy, "
                        "not implemented yet; use backend = cpu for the float64 reference");
    return Backend::Cuda;
  case Backend::Auto:
    return precision == Precision::Float32 && cuda_available() ? Backend::Cuda : Backend::Cpu;
  }
  return Backend::Cpu;
}

} // namespace mri::detail
