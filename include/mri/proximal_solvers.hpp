#pragma once
// Proximal solvers for   min_x  f(x) + sum_i lambda_i R_i(T_i x),   f(x) = 0.5 ||E x - y||_W^2,
// matrix-free in image space: f is reached only through the normal operator N = E^H W E (with
// any l2 term folded in: the same operator ConjugateGradient takes) and b = E^H W y, since
//   grad f(x) = N x - b,   f(x) = 0.5 Re<x, N x> - Re<b, x> + 0.5 ||y||_W^2.
// Templated over the operator and the vector type as ConjugateGradient is, so host images and
// CUDA device images share them. Each solver applies N once per iteration (ADMM: once per inner
// CG iteration, plus once for its objective) and reports f + sum R exactly at every iterate.
//
//   Fista       one term (Beck and Teboulle 2009): wavelet and l1 by their closed-form maps, TV by
//               warm-started inner iterations (SparseTermOps::prox_image); with the monotone safeguard of their MFISTA (Beck and Teboulle 2009, TV paper, eq. 4.1):
//               z = prox_{R/L}(v - (N v - b) / L); x+ = z if F(z) <= F(x) else x;
//               v+ = x+ + (t/t+) (z - x+) + ((t - 1)/t+) (x+ - x). The safeguard compares
//               objectives of one fixed penalty, so it is on only without cycle spinning (whose
//               shifts change the penalty each iteration, as in BART's FISTA).
//               N v is N x+ and N z combined (N is linear): one N per iteration. Each step is
//               checked against its own curvature and L raised when it shows more (fista_step).
//   Admm        any terms (Boyd et al. 2011, scaled form): x+ = argmin f + rho/2 sum ||T_i x - z_i + u_i||^2
//               by CG on (N + rho sum T_i^H T_i) from x; z_i = prox_{R_i/rho}(T_i x+ + u_i);
//               u_i += T_i x+ - z_i. rho starts at admm_rho L and is balanced each iteration
//               (balanced_rho).
//   PrimalDual  any terms, matrix-free in the terms (Condat 2013, Vu 2013: primal-dual with a
//               smooth term): x+ = x - tau (N x - b + sum T_i^H p_i);
//               p_i = prox_{sigma R_i^*}(p_i + sigma T_i (2 x+ - x)), tau = 1/L,
//               sigma = L / (2 sum ||T_i||^2), which meets 1/tau - sigma sum ||T_i||^2 >= L/2.
// L, the largest eigenvalue of N, by power iteration from b (Rayleigh quotient, times a margin);
// ADMM's rho is relative to it. The exact L is not needed in advance by FISTA (its step check),
// but is by PrimalDual, whose step has no check.
//
// Thread safety: a solver holds its state: one solver per thread.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mri/conjugate_gradient.hpp"
#include "mri/error.hpp"
#include "mri/proximal.hpp"
#include "mri/vector_ops.hpp"

