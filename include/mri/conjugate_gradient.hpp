#pragma once
// Conjugate gradient for A x = b with A Hermitian positive (semi-)definite, matrix-free.
// Templated over the normal operator (any callable op(const Vec& in, Vec& out)) and the
// vector type, so CPU images and CUDA device vectors share this one solver. Interface in
// the style of Eigen's ConjugateGradient.
//
// Thread safety: a ConjugateGradient holds its iteration state (residuals, status): one solver per
// thread. Different solvers run concurrently when their operators allow it (see each operator).
#include <cmath>
#include <complex>
#include <concepts>
#include <functional>
#include <utility>
#include <vector>

#include "mri/error.hpp"
#include "mri/vector_ops.hpp"

namespace mri {

enum class CgStatus {
  NotRun,
  Converged,     // relative residual ||r||/||b|| reached the tolerance
  MaxIterations, // stopped at the iteration limit
  NonFinite,     // a residual or step became NaN/Inf: the operator or data is broken
  Breakdown      // p^H A p <= 0: A is not positive definite on the search space
};
const char *to_string(CgStatus);

template <class NormalOp, class Vec, class Ops = VectorOps<Vec>> class ConjugateGradient {
public:
  // Called after each iteration with (iteration starting at 1, iterate, relative residual).
  using Callback = std::function<void(int, const Vec &, double)>;

  explicit ConjugateGradient(NormalOp op) : op_(std::move(op)) {}

  ConjugateGradient &set_max_iterations(int n) {
    if (n < 0) detail::invalid_argument("max_iterations", n, "must be >= 0");
    max_iterations_ = n;
    return *this;
  }
  ConjugateGradient &set_tolerance(double tol) {
    if (!(tol >= 0) || !std::isfinite(tol)) detail::invalid_argument("tolerance", tol, "must be finite and >= 0");
    tolerance_ = tol;
    return *this;
  }
  ConjugateGradient &set_callback(Callback cb) {
    callback_ = std::move(cb);
    return *this;
  }

  // Solves from x = 0 (r = b: the first application of the operator is skipped).
  Vec solve(const Vec &b) {
    Vec x = Ops::like(b);
    Ops::zero(x);
    run(b, x, true);
    return x;
  }

  // Solves from the initial guess in x. On NonFinite the last update may be partial: check
  // info() before using x.
  void solve_with_guess(const Vec &b, Vec &x) { run(b, x, false); }

  int iterations() const { return iterations_; }
  // Relative residual ||b - A x|| / ||b|| of the last iterate (the CG recurrence's value).
  double error() const { return history_.empty() ? 0.0 : history_.back(); }
  CgStatus info() const { return status_; }
  // Relative residual before the first iteration and after each one.
  const std::vector<double> &residual_history() const { return history_; }

private:
  // Vector types may offer the two updates and the residual norm of an iteration as one pass
  // (x += alpha p, r -= alpha ap, returns ||r||^2): device vectors do, to read each vector once.
  static constexpr bool kFusedUpdate = requires(const Vec &c, Vec &v) {
    { Ops::update_norm2(std::complex<double>{}, c, c, v, v) } -> std::convertible_to<double>;
  };

  void run(const Vec &b, Vec &x, bool x_is_zero) {
    history_.clear();
    iterations_ = 0;
    const double b_norm = std::sqrt(Ops::norm2(b));
    if (!std::isfinite(b_norm)) return finish(CgStatus::NonFinite, 0);
    if (b_norm == 0) {
      Ops::zero(x);
      return finish(CgStatus::Converged, 0);
    }
    Vec r = Ops::like(b), p = Ops::like(b), ap = Ops::like(b);
    Ops::copy(b, r);
    if (!x_is_zero) { // r = b - A x
      op_(x, ap);
      Ops::axpy(-1.0, ap, r);
    }
    Ops::copy(r, p);
    double rr = Ops::norm2(r);
    history_.push_back(std::sqrt(rr) / b_norm);
    if (history_.back() <= tolerance_) return finish(CgStatus::Converged, 0);
    for (int k = 1; k <= max_iterations_; ++k) {
      op_(p, ap);
      const double pap = Ops::dot(p, ap).real(); // real for Hermitian A
      if (!std::isfinite(pap)) return finish(CgStatus::NonFinite, k - 1);
      if (pap <= 0) return finish(CgStatus::Breakdown, k - 1);
      const double alpha = rr / pap;
      if (!std::isfinite(alpha)) return finish(CgStatus::NonFinite, k - 1);
      double rr_next;
      if constexpr (kFusedUpdate) {
        rr_next = Ops::update_norm2(alpha, p, ap, x, r);
      } else {
        Ops::axpy(alpha, p, x);
        Ops::axpy(-alpha, ap, r);
        rr_next = Ops::norm2(r);
      }
      const double relative = std::sqrt(rr_next) / b_norm;
      if (!std::isfinite(relative)) return finish(CgStatus::NonFinite, k);
      history_.push_back(relative);
      iterations_ = k;
      if (callback_) callback_(k, x, relative);
      if (relative <= tolerance_) return finish(CgStatus::Converged, k);
      Ops::xpay(r, rr_next / rr, p); // p = r + beta p
      rr = rr_next;
    }
    finish(CgStatus::MaxIterations, max_iterations_);
  }

  void finish(CgStatus s, int k) {
    status_ = s;
    iterations_ = k;
  }

  NormalOp op_;
  int max_iterations_ = 20;
  double tolerance_ = 1e-6;
  Callback callback_;
  std::vector<double> history_;
  int iterations_ = 0;
  CgStatus status_ = CgStatus::NotRun;
};

} // namespace mri
