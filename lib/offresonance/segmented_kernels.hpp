#pragma once
// The segmented Toeplitz normal's kernel spectra (offresonance.hpp, SegmentedToeplitz), shared by
// SegmentedToeplitz and the fused 2D SENSE form (segmented_sense_2d.hpp):
//   K_ll'(d) = sum_m w_m conj(b_l(t_m)) b_l'(t_m) exp(+2 pi i k_m . d / n)
// on the doubled grid, for the pairs l <= l' (K_l'l(d) = conj(K_ll'(-d)), so its spectrum is
// K_ll''s conjugate), all by one batched adjoint NUFFT (nufft_q's construction), each centred as
// QOperator's load_kernel does and transformed with the inverse FFT's 1/n folded in.
#include <complex>
#include <cstddef>
#include <functional>
#include <span>

#include "fft/grid_fft.hpp"
#include "mri/offresonance.hpp"

namespace mri::detail {

// The index of pair (l, l'), l <= l', among L segments' L(L+1)/2: l = 0's pairs first.
inline std::size_t segment_pair(int segments, int l, int lp) {
  return static_cast<std::size_t>(l * segments - l * (l - 1) / 2 + (lp - l));
}

// Calls take(pair, spectrum) for every pair in index order; spectrum: the doubled grid's voxels
// (x fastest) in `scratch`, valid until take returns. forward: a forward GridFft of the doubled
// grid. weights: empty (all ones) or one per sample (checked by the caller). Peak memory beyond
// scratch: the pairs' sample coefficients and 8 kernels on the doubled grid (the batched NUFFT's
// chunk).
void segment_kernel_spectra(const SegmentedFieldOperator &op, std::span<const float> weights, const GridFft<float> &forward,
                            std::complex<float> *scratch, const std::function<void(std::size_t, const std::complex<float> *)> &take);

} // namespace mri::detail