namespace mri {

enum class ProximalAlgorithm {
  Auto,      // Fista for one term, else Admm
  Fista,     // one term
  Admm,      // any terms; inner CG
  PrimalDual // any terms; no inner solves
};
const char *to_string(ProximalAlgorithm);

struct ProximalSettings {
  ProximalAlgorithm algorithm = ProximalAlgorithm::Auto;
  // ADMM's penalty parameter relative to L: the x-update adds rho L sum T_i^H T_i. Relative, so
  // that the coil maps' or the data's units do not change what it does (BART's pics -u is
  // absolute: with maps of large norm its TV does nothing); tuned on the CS-2D radial problem
  // (benchmarks/cs).
  double admm_rho = 0.01;
  int admm_cg_iterations = 10;   // at most this many CG iterations per ADMM x-update (BART's default)
  // Each x-update's CG stops at this relative residual: warm started from the previous x, late
  // updates need few iterations. Tuned on CS-2D radial TV (benchmarks/cs; the trade-off of PSNR
  // against time is in docs/sparse.md): BART's 1e-3 gives up more PSNR than it saves time.
  double admm_cg_tolerance = 5e-4;
  // Power iterations for L: the primal-dual step needs L from above (a 2% margin over the last
  // Rayleigh quotient; eigenvalues that separate slowly, as a spiral's, leave 20 iterations some
  // 10% short and PrimalDual's step too long) and ADMM scales rho by it. FISTA checks each step
  // and raises L when a step shows more curvature (fista_step), so it starts from a few.
  int power_iterations = 20;
  int fista_power_iterations = 5;
  // FISTA with a TV term: iterations of its inner TV denoising (SparseTermOps::prox_image) per
  // step, warm started. Tuned on CS-2D radial TV (benchmarks/cs; docs/sparse.md).
  int tv_prox_iterations = 5;
  bool cycle_spinning = true;    // random wavelet shifts, a new one each iteration (as BART)
  std::uint64_t seed = 0x5eed;   // of the shifts: equal settings give equal images
};

// Auto's rule, and the refusal of impossible combinations: Fista with several terms or with a
// transform (TV). Throws InvalidArgument naming the algorithm and the terms.
ProximalAlgorithm resolve_proximal_algorithm(ProximalAlgorithm requested, const std::vector<SparseTerm> &terms);
// Throws InvalidArgument naming `name`.field for a setting out of its range (rho <= 0 or not
// finite, iteration counts < 1, a negative or non-finite CG tolerance).
void validate(const ProximalSettings &settings, const std::string &name);

// Term: one sparse term on Vec (SparseTermOps for an image; FrameTermOps, mri/frame_terms.hpp, for
// a stack of frames).
template <class NormalOp, class Vec, class Ops = VectorOps<Vec>, class SOps = SparseOps<Vec>,
          class Term = SparseTermOps<Vec, SOps, Ops>>
class ProximalSolver {
public:
  // Called after each iteration with (iteration from 1, iterate, relative change of the iterate).
  using Callback = std::function<void(int, const Vec &, double)>;

  ProximalSolver(NormalOp normal, const Grid &grid, const std::vector<SparseTerm> &terms, ProximalSettings settings)
      : normal_(std::move(normal)), grid_(grid), terms_spec_(terms), settings_(settings),
        algorithm_(resolve_proximal_algorithm(settings.algorithm, terms)) {
    validate(settings, "settings");
  }

  ProximalSolver &set_max_iterations(int n) {
    if (n < 0) detail::invalid_argument("max_iterations", n, "must be >= 0");
    max_iterations_ = n;
    return *this;
  }
  // Stop when ||x+ - x|| <= tolerance ||x+|| (ADMM: and its split's relative primal residual
  // <= tolerance); 0: run every iteration.
  ProximalSolver &set_tolerance(double tol) {
    if (!(tol >= 0) || !std::isfinite(tol)) detail::invalid_argument("tolerance", tol, "must be finite and >= 0");
    tolerance_ = tol;
    return *this;
  }
  ProximalSolver &set_callback(Callback cb) {
    callback_ = std::move(cb);
    return *this;
  }
  // L known beforehand (the first solve's initial_lipschitz() on the same normal operator, kept
  // beside Q: ReconOptions::q_cache_dir): each solve starts from it instead of the power
  // iteration. 0 (the default): estimate it.
  ProximalSolver &set_lipschitz(double lipschitz) {
    if (!(lipschitz >= 0) || !std::isfinite(lipschitz))
      detail::invalid_argument("lipschitz", lipschitz, "must be finite and >= 0 (0: estimate it)");
    given_lipschitz_ = lipschitz;
    return *this;
  }

  // Solves from x = 0. data_energy: 0.5 ||y||_W^2, the objective's constant (0: objectives are
  // reported less that constant).
  Vec solve(const Vec &b, double data_energy = 0) {
    reset(data_energy);
    Vec x = Ops::like(b);
    Ops::zero(x);
    make_terms(b);
    if (!std::isfinite(Ops::norm2(b))) {
      status_ = CgStatus::NonFinite;
      return x;
    }
    switch (algorithm_) {
    case ProximalAlgorithm::Fista: fista(b, x); break;
    case ProximalAlgorithm::Admm: admm(b, x); break;
    default: primal_dual(b, x); break;
    }
    return x;
  }

