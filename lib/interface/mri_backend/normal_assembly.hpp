#pragma once
// The reconstruction's normal operator, assembled in one place from the operator core
// (mri/linear_operator.hpp; issue 10):
//   data term   the Toeplitz form (the QOperator, F^H W F by its spectrum), or the direct normal
//               F^H W F = chain(F^H, chain(W, F)) with F exact or by NUFFT (direct_normal)
//   + lambda R  the regulariser's W^H W (regularized); with SENSE once, outside the coil sum
//               (mri_backend/sense.hpp's Coils::regularize), so the data term goes in bare.
// ConjugateGradient takes normal_equations() of the result.
#include <span>
#include <utility>

#include "mri/grid.hpp"
#include "mri/linear_operator.hpp"
#include "mri/regularizer.hpp"

namespace mri::detail {

// F^H W F applied as F, then the weights (none: all ones), then F^H.
template <LinearOperator F> auto direct_normal(F f, std::span<const float> weights) {
  SampleWeights w(weights, f.range_vector().size());
  F inner = f;
  return chain(adjoint_of(std::move(f)), chain(std::move(w), std::move(inner)));
}

// data_normal + lambda W^H W on `grid`.
template <LinearOperator N> auto regularized(N data_normal, Regularizer r, double lambda, const Grid &grid) {
  return sum(std::move(data_normal), normal_of(RegularizerOperator(r, grid)), lambda);
}

} // namespace mri::detail
