#pragma once
// The operator core: every linear operator of the SDK is a value A: X -> Y with
//   using Domain = X;  using Range = Y;
//   Domain domain_vector() const;                   a vector of the domain (contents unspecified)
//   Range range_vector() const;                     a vector of the range
//   void forward(const Domain &x, Range &y) const;  y = A x
//   void adjoint(const Range &y, Domain &x) const;  x = A^H y
// and, where it has a cheaper form than the adjoint of the forward (the Toeplitz embedding of
// F^H F, the stencil of a regulariser's W^H W),
//   void normal(const Domain &x, Domain &out) const;  out = A^H A x
// Vectors are host images (mri::Image) and sample vectors (std::vector<cfloat>), or the CUDA
// backend's device images. These members are each operator's only forward and adjoint; the
// value-returning forms forward(A, x) = A x and adjoint(A, y) = A^H y (end of this header) are
// written once for every operator on host vectors. The compositions below are operators too,
// so the reconstruction's normal operator, (F^H W F or its Toeplitz form) + lambda R^H R, is
// assembled from them in one place (mri_backend/normal_assembly.hpp), and ConjugateGradient runs
// on any of them (normal_equations()).
//
// Ownership: a composition holds its operands by value (FourierOperator and NufftOperator copies
// share their plans: cheap) or, through ref(), by reference to an operator the caller keeps
// alive (QOperator owns its buffers and does not copy). It owns the intermediate vectors it needs.
// Thread safety: a composition writes its intermediate vectors: one call at a time on one
// composition; its operands' contracts apply to them (see each operator's header).
#include <cmath>
#include <complex>
#include <concepts>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mri/error.hpp"
#include "mri/image.hpp"
#include "mri/vector_ops.hpp"

