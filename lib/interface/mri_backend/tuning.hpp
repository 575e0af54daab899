#pragma once
// The tuning tables this build uses: one per architecture (tuning/<arch>.hpp), each entry with the
// benchmark that measures it. A new architecture gets a table of its own, selected here.
#include "mri_backend/tuning/sm90.hpp"
#include "mri_backend/tuning/x86_64.hpp"

namespace mri::detail::tuning {

using Gpu = Sm90;   // the CUDA backend is compiled for sm_90 (CMAKE_CUDA_ARCHITECTURES)
using Cpu = X86_64;

} // namespace mri::detail::tuning
