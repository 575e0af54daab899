#pragma once
// Internal to cuda/: the warp-level tensor-core instruction the Dirichlet spectrum and its
// throughput microbenchmark use (sm_80+; on Hopper the "legacy" mma.sync path, not wgmma).
#include <cstdint>

namespace mri::cuda::detail {

// c += a b for one m16n8k16 tile: a (16 x 16, row-major) and b (16 x 8, column-major) as float16
// pairs in the PTX fragment layout, c float.
__device__ __forceinline__ void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                          std::uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

} // namespace mri::cuda::detail
