// The CPU gridding kernels compiled for the baseline ISA (see gridding_cpu_kernels.hpp).
#include "gridding_cpu_kernels.hpp"

namespace mri::detail::gridding_kernels {
MRI_GRIDDING_ISA(isa_generic, )
} // namespace mri::detail::gridding_kernels