  ProximalAlgorithm algorithm() const { return algorithm_; }
  int iterations() const { return iterations_; }
  CgStatus info() const { return status_; }
  double lipschitz() const { return lipschitz_; } // L, the largest eigenvalue of N
  // L as the last solve started (the power iteration's estimate with its margin, or the given
  // one), before FISTA's step check raised it: what a cache keeps, so that a solve started from
  // it repeats the first bit for bit. 0 when the power iteration found no curvature (zero data:
  // the stand-in L = 1 is no estimate of N).
  double initial_lipschitz() const { return initial_lipschitz_; }
  // The power iterations the resolved algorithm runs for L (a cached L is keyed by them).
  int power_iterations() const {
    return algorithm_ == ProximalAlgorithm::Fista ? settings_.fista_power_iterations : settings_.power_iterations;
  }
  double step() const { return step_; }           // 1/L (Fista, PrimalDual's tau); ADMM's rho L
  int rejected_steps() const { return rejected_; } // Fista's monotone safeguard
  int step_raises() const { return step_raises_; }  // Fista's step check raised L
  // Objective before the first and after each iteration; relative change after each.
  const std::vector<double> &objective_history() const { return objective_; }
  const std::vector<double> &change_history() const { return changes_; }

private:
  void reset(double data_energy) {
    data_energy_ = data_energy;
    objective_.clear();
    changes_.clear();
    iterations_ = rejected_ = step_raises_ = 0;
    status_ = CgStatus::NotRun;
    lipschitz_ = initial_lipschitz_ = step_ = 0;
  }
  void make_terms(const Vec &like) {
    terms_.clear();
    ranges_.clear();
    std::uint64_t seed = settings_.seed;
    for (const SparseTerm &t : terms_spec_) {
      terms_.emplace_back(t, grid_, like, settings_.cycle_spinning, seed++);
      ranges_.push_back(terms_.back().make_range(like));
    }
  }

  // v = s v for a vector of the image's size, as 0 + s v (axpy's (s - 1) v would lose s's digits to float rounding when s << 1).
  void scale(Vec &v, double s) {
    if (!zero_) {
      zero_.emplace(Ops::like(v));
      Ops::zero(*zero_);
    }
    Ops::xpay(*zero_, s, v);
  }
  // f(x) from x and N x.
  double data_term(const Vec &b, const Vec &x, const Vec &nx) const {
    return 0.5 * Ops::dot(x, nx).real() - Ops::dot(b, x).real() + data_energy_;
  }
  double penalty(const Vec &x) {
    double r = 0;
    for (std::size_t i = 0; i < terms_.size(); ++i) r += terms_[i].value(x, ranges_[i]);
    return r;
  }
  double relative_change(const Vec &next, const Vec &previous, Vec &scratch) const {
    Ops::copy(next, scratch);
    Ops::axpy(-1.0, previous, scratch);
    const double n = Ops::norm2(next);
    return n > 0 ? std::sqrt(Ops::norm2(scratch) / n) : 0.0;
  }
  // Records iteration k's objective and change; false when the solver must stop.
  bool record(int k, const Vec &x, double objective, double change) {
    iterations_ = k;
    if (!std::isfinite(objective) || !std::isfinite(change)) {
      status_ = CgStatus::NonFinite;
      return false;
    }
    objective_.push_back(objective);
    changes_.push_back(change);
    if (callback_) callback_(k, x, change);
    if (tolerance_ > 0 && change <= tolerance_) { // 0: run every iteration
      status_ = CgStatus::Converged;
      return false;
    }
    return true;
  }

  // L = the largest eigenvalue of N, from b; a 2% margin covers the power iteration's
  // underestimate (it converges from below).
  static constexpr double kLipschitzMargin = 1.02;
  void estimate_lipschitz(const Vec &b, int iterations) {
    if (given_lipschitz_ > 0) {
      lipschitz_ = initial_lipschitz_ = given_lipschitz_;
      return;
    }
    Vec v = Ops::like(b), nv = Ops::like(b);
    Ops::copy(b, v);
    double rayleigh = 0;
    for (int k = 0; k < iterations; ++k) {
      const double norm = std::sqrt(Ops::norm2(v));
      if (!(norm > 0) || !std::isfinite(norm)) break;
      scale(v, 1.0 / norm);
      normal_(v, nv);
      rayleigh = Ops::dot(v, nv).real();
      std::swap(v, nv);
    }
    const bool found = rayleigh > 0 && std::isfinite(rayleigh);
    lipschitz_ = found ? kLipschitzMargin * rayleigh : 1.0;
    initial_lipschitz_ = found ? lipschitz_ : 0.0;
  }

