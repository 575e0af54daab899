// The float32 separable DFT compiled for AVX2 and FMA (see separable_dft_kernels.hpp).
#include "separable_dft_kernels.hpp"

namespace mri::detail::separable {
#if MRI_SEPARABLE_X86
namespace {

#define MRI_TARGET_AVX2 __attribute__((target("avx2,fma")))

struct Avx2Kernel {
  static constexpr int XW = 8, NR = 3; // 2 ymm of 4 complex per row, 12 accumulators
  MRI_TARGET_AVX2 static void run(const float *A, const float *B, i64 kr, float *tile) {
    __m256 cr[NR][2], ci[NR][2];
    for (int j = 0; j < NR; ++j)
      for (int v = 0; v < 2; ++v) cr[j][v] = ci[j][v] = _mm256_setzero_ps();
    for (i64 r = 0; r < kr; ++r) {
      const __m256 a0 = _mm256_loadu_ps(A), a1 = _mm256_loadu_ps(A + 8);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        const __m256 br = _mm256_broadcast_ss(B + 2 * j), bi = _mm256_broadcast_ss(B + 2 * j + 1);
        cr[j][0] = _mm256_fmadd_ps(a0, br, cr[j][0]);
        cr[j][1] = _mm256_fmadd_ps(a1, br, cr[j][1]);
        ci[j][0] = _mm256_fmadd_ps(a0, bi, ci[j][0]);
        ci[j][1] = _mm256_fmadd_ps(a1, bi, ci[j][1]);
      }
      A += 2 * XW;
      B += 2 * NR;
    }
    for (int j = 0; j < NR; ++j)
      for (int v = 0; v < 2; ++v)
        _mm256_storeu_ps(tile + j * 2 * XW + v * 8,
                         _mm256_addsub_ps(cr[j][v], _mm256_permute_ps(ci[j][v], 0xB1)));
  }
};

MRI_TARGET_AVX2 void adjoint(const AdjointJob &j, i64 a, i64 b, AdjointScratch &s) { adjoint_block<Avx2Kernel>(j, a, b, s); }
MRI_TARGET_AVX2 void forward(const ForwardJob &j, i64 a, i64 n, ForwardScratch &s) { forward_group<Avx2Kernel>(j, a, n, s); }

} // namespace

SeparableIsa avx2_isa() { return {Avx2Kernel::XW, Avx2Kernel::NR, adjoint, forward}; }
#endif
} // namespace mri::detail::separable
