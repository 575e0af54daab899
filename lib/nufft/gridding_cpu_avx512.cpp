// The CPU gridding kernels compiled for AVX-512F and AVX-512VL (see gridding_cpu_kernels.hpp).
#include "gridding_cpu_kernels.hpp"

namespace mri::detail::gridding_kernels {
#if MRI_GRIDDING_X86
MRI_GRIDDING_ISA(isa_avx512, __attribute__((target("avx512f,avx512vl,avx2,fma"))))
#endif
} // namespace mri::detail::gridding_kernels