  void fista(const Vec &b, Vec &x) {
    estimate_lipschitz(b, settings_.fista_power_iterations);
    step_ = 1.0 / lipschitz_;
    Term &term = terms_.front();
    const SparsePenalty kind = term.term().penalty;
    const bool shifted = kind == SparsePenalty::L1Wavelet || kind == SparsePenalty::LocallyLowRank;
    const bool monotone = !settings_.cycle_spinning || !shifted;
    Vec nx = Ops::like(b), v = Ops::like(b), nv = Ops::like(b), z = Ops::like(b), nz = Ops::like(b);
    Vec d = Ops::like(b), nd = Ops::like(b);
    Ops::zero(nx);
    Ops::zero(v);
    Ops::zero(nv);
    double fx = data_energy_ + penalty(x), t = 1;
    objective_.push_back(fx);
    for (int k = 1; k <= max_iterations_; ++k) {
      fista_step(b, term, v, nv, z, nz, d, nd);
      const double fz = data_term(b, z, nz) + penalty(z);
      const double t_next = 0.5 * (1 + std::sqrt(1 + 4 * t * t));
      const bool accept = !monotone || fz <= fx;
      if (!std::isfinite(fz)) return void(record(k, x, fz, 0));
      const double change = accept ? relative_change(z, x, v) : 0.0;
      if (accept) { // v = z + ((t - 1)/t+) (z - x), and N v alike; then x = z
        extrapolate(z, x, (t - 1) / t_next, v);
        extrapolate(nz, nx, (t - 1) / t_next, nv);
        std::swap(x, z);
        std::swap(nx, nz);
        fx = fz;
      } else { // x stays: v = x + (t/t+) (z - x)
        ++rejected_;
        extrapolate_towards(x, z, t / t_next, v);
        extrapolate_towards(nx, nz, t / t_next, nv);
      }
      t = t_next;
      if (!record(k, x, fx, accept ? change : 1.0)) return;
    }
    status_ = CgStatus::MaxIterations;
  }
  // z = prox_{R/L}(v - (N v - b) / L) and nz = N z, with FISTA's step check (Beck and Teboulle
  // 2009, backtracking): f is quadratic, so the sufficient decrease
  //   f(z) <= f(v) + Re<grad f(v), d> + L/2 ||d||^2,  d = z - v,   is   <d, N d> <= L ||d||^2,
  // the step's own Rayleigh quotient. When it fails, L rises to it (times the margin) and the step
  // is taken again, so L stays below the margin times N's largest eigenvalue and a short power
  // iteration cannot make FISTA diverge. N d is first taken as nz - nv (free); nv is a running
  // combination whose rounding drifts, which near convergence (d small) can fake curvature, so a
  // failed check is confirmed with N applied to d (one more N, only then).
  void fista_step(const Vec &b, Term &term, const Vec &v, const Vec &nv, Vec &z, Vec &nz, Vec &d, Vec &nd) {
    constexpr double kSlack = 1.01;
    // A bound on the loop: each raise multiplies L by more than kSlack * kLipschitzMargin.
    constexpr int kMostRaises = 8;
    for (int raise = 0;; ++raise) {
      Ops::copy(v, z);
      Ops::axpy(-step_, nv, z);
      Ops::axpy(step_, b, z);
      term.prox_image(step_, z, settings_.tv_prox_iterations);
      normal_(z, nz);
      double curvature = rayleigh_of_difference(z, v, nz, nv, d, nd);
      if (curvature > kSlack * lipschitz_) { // confirm with N d itself: nv carries its extrapolations' rounding
        normal_(d, nd);
        const double norm2 = Ops::norm2(d);
        curvature = norm2 > 0 ? Ops::dot(d, nd).real() / norm2 : 0.0;
      }
      if (!(curvature > kSlack * lipschitz_) || raise == kMostRaises) return; // NaN: record() stops
      lipschitz_ = kLipschitzMargin * curvature;
      step_ = 1.0 / lipschitz_;
      ++step_raises_;
    }
  }
  // <a - c, N (a - c)> / ||a - c||^2 from a, c, N a, N c (0 where a = c).
  static double rayleigh_of_difference(const Vec &a, const Vec &c, const Vec &na, const Vec &nc, Vec &d, Vec &nd) {
    Ops::copy(a, d);
    Ops::axpy(-1.0, c, d);
    Ops::copy(na, nd);
    Ops::axpy(-1.0, nc, nd);
    const double norm2 = Ops::norm2(d);
    return norm2 > 0 ? Ops::dot(d, nd).real() / norm2 : 0.0;
  }
  // out = a + beta (a - c)
  static void extrapolate(const Vec &a, const Vec &c, double beta, Vec &out) {
    Ops::copy(a, out);
    Ops::axpy(beta, a, out);
    Ops::axpy(-beta, c, out);
  }
  // out = a + gamma (c - a)
  static void extrapolate_towards(const Vec &a, const Vec &c, double gamma, Vec &out) {
    Ops::copy(a, out);
    Ops::axpy(-gamma, a, out);
    Ops::axpy(gamma, c, out);
  }

