#pragma once
// Internal to cuda/: the warp-level tensor-core instructions the Dirichlet spectrum, its
// throughput microbenchmark and Tuned's tensor-core variant use (sm_80+; on Hopper the "legacy"
// mma.sync path, not wgmma).
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

// c += a b for one m16n8k8 tile in TF32: a (16 x 8, row-major) and b (8 x 8, column-major) as
// TF32 bit patterns (to_tf32) in the PTX fragment layout -- with g = lane / 4, t = lane % 4:
// a = {A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]}, b = {B[t][g], B[t+4][g]},
// c = {C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]}.
__device__ __forceinline__ void mma_1688_tf32(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                              std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// x rounded to TF32 (10 mantissa bits, to nearest, ties away), as the bit pattern mma reads.
__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// x = hi + lo to about 22 bits: the operand split of 3xTF32 (hi*hi + hi*lo + lo*hi).
struct Tf32Pair {
  std::uint32_t hi, lo;
};
__device__ __forceinline__ Tf32Pair split_tf32(float x) {
  const std::uint32_t hi = to_tf32(x);
  return {hi, to_tf32(x - __uint_as_float(hi))};
}

} // namespace mri::cuda::detail
