// The CPU gridding kernels compiled for AVX2 and FMA (see gridding_cpu_kernels.hpp).
#include "gridding_cpu_kernels.hpp"

namespace mri::detail::gridding_kernels {
#if MRI_GRIDDING_X86
MRI_GRIDDING_ISA(isa_avx2, __attribute__((target("avx2,fma"))))
#endif
} // namespace mri::detail::gridding_kernels