  void admm(const Vec &b, Vec &x) {
    estimate_lipschitz(b, settings_.power_iterations);
    double rho = settings_.admm_rho * lipschitz_;
    std::vector<Vec> z, u, z_previous;
    for (Term &term : terms_) {
      z.push_back(term.make_range(b));
      u.push_back(term.make_range(b));
      z_previous.push_back(term.make_range(b));
      Ops::zero(z.back());
      Ops::zero(u.back());
    }
    Vec rhs = Ops::like(b), image = Ops::like(b), previous = Ops::like(b), nx = Ops::like(b);
    objective_.push_back(data_energy_ + penalty(x));
    // The x-update's operator: N + rho sum T_i^H T_i (rho read at each call: it adapts).
    auto augmented = [&](const Vec &in, Vec &out) {
      normal_(in, out);
      for (std::size_t i = 0; i < terms_.size(); ++i) {
        terms_[i].transform(in, ranges_[i]);
        terms_[i].transform_adjoint(ranges_[i], image);
        Ops::axpy(rho, image, out);
      }
    };
    ConjugateGradient<decltype(augmented), Vec, Ops> cg(augmented); // a copy: it captures by reference
    cg.set_max_iterations(settings_.admm_cg_iterations).set_tolerance(settings_.admm_cg_tolerance);
    for (int k = 1; k <= max_iterations_; ++k) {
      Ops::copy(b, rhs); // b + rho sum T_i^H (z_i - u_i)
      for (std::size_t i = 0; i < terms_.size(); ++i) {
        Ops::copy(z[i], ranges_[i]);
        Ops::axpy(-1.0, u[i], ranges_[i]);
        terms_[i].transform_adjoint(ranges_[i], image);
        Ops::axpy(rho, image, rhs);
      }
      Ops::copy(x, previous);
      cg.solve_with_guess(rhs, x);
      if (cg.info() == CgStatus::NonFinite) {
        std::swap(x, previous);
        return void(record(k, x, NAN, 0));
      }
      Residuals res;
      for (std::size_t i = 0; i < terms_.size(); ++i) { // z = prox(T x + u), u = T x + u - z
        Ops::copy(z[i], z_previous[i]);
        terms_[i].transform(x, ranges_[i]);
        res.tx2 += Ops::norm2(ranges_[i]);
        Ops::axpy(1.0, ranges_[i], u[i]);
        Ops::copy(u[i], z[i]);
        terms_[i].prox(1.0 / rho, z[i]);
        res.z2 += Ops::norm2(z[i]);
        Ops::axpy(-1.0, z[i], u[i]);
        Ops::axpy(-1.0, z[i], ranges_[i]); // the primal residual T x - z
        res.primal2 += Ops::norm2(ranges_[i]);
        Ops::axpy(-1.0, z[i], z_previous[i]); // the dual residual, over rho: T^H (z_previous - z)
        terms_[i].transform_adjoint(z_previous[i], image);
        res.dual2 += Ops::norm2(image);
        terms_[i].transform_adjoint(u[i], image); // the dual variable, over rho: T^H u
        res.tu2 += Ops::norm2(image);
      }
      const double primal = relative_primal(res);
      rho = balanced_rho(rho, res, u);
      step_ = rho;
      normal_(x, nx);
      // ADMM's change: x's, or the split's disagreement when larger (an x-update whose CG met its
      // tolerance at once leaves x as it was while z and u still move).
      const double change = std::max(relative_change(x, previous, image), primal);
      if (!record(k, x, data_term(b, x, nx) + penalty(x), change)) return;
    }
    status_ = CgStatus::MaxIterations;
  }
  // Squared norms of one ADMM iteration: the primal residual T x - z, the dual residual over rho
  // T^H (z_previous - z), and their scales T x, z and T^H u.
  struct Residuals {
    double primal2 = 0, dual2 = 0, tx2 = 0, z2 = 0, tu2 = 0;
  };
  // Residual balancing (Boyd et al. 2011, eq. 3.13) on the residuals relative to their scales
  // (the scales of Boyd et al.'s stopping rule, eq. 3.12): the absolute ones compare an image's
  // units with the normal operator's, which the data and the coil maps set. rho doubles when the
  // relative primal residual exceeds 10 times the relative dual one and halves in the opposite
  // case; the scaled duals u = y / rho follow (exact: factors of 2).
  static double relative_primal(const Residuals &r) { return std::sqrt(r.primal2 / std::max({r.tx2, r.z2, 1e-300})); }
  static double balanced_rho(double rho, const Residuals &r, std::vector<Vec> &u) {
    const double primal = relative_primal(r);
    const double dual = std::sqrt(r.dual2 / std::max(r.tu2, 1e-300));
    double factor = 1;
    if (primal > 10 * dual) factor = 2;
    if (dual > 10 * primal) factor = 0.5;
    if (factor != 1)
      for (Vec &v : u) Ops::axpy(1.0 / factor - 1.0, v, v); // u / factor
    return rho * factor;
  }

