#pragma once
// One sparse term lambda * R(T x) (mri/sparse.hpp's SparseTerm) on a vector type, as the
// proximal solvers (mri/proximal_solvers.hpp) use it: its transform T, the proximal map of its
// penalty in T's range, and its value. Written once over SparseOps<Vec>, so the host's images and
// the CUDA backend's device images share it.
//   L1Wavelet       T = identity; prox_{t R}(z) = S^H Psi^H shrink_t(Psi S z), Psi the orthogonal
//                   wavelet, S a circular shift drawn afresh for each call when cycle spinning
//                   (Figueiredo and Nowak 2003's cycle spinning; BART's random shifts), the
//                   coarsest band not shrunk. Psi S is orthogonal, so this is the exact proximal
//                   map of z -> ||Psi S z||_1 for the drawn S.
//   L1Image         T = identity; prox = the complex soft-threshold.
//   TotalVariation  T = D (forward differences along the term's axes, stacked); prox = the
//                   group shrink over the axes at each voxel (isotropic) or each value (anisotropic).
//                   On the image (prox_image, FISTA's step) TV's proximal map has no closed form:
//                   it is TV denoising, solved by the fast gradient projection on its dual (Beck
//                   and Teboulle 2009, "Fast gradient-based algorithms for constrained total
//                   variation image denoising and deblurring", algorithm FGP), warm started.
//
// Thread safety: a SparseTermOps holds scratch vectors and its shift generator: one call at a
// time on one object.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>

#include "mri/error.hpp"
#include "mri/sparse.hpp"
#include "mri/vector_ops.hpp"

