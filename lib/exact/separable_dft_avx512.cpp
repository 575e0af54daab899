// The float32 separable DFT compiled for AVX-512F (see separable_dft_kernels.hpp).
#include "separable_dft_kernels.hpp"

namespace mri::detail::separable {
#if MRI_SEPARABLE_X86
namespace {

#define MRI_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))

struct Avx512Kernel {
  static constexpr int XW = 16, NR = 6; // 2 zmm of 8 complex per row, 24 accumulators
  MRI_TARGET_AVX512 static void run(const float *A, const float *B, i64 kr, float *tile) {
    __m512 cr[NR][2], ci[NR][2];
    for (int j = 0; j < NR; ++j)
      for (int v = 0; v < 2; ++v) cr[j][v] = ci[j][v] = _mm512_setzero_ps();
    for (i64 r = 0; r < kr; ++r) {
      const __m512 a0 = _mm512_loadu_ps(A), a1 = _mm512_loadu_ps(A + 16);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        const __m512 br = _mm512_set1_ps(B[2 * j]), bi = _mm512_set1_ps(B[2 * j + 1]);
        cr[j][0] = _mm512_fmadd_ps(a0, br, cr[j][0]);
        cr[j][1] = _mm512_fmadd_ps(a1, br, cr[j][1]);
        ci[j][0] = _mm512_fmadd_ps(a0, bi, ci[j][0]);
        ci[j][1] = _mm512_fmadd_ps(a1, bi, ci[j][1]);
      }
      A += 2 * XW;
      B += 2 * NR;
    }
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int j = 0; j < NR; ++j)
      for (int v = 0; v < 2; ++v)
        _mm512_storeu_ps(tile + j * 2 * XW + v * 16,
                         _mm512_fmaddsub_ps(cr[j][v], one, _mm512_mask_permute_ps(ci[j][v], 0xFFFF, ci[j][v], 0xB1)));
  }
};

MRI_TARGET_AVX512 void adjoint(const AdjointJob &j, i64 a, i64 b, AdjointScratch &s) { adjoint_block<Avx512Kernel>(j, a, b, s); }
MRI_TARGET_AVX512 void forward(const ForwardJob &j, i64 a, i64 n, ForwardScratch &s) { forward_group<Avx512Kernel>(j, a, n, s); }

} // namespace

SeparableIsa avx512_isa() { return {Avx512Kernel::XW, Avx512Kernel::NR, adjoint, forward}; }
#endif
} // namespace mri::detail::separable