  void primal_dual(const Vec &b, Vec &x) {
    estimate_lipschitz(b, settings_.power_iterations);
    double transform_norm2 = 0;
    for (const Term &term : terms_) transform_norm2 += term.transform_norm2();
    const double tau = 1.0 / lipschitz_, sigma = lipschitz_ / (2.0 * transform_norm2);
    step_ = tau;
    std::vector<Vec> p;
    for (Term &term : terms_) {
      p.push_back(term.make_range(b));
      Ops::zero(p.back());
    }
    Vec nx = Ops::like(b), gradient = Ops::like(b), previous = Ops::like(b), image = Ops::like(b);
    Ops::zero(nx);
    objective_.push_back(data_energy_ + penalty(x));
    for (int k = 1; k <= max_iterations_; ++k) {
      Ops::copy(nx, gradient); // N x - b + sum T_i^H p_i
      Ops::axpy(-1.0, b, gradient);
      for (std::size_t i = 0; i < terms_.size(); ++i) {
        terms_[i].transform_adjoint(p[i], image);
        Ops::axpy(1.0, image, gradient);
      }
      Ops::copy(x, previous);
      Ops::axpy(-tau, gradient, x);
      extrapolate(x, previous, 1.0, image); // 2 x+ - x
      for (std::size_t i = 0; i < terms_.size(); ++i) dual_step(terms_[i], sigma, image, p[i], ranges_[i]);
      normal_(x, nx);
      if (!record(k, x, data_term(b, x, nx) + penalty(x), relative_change(x, previous, gradient))) {
        if (status_ == CgStatus::NonFinite) std::swap(x, previous);
        return;
      }
    }
    status_ = CgStatus::MaxIterations;
  }
  // p = prox_{sigma R*}(p + sigma T xbar) = w - sigma prox_{R/sigma}(w / sigma), w = p + sigma T xbar
  // (Moreau's identity).
  static void dual_step(Term &term, double sigma, const Vec &xbar, Vec &p, Vec &scratch) {
    term.transform(xbar, scratch);
    Ops::axpy(1.0 / sigma, p, scratch); // w / sigma = p / sigma + T xbar
    Ops::copy(scratch, p);
    term.prox(1.0 / sigma, scratch);
    Ops::axpy(-1.0, scratch, p); // w/sigma - prox(w/sigma)
    Ops::zero(scratch);
    Ops::xpay(scratch, sigma, p); // times sigma, as 0 + sigma p (scale's rule)
  }

  NormalOp normal_;
  Grid grid_;
  std::vector<SparseTerm> terms_spec_;
  ProximalSettings settings_;
  ProximalAlgorithm algorithm_;
  std::vector<Term> terms_;
  std::vector<Vec> ranges_;
  std::optional<Vec> zero_; // of the image's size (scale)
  int max_iterations_ = 100;
  double tolerance_ = 0;
  Callback callback_;
  double data_energy_ = 0, lipschitz_ = 0, step_ = 0;
  double given_lipschitz_ = 0, initial_lipschitz_ = 0;
  std::vector<double> objective_, changes_;
  int iterations_ = 0, rejected_ = 0, step_raises_ = 0;
  CgStatus status_ = CgStatus::NotRun;
};

} // namespace mri
