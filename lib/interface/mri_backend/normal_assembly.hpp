#pragma once
// The reconstruction's normal operator, assembled in one place from the operator core
// (mri/linear_operator.hpp), the same on both backends (lib/recon/recon_cpu.cpp,
// cuda/recon/recon_cuda.cu):
//   data term   the Toeplitz form (QOperator, mri:: on the host and cuda:: on the device: F^H W F by its
//               spectrum), or the direct normal F^H W F = chain(F^H, chain(W, F)) with F exact or by
//               NUFFT (direct_normal; the GPU's DirectNormalOperator is that chain, fused)
//   + lambda R  the regulariser's W^H W (regularized): a sum with RegularizerOperator's normal, or
//               the data term's own fused pass where it has one (FusesRegularizer: the GPU's
//               operators add the stencil in their last kernel); with SENSE once, outside the coil
//               sum (mri_backend/sense.hpp's Coils::regularize), the data term going in bare
//               (with_reconstruction_normal).
// ConjugateGradient takes normal_equations() of the result.
#include <optional>
#include <span>
#include <utility>

#include "mri/grid.hpp"
#include "mri/linear_operator.hpp"
#include "mri/regularizer.hpp"
#include "sense.hpp"

namespace mri::detail {

// F^H W F applied as F, then the weights (none: all ones), then F^H.
template <LinearOperator F> auto direct_normal(F f, std::span<const float> weights) {
  SampleWeights w(weights, f.range_vector().size());
  F inner = f;
  return chain(adjoint_of(std::move(f)), chain(std::move(w), std::move(inner)));
}

// A self-adjoint operator that adds lambda W^H W in its own pass: apply_regularized(x, out, r,
// lambda) = (A + lambda W^H W) x.
template <class A>
concept FusesRegularizer = LinearOperator<A> && requires(const A &a, const typename A::Domain &x,
                                                         typename A::Domain &out, Regularizer r, double lambda) {
  a.apply_regularized(x, out, r, lambda);
};

// A + lambda W^H W by A's fused pass (A kept alive by the caller, as through ref()).
template <FusesRegularizer A> class FusedRegularized {
public:
  using Domain = typename A::Domain;
  using Range = typename A::Domain;
  FusedRegularized(const A &a, Regularizer r, double lambda) : a_(&a), r_(r), lambda_(lambda) {}
  Domain domain_vector() const { return a_->domain_vector(); }
  Range range_vector() const { return a_->domain_vector(); }
  void forward(const Domain &x, Domain &out) const { a_->apply_regularized(x, out, r_, lambda_); }
  void adjoint(const Domain &x, Domain &out) const { forward(x, out); }

private:
  const A *a_;
  Regularizer r_;
  double lambda_;
};

// data_normal + lambda W^H W on `grid`.
template <LinearOperator N> auto regularized(N data_normal, Regularizer r, double lambda, const Grid &grid) {
  return sum(std::move(data_normal), normal_of(RegularizerOperator(r, grid)), lambda);
}
template <FusesRegularizer A>
FusedRegularized<A> regularized(OperatorRef<A> data_normal, Regularizer r, double lambda, const Grid &) {
  return FusedRegularized<A>(data_normal.get(), r, lambda);
}

// f(the CG's operator) from the data term: + lambda W^H W without maps; with SENSE's maps
// (`coils`, a Coils of mri_backend/sense.hpp on Vec) the data term bare inside the coil sum, the
// regulariser once outside it.
template <class Vec, class Coils, LinearOperator N, class F>
decltype(auto) with_reconstruction_normal(const std::optional<Coils> &coils, N data_normal, Regularizer r,
                                          double lambda, const Grid &grid, const Vec &like, F &&f) {
  if (!coils) return f(normal_equations(regularized(std::move(data_normal), r, lambda, grid)));
  auto inner = normal_equations(std::move(data_normal));
  return f(SenseNormal<Vec, Coils, decltype(inner)>(*coils, std::move(inner), like));
}

} // namespace mri::detail