namespace mri {

template <class A>
concept LinearOperator = requires(const A &a, const typename A::Domain &x, typename A::Domain &x_out,
                                  const typename A::Range &y, typename A::Range &y_out) {
  { a.domain_vector() } -> std::same_as<typename A::Domain>;
  { a.range_vector() } -> std::same_as<typename A::Range>;
  a.forward(x, y_out);
  a.adjoint(y, x_out);
};

template <class A>
concept HasNormal = LinearOperator<A> && requires(const A &a, const typename A::Domain &x, typename A::Domain &out) {
  a.normal(x, out);
};

// A reference to an operator kept alive by the caller, as an operator.
template <LinearOperator A> class OperatorRef {
public:
  using Domain = typename A::Domain;
  using Range = typename A::Range;
  explicit OperatorRef(const A &a) : a_(&a) {}
  const A &get() const { return *a_; }
  Domain domain_vector() const { return a_->domain_vector(); }
  Range range_vector() const { return a_->range_vector(); }
  void forward(const Domain &x, Range &y) const { a_->forward(x, y); }
  void adjoint(const Range &y, Domain &x) const { a_->adjoint(y, x); }
  void normal(const Domain &x, Domain &out) const
    requires HasNormal<A>
  {
    a_->normal(x, out);
  }

private:
  const A *a_;
};
template <LinearOperator A> OperatorRef<A> ref(const A &a) { return OperatorRef<A>(a); }

// A^H: its forward is A's adjoint.
template <LinearOperator A> class AdjointOf {
public:
  using Domain = typename A::Range;
  using Range = typename A::Domain;
  explicit AdjointOf(A a) : a_(std::move(a)) {}
  Domain domain_vector() const { return a_.range_vector(); }
  Range range_vector() const { return a_.domain_vector(); }
  void forward(const Domain &y, Range &x) const { a_.adjoint(y, x); }
  void adjoint(const Range &x, Domain &y) const { a_.forward(x, y); }

private:
  A a_;
};
template <LinearOperator A> AdjointOf<A> adjoint_of(A a) { return AdjointOf<A>(std::move(a)); }

// Outer Inner: x -> Outer(Inner x); its adjoint Inner^H (Outer^H y).
template <LinearOperator Outer, LinearOperator Inner>
  requires std::same_as<typename Inner::Range, typename Outer::Domain>
class Chain {
public:
  using Domain = typename Inner::Domain;
  using Range = typename Outer::Range;
  Chain(Outer outer, Inner inner) : outer_(std::move(outer)), inner_(std::move(inner)), middle_(inner_.range_vector()) {}
  Domain domain_vector() const { return inner_.domain_vector(); }
  Range range_vector() const { return outer_.range_vector(); }
  void forward(const Domain &x, Range &y) const {
    inner_.forward(x, middle_);
    outer_.forward(middle_, y);
  }
  void adjoint(const Range &y, Domain &x) const {
    outer_.adjoint(y, middle_);
    inner_.adjoint(middle_, x);
  }

private:
  Outer outer_;
  Inner inner_;
  mutable typename Inner::Range middle_;
};
template <LinearOperator Outer, LinearOperator Inner> Chain<Outer, Inner> chain(Outer outer, Inner inner) {
  return Chain<Outer, Inner>(std::move(outer), std::move(inner));
}

// A + beta B on one pair of spaces (the range's VectorOps adds; the adjoint's uses conj(beta)).
template <LinearOperator A, LinearOperator B>
  requires std::same_as<typename A::Domain, typename B::Domain> && std::same_as<typename A::Range, typename B::Range>
class Sum {
public:
  using Domain = typename A::Domain;
  using Range = typename A::Range;
  Sum(A a, B b, std::complex<double> beta) : a_(std::move(a)), b_(std::move(b)), beta_(beta) {}
  Domain domain_vector() const { return a_.domain_vector(); }
  Range range_vector() const { return a_.range_vector(); }
  void forward(const Domain &x, Range &y) const {
    a_.forward(x, y);
    if (beta_ == 0.0) return; // 0 B adds nothing (B's work is skipped)
    if (!range_tmp_) range_tmp_.emplace(b_.range_vector());
    b_.forward(x, *range_tmp_);
    VectorOps<Range>::axpy(beta_, *range_tmp_, y);
  }
  void adjoint(const Range &y, Domain &x) const {
    a_.adjoint(y, x);
    if (beta_ == 0.0) return;
    if (!domain_tmp_) domain_tmp_.emplace(b_.domain_vector());
    b_.adjoint(y, *domain_tmp_);
    VectorOps<Domain>::axpy(std::conj(beta_), *domain_tmp_, x);
  }

private:
  A a_;
  B b_;
  std::complex<double> beta_;
  mutable std::optional<Range> range_tmp_;
  mutable std::optional<Domain> domain_tmp_;
};
template <LinearOperator A, LinearOperator B> Sum<A, B> sum(A a, B b, std::complex<double> beta = 1.0) {
  return Sum<A, B>(std::move(a), std::move(b), beta);
}

// A^H A, self-adjoint on A's domain: A's own normal() where it has one, else A's adjoint of its
// forward through a range vector of its own.
template <LinearOperator A> class NormalOf {
public:
  using Domain = typename A::Domain;
  using Range = typename A::Domain;
  explicit NormalOf(A a) : a_(std::move(a)) {}
  Domain domain_vector() const { return a_.domain_vector(); }
  Range range_vector() const { return a_.domain_vector(); }
  void forward(const Domain &x, Domain &out) const {
    if constexpr (HasNormal<A>) {
      a_.normal(x, out);
    } else {
      if (!middle_) middle_.emplace(a_.range_vector());
      a_.forward(x, *middle_);
      a_.adjoint(*middle_, out);
    }
  }
  void adjoint(const Domain &x, Domain &out) const { forward(x, out); }

private:
  A a_;
  mutable std::optional<typename A::Range> middle_;
};
template <LinearOperator A> NormalOf<A> normal_of(A a) { return NormalOf<A>(std::move(a)); }

// Real non-negative weights on sample vectors: y = w .* x (self-adjoint); no weights: identity.
class SampleWeights {
public:
  using Domain = std::vector<cfloat>;
  using Range = std::vector<cfloat>;
  SampleWeights(std::span<const float> weights, std::size_t samples) : weights_(weights), samples_(samples) {}
  Domain domain_vector() const { return Domain(samples_); }
  Range range_vector() const { return Range(samples_); }
  void forward(const Domain &x, Range &y) const {
    if (weights_.empty()) {
      y = x;
      return;
    }
    for (std::size_t m = 0; m < samples_; ++m) y[m] = x[m] * weights_[m];
  }
  void adjoint(const Range &y, Domain &x) const { forward(y, x); }

private:
  std::span<const float> weights_;
  std::size_t samples_;
};

// The callable ConjugateGradient takes: op(in, out) = A's forward (A self-adjoint on Vec).
template <LinearOperator A>
  requires std::same_as<typename A::Domain, typename A::Range>
auto normal_equations(A a) {
  return [a = std::move(a)](const typename A::Domain &in, typename A::Domain &out) { a.forward(in, out); };
}

namespace detail {
// A host vector's values, and the name a value check gives it in its message.
inline std::span<const cfloat> host_values(const Image &v) { return v.values(); }
inline std::span<const cfloat> host_values(const std::vector<cfloat> &v) { return v; }
inline const char *vector_name(const Image &) { return "image"; }
inline const char *vector_name(const std::vector<cfloat> &) { return "samples"; }

// Throws InvalidArgument("<name>[i] = <value>: must be finite") at v's first NaN or Inf.
template <class Vec> void check_finite(const Vec &v) {
  const std::span<const cfloat> values = host_values(v);
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i].real()) || !std::isfinite(values[i].imag()))
      invalid_argument(std::string(vector_name(v)) + "[" + std::to_string(i) + "]", values[i], "must be finite");
}
} // namespace detail

// A vector on the host (Image or std::vector<cfloat>), whose values the value forms can check.
template <class Vec>
concept HostVector = requires(const Vec &v) {
  { detail::host_values(v) } -> std::same_as<std::span<const cfloat>>;
};

// The value forms of any operator on host vectors: A x and A^H y into a vector of their own,
//   std::vector<cfloat> y = mri::forward(F, x);     Image x = mri::adjoint(F, y);
// for a call or a test; a loop or a solver uses the members above, into vectors it keeps. The
// input's values are checked first: InvalidArgument naming the first NaN or Inf ("image[3]",
// "samples[7]"), as bad input should be refused at the API rather than spread through a sum;
// its size is checked by the member (InvalidArgument as the operator's header says).
template <LinearOperator A>
  requires HostVector<typename A::Domain> && HostVector<typename A::Range>
typename A::Range forward(const A &a, const typename A::Domain &x) {
  detail::check_finite(x);
  typename A::Range y = a.range_vector();
  a.forward(x, y);
  return y;
}
template <LinearOperator A>
  requires HostVector<typename A::Domain> && HostVector<typename A::Range>
typename A::Domain adjoint(const A &a, const typename A::Range &y) {
  detail::check_finite(y);
  typename A::Domain x = a.domain_vector();
  a.adjoint(y, x);
  return x;
}

} // namespace mri