namespace mri {

template <class Vec, class Ops = SparseOps<Vec>, class VOps = VectorOps<Vec>> class SparseTermOps {
public:
  // `like`: a vector of the image grid on the device the term runs on. Throws InvalidArgument
  // (naming the term) for a negative or non-finite lambda, bad axes, a wavelet that no axis is
  // long enough for, nonzero joint flags and penalties that are not sparse (L2).
  SparseTermOps(const SparseTerm &term, const Grid &grid, const Vec &like, bool cycle_spinning,
                std::uint64_t seed)
      : term_(term), grid_(grid), axes_(resolve_axes(grid, term.axes)), cycle_spinning_(cycle_spinning),
        shifts_(seed) {
    validate(term, grid, "term " + to_string(term));
    if (term.penalty == SparsePenalty::L1Wavelet) {
      levels_ = wavelet_levels(grid, axes_, term.wavelet);
      scratch_.emplace_back(Ops::make(grid, like));
      scratch_.emplace_back(Ops::make(grid, like));
    }
  }

  const SparseTerm &term() const { return term_; }
  double lambda() const { return term_.lambda; }
  // T is the identity: the term's proximal map applies to images (FISTA takes such a term).
  bool acts_on_image() const { return term_.penalty != SparsePenalty::TotalVariation; }
  // ||T||^2: 1 for the identity, 4 per axis for forward differences (the Neumann Laplacian's
  // eigenvalues lie in [0, 4) along each axis).
  double transform_norm2() const { return acts_on_image() ? 1.0 : 4.0 * axis_count(axes_); }

  // A vector of T's range.
  Vec make_range(const Vec &like) const {
    return acts_on_image() ? Ops::make(grid_, like) : Ops::make(stacked_grid(grid_, axis_count(axes_)), like);
  }
  void transform(const Vec &x, Vec &z) const { // z = T x
    if (acts_on_image())
      VOps::copy(x, z);
    else
      Ops::gradient_forward(grid_, axes_, x, z);
  }
  void transform_adjoint(const Vec &z, Vec &x) const { // x = T^H z
    if (acts_on_image())
      VOps::copy(z, x);
    else
      Ops::gradient_adjoint(grid_, axes_, z, x);
  }

  // z = prox_{t lambda R}(z), in T's range.
  void prox(double t, Vec &z) {
    const double threshold = t * term_.lambda;
    switch (term_.penalty) {
    case SparsePenalty::L1Wavelet: return wavelet_prox(threshold, z);
    case SparsePenalty::L1Image: Ops::shrink(z, grid_, 1, KeepBox{}, threshold); return;
    default: Ops::shrink(z, shrink_base(), shrink_group(), KeepBox{}, threshold); return;
    }
  }

  // x = prox_{t lambda R}(x) on the image. TV: `inner` iterations of FGP on the dual
  //   min_{|p_j| <= t lambda} 0.5 ||x - D^H p||^2,  then x - D^H p,
  // each  p+ = P(q + D (x - D^H q) / ||D||^2),  q+ = p+ + ((s - 1)/s+) (p+ - p),  P the projection
  // onto the groups' balls (SparseOps::tv_dual_step), warm started from the previous call's p:
  // FISTA's consecutive steps denoise nearby images, so few iterations stay close to the map.
  void prox_image(double t, Vec &x, int inner) {
    if (acts_on_image()) return prox(t, x);
    if (tv_.empty()) { // p starts at 0
      tv_.emplace_back(make_range(x));
      tv_.emplace_back(make_range(x));
      tv_.emplace_back(Ops::make(grid_, x));
      VOps::zero(tv_[0]);
    }
    Vec &p = tv_[0], &q = tv_[1], &u = tv_[2];
    VOps::copy(p, q);
    double s = 1;
    for (int k = 0; k < inner; ++k) {
      transform_adjoint(q, u); // u = x - D^H q
      VOps::xpay(x, -1.0, u);
      const double s_next = 0.5 * (1 + std::sqrt(1 + 4 * s * s));
      Ops::tv_dual_step(grid_, axes_, term_.isotropic, u, 1.0 / transform_norm2(), t * term_.lambda,
                        (s - 1) / s_next, p, q);
      s = s_next;
    }
    transform_adjoint(p, u);
    VOps::axpy(-1.0, u, x);
  }

  // lambda R(T x) (the wavelet unshifted), with `range` a scratch vector of T's range.
  double value(const Vec &x, Vec &range) {
    switch (term_.penalty) {
    case SparsePenalty::L1Wavelet:
      Ops::wavelet_forward(levels_, x, range);
      return term_.lambda * Ops::group_norm_sum(range, grid_, 1, levels_.coarse);
    case SparsePenalty::L1Image: return term_.lambda * Ops::group_norm_sum(x, grid_, 1, KeepBox{});
    default:
      transform(x, range);
      return term_.lambda * Ops::group_norm_sum(range, shrink_base(), shrink_group(), KeepBox{});
    }
  }

private:
  // TV's groups: the differences along the axes at one voxel (isotropic), or each value alone.
  Grid shrink_base() const {
    return term_.isotropic ? grid_ : stacked_grid(grid_, axis_count(axes_));
  }
  int shrink_group() const { return term_.isotropic ? axis_count(axes_) : 1; }

  void wavelet_prox(double threshold, Vec &z) {
    Vec &shifted = scratch_[0], &coefficients = scratch_[1];
    const std::array<std::int64_t, 3> shift = draw_shift();
    Ops::circular_shift(z, shift, shifted);
    Ops::wavelet_forward(levels_, shifted, coefficients);
    Ops::shrink(coefficients, grid_, 1, levels_.coarse, threshold);
    Ops::wavelet_inverse(levels_, coefficients, shifted);
    Ops::circular_shift(shifted, inverse(shift), z);
  }

  // A shift in [0, n) along each transformed axis (0 without cycle spinning).
  std::array<std::int64_t, 3> draw_shift() {
    std::array<std::int64_t, 3> s{0, 0, 0};
    if (!cycle_spinning_) return s;
    for (int a = 0; a < 3; ++a)
      if ((axes_ >> a) & 1u) s[a] = std::uniform_int_distribution<std::int64_t>(0, grid_.extent(a) - 1)(shifts_);
    return s;
  }
  std::array<std::int64_t, 3> inverse(const std::array<std::int64_t, 3> &s) const {
    std::array<std::int64_t, 3> r{};
    for (int a = 0; a < 3; ++a) r[a] = (grid_.extent(a) - s[a]) % grid_.extent(a);
    return r;
  }

  SparseTerm term_;
  Grid grid_;
  unsigned axes_;
  bool cycle_spinning_;
  std::mt19937_64 shifts_;
  WaveletLevels levels_;
  std::vector<Vec> scratch_;
  std::vector<Vec> tv_; // prox_image's dual p and its extrapolation q (T's range), an image
};

} // namespace mri
