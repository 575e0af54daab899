// The float32 separable DFT compiled for the baseline ISA (portable C++) (see separable_dft_kernels.hpp).
#include "separable_dft_kernels.hpp"

namespace mri::detail::separable {
namespace {

struct GenericKernel {
  static constexpr int XW = 4, NR = 3;
  static void run(const float *A, const float *B, i64 kr, float *tile) {
    float acr[NR][2 * XW] = {}, aci[NR][2 * XW] = {};
    for (i64 r = 0; r < kr; ++r) {
      for (int j = 0; j < NR; ++j) {
        const float br = B[2 * j], bi = B[2 * j + 1];
        for (int l = 0; l < 2 * XW; ++l) {
          acr[j][l] += A[l] * br;
          aci[j][l] += A[l] * bi;
        }
      }
      A += 2 * XW;
      B += 2 * NR;
    }
    for (int j = 0; j < NR; ++j)
      for (int l = 0; l < XW; ++l) {
        tile[j * 2 * XW + 2 * l] = acr[j][2 * l] - aci[j][2 * l + 1];
        tile[j * 2 * XW + 2 * l + 1] = acr[j][2 * l + 1] + aci[j][2 * l];
      }
  }
};

void adjoint(const AdjointJob &j, i64 a, i64 b, AdjointScratch &s) { adjoint_block<GenericKernel>(j, a, b, s); }
void forward(const ForwardJob &j, i64 a, i64 n, ForwardScratch &s) { forward_group<GenericKernel>(j, a, n, s); }

} // namespace

SeparableIsa generic_isa() { return {GenericKernel::XW, GenericKernel::NR, adjoint, forward}; }
} // namespace mri::detail::separable
