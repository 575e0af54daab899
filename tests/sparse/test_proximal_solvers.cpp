// The proximal solvers (mri/proximal_solvers.hpp) on small problems with a dense float64 model:
// each reaches the minimum a float64 reference solver finds, none diverges over a sweep of lambda
// and data scalings, and bad settings are refused.
#include <Eigen/Dense>
#include <cmath>
#include <complex>
#include <map>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/proximal_solvers.hpp"
#include "mri/sparse.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

using Matrix = Eigen::MatrixXcd;
using Vector = Eigen::VectorXcd;

// A dense undersampled Fourier model E (m x voxels, k uniform random in the grid's band) of a
// piecewise-constant image, its data y = E x + noise, and N = E^H E, b = E^H y in float64.
struct DenseProblem {
  Grid grid;
  std::uint64_t seed;
  Matrix e;
  Vector y;
  Matrix normal;
  Vector rhs;

  DenseProblem(Grid g, int samples, double data_scale, std::uint64_t seed_) : grid(g), seed(seed_) {
    const auto n = static_cast<Eigen::Index>(g.voxels());
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> k(-0.5, 0.5);
    e.resize(samples, n);
    for (int m = 0; m < samples; ++m) {
      const double kx = k(rng) * static_cast<double>(g.nx()), ky = k(rng) * static_cast<double>(g.ny());
      for (std::int64_t iy = 0; iy < g.ny(); ++iy)
        for (std::int64_t ix = 0; ix < g.nx(); ++ix) {
          const double phase = -2 * M_PI * (kx * static_cast<double>(g.coordinate(0, ix)) / static_cast<double>(g.nx()) +
                                            ky * static_cast<double>(g.coordinate(1, iy)) / static_cast<double>(g.ny()));
          e(m, static_cast<Eigen::Index>(g.index(ix, iy))) = std::polar(1.0 / std::sqrt(samples), phase);
        }
    }
    Vector truth = Vector::Zero(n);
    for (std::int64_t iy = 2; iy < g.ny() - 2; ++iy)
      for (std::int64_t ix = 2; ix < g.nx() - 3; ++ix)
        truth(static_cast<Eigen::Index>(g.index(ix, iy))) = (ix < g.nx() / 2 ? 1.0 : 0.5) * data_scale;
    const std::vector<cfloat> noise = test::random_complex(static_cast<std::size_t>(samples), seed + 1);
    y = e * truth;
    for (int m = 0; m < samples; ++m) y(m) += 0.02 * data_scale * std::complex<double>(noise[static_cast<std::size_t>(m)]);
    normal = e.adjoint() * e;
    rhs = e.adjoint() * y;
  }

  double data_energy() const { return 0.5 * y.squaredNorm(); }
  Vector to_vector(const Image &x) const {
    Vector v(static_cast<Eigen::Index>(x.values().size()));
    for (std::size_t i = 0; i < x.values().size(); ++i) v(static_cast<Eigen::Index>(i)) = std::complex<double>(x.values()[i]);
    return v;
  }
  Image to_image(const Vector &v) const {
    Image x(grid);
    for (Eigen::Index i = 0; i < v.size(); ++i) x.values()[static_cast<std::size_t>(i)] = cfloat(v(i));
    return x;
  }
  // The normal operator for the solver: float images, float64 products.
  auto normal_op() const {
    return [this](const Image &in, Image &out) { out = to_image(normal * to_vector(in)); };
  }
};

// Forward differences with nothing past the edge, along x and y, in float64.
Vector gradient(const Grid &g, const Vector &x) {
  const auto n = static_cast<Eigen::Index>(g.voxels());
  Vector d = Vector::Zero(2 * n);
  for (std::int64_t iy = 0; iy < g.ny(); ++iy)
    for (std::int64_t ix = 0; ix < g.nx(); ++ix) {
      const auto v = static_cast<Eigen::Index>(g.index(ix, iy));
      if (ix + 1 < g.nx()) d(v) = x(v + 1) - x(v);
      if (iy + 1 < g.ny()) d(n + v) = x(v + g.nx()) - x(v);
    }
  return d;
}
Vector gradient_adjoint(const Grid &g, const Vector &d) {
  const auto n = static_cast<Eigen::Index>(g.voxels());
  Vector x = Vector::Zero(n);
  for (std::int64_t iy = 0; iy < g.ny(); ++iy)
    for (std::int64_t ix = 0; ix < g.nx(); ++ix) {
      const auto v = static_cast<Eigen::Index>(g.index(ix, iy));
      if (ix + 1 < g.nx()) {
        x(v + 1) += d(v);
        x(v) -= d(v);
      }
      if (iy + 1 < g.ny()) {
        x(v + g.nx()) += d(n + v);
        x(v) -= d(n + v);
      }
    }
  return x;
}

double isotropic_tv(const Grid &g, const Vector &x) {
  const Vector d = gradient(g, x);
  const auto n = static_cast<Eigen::Index>(g.voxels());
  double s = 0;
  for (Eigen::Index v = 0; v < n; ++v) s += std::sqrt(std::norm(d(v)) + std::norm(d(n + v)));
  return s;
}
double l1(const Vector &x) { return x.cwiseAbs().sum(); }

double objective(const DenseProblem &p, const Vector &x, SparsePenalty penalty, double lambda) {
  const double data = 0.5 * (p.e * x - p.y).squaredNorm();
  return data + lambda * (penalty == SparsePenalty::TotalVariation ? isotropic_tv(p.grid, x) : l1(x));
}

// The float64 reference minimiser of 0.5 <x, N x> - Re<b, x> + lambda R(x): ADMM with the
// x-update solved exactly (LDLT of N + rho T^H T), run to a relative change of 1e-13.
Vector reference_solution(const Grid &grid, const Matrix &normal, const Vector &rhs, SparsePenalty penalty, double lambda) {
  const auto n = static_cast<Eigen::Index>(grid.voxels());
  const bool tv = penalty == SparsePenalty::TotalVariation;
  const double rho = 1.0;
  Matrix t = Matrix::Identity(n, n);
  if (tv) {
    t.resize(2 * n, n);
    for (Eigen::Index j = 0; j < n; ++j) t.col(j) = gradient(grid, Vector::Unit(n, j));
  }
  const Eigen::LDLT<Matrix> solve(normal + rho * t.adjoint() * t);
  Vector x = Vector::Zero(n), z = Vector::Zero(t.rows()), u = Vector::Zero(t.rows());
  for (int k = 0; k < 200000; ++k) {
    const Vector previous = x;
    x = solve.solve(rhs + rho * t.adjoint() * (z - u));
    const Vector v = t * x + u;
    for (Eigen::Index i = 0; i < (tv ? n : v.size()); ++i) { // isotropic groups (TV) or single values
      const double norm = tv ? std::sqrt(std::norm(v(i)) + std::norm(v(n + i))) : std::abs(v(i));
      const double s = norm > lambda / rho ? 1 - lambda / rho / norm : 0;
      z(i) = s * v(i);
      if (tv) z(n + i) = s * v(n + i);
    }
    u = v - z;
    if ((x - previous).norm() <= 1e-13 * x.norm() && k > 10) break;
  }
  return x;
}
// Memoised by problem (grid, seed) and term: the float64 ADMM to 1e-13 is the slow part of these
// tests (seconds under the sanitizers), and several cases share a problem.
double reference_minimum(const DenseProblem &p, SparsePenalty penalty, double lambda) {
  static std::map<std::tuple<std::int64_t, std::int64_t, std::uint64_t, Eigen::Index, double, int, double>, double> known;
  const auto key = std::make_tuple(p.grid.nx(), p.grid.ny(), p.seed, p.e.rows(), p.y.squaredNorm(),
                                   static_cast<int>(penalty), lambda);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  return known[key] = objective(p, reference_solution(p.grid, p.normal, p.rhs, penalty, lambda), penalty, lambda);
}

template <class Op>
ProximalSolver<Op, Image> make_solver(Op op, const Grid &grid, SparseTerm term, ProximalAlgorithm algorithm) {
  ProximalSettings s;
  s.algorithm = algorithm;
  s.cycle_spinning = false;
  s.admm_cg_tolerance = 0; // ADMM's x-updates to 10 CG iterations: inexact ones stop short of the minimum
  return ProximalSolver<Op, Image>(std::move(op), grid, {term}, s);
}

} // namespace

TEST_CASE("proximal solvers: each reaches the float64 reference minimum of l1 and TV problems", "[sparse]") {
  const DenseProblem p(Grid(12, 10), 80, 1.0, 41);
  struct Case {
    SparsePenalty penalty;
    ProximalAlgorithm algorithm;
    int iterations;
  };
  const Case c = GENERATE(Case{SparsePenalty::L1Image, ProximalAlgorithm::Fista, 3000},
                          Case{SparsePenalty::L1Image, ProximalAlgorithm::Admm, 1500},
                          Case{SparsePenalty::L1Image, ProximalAlgorithm::PrimalDual, 6000},
                          Case{SparsePenalty::TotalVariation, ProximalAlgorithm::Fista, 3000},
                          Case{SparsePenalty::TotalVariation, ProximalAlgorithm::Admm, 1500},
                          Case{SparsePenalty::TotalVariation, ProximalAlgorithm::PrimalDual, 6000});
  const double lambda = 0.05;
  const double reference = reference_minimum(p, c.penalty, lambda);
  SparseTerm term;
  term.penalty = c.penalty;
  term.lambda = lambda;
  auto solver = make_solver(p.normal_op(), p.grid, term, c.algorithm);
  solver.set_max_iterations(c.iterations).set_tolerance(0);
  const Image b = p.to_image(p.rhs);
  const Image x = solver.solve(b, p.data_energy());
  const double reached = objective(p, p.to_vector(x), c.penalty, lambda);
  INFO(to_string(c.algorithm) << " " << to_string(c.penalty) << ": " << reached << " vs " << reference);
  // 1e-4 relative: the float32 iterate's own rounding moves the objective by ~1e-6.
  CHECK(reached <= reference * (1 + 1e-4));
  CHECK(reached >= reference * (1 - 1e-6)); // the reference is the minimum
  // The solver's own objective is the float64 one, up to float32 rounding of its inner products.
  CHECK(std::abs(solver.objective_history().back() - reached) <= 1e-4 * reached);
}

TEST_CASE("proximal solvers: TV's map on the image reaches the float64 TV-denoising minimum, warm started", "[sparse]") {
  const Grid grid(12, 10);
  const auto n = static_cast<Eigen::Index>(grid.voxels());
  const Image noisy = test::random_image(grid, 4401);
  const DenseProblem shape(grid, 1, 1.0, 4402); // only its float64 conversions
  const Vector x0 = shape.to_vector(noisy);
  const double tau = 0.3;
  const Vector reference = reference_solution(grid, Matrix::Identity(n, n), x0, SparsePenalty::TotalVariation, tau);
  const auto denoise = [&](const Vector &u) { return 0.5 * (u - x0).squaredNorm() + tau * isotropic_tv(grid, u); };
  SparseTerm term;
  term.penalty = SparsePenalty::TotalVariation;
  term.lambda = tau;
  SparseTermOps<Image> ops(term, grid, noisy, false, 1);
  Image u = noisy;
  ops.prox_image(1.0, u, 3000);
  const double reached = denoise(shape.to_vector(u)), minimum = denoise(reference);
  INFO(reached << " vs " << minimum);
  // FGP converges as 1/k^2 in the dual; 3000 iterations leave ~1e-7 relative, float32 rounding ~1e-6.
  CHECK(reached <= minimum * (1 + 1e-5));
  CHECK(reached >= minimum * (1 - 1e-6));
  // Warm started from that dual, a second call on the same image needs few iterations.
  Image again = noisy;
  ops.prox_image(1.0, again, 2);
  CHECK(test::relative_error(again, u) < 1e-4);
  // A different image is denoised, not returned as the first one's result.
  Image other = test::random_image(grid, 4403);
  const Image other_input = other;
  ops.prox_image(1.0, other, 3000);
  CHECK(test::relative_error(other, u) > 0.1);
  CHECK(test::relative_error(other, other_input) > 1e-3);
}

TEST_CASE("proximal solvers: FISTA's step check raises a short power iteration's L and reaches the minimum", "[sparse]") {
  const DenseProblem p(Grid(12, 10), 80, 1.0, 41); // the problem of the first test (its references memoised)
  const double top = Eigen::SelfAdjointEigenSolver<Matrix>(p.normal).eigenvalues().maxCoeff();
  SparseTerm term;
  term.penalty = GENERATE(SparsePenalty::L1Image, SparsePenalty::TotalVariation);
  term.lambda = 0.05;
  ProximalSettings s;
  s.algorithm = ProximalAlgorithm::Fista;
  s.cycle_spinning = false;
  s.fista_power_iterations = 1;
  ProximalSolver<decltype(p.normal_op()), Image> solver(p.normal_op(), p.grid, {term}, s);
  solver.set_max_iterations(3000).set_tolerance(0);
  const Image x = solver.solve(p.to_image(p.rhs), p.data_energy());
  const double reached = objective(p, p.to_vector(x), term.penalty, term.lambda);
  const double reference = reference_minimum(p, term.penalty, term.lambda);
  INFO(to_string(term.penalty) << ": L " << solver.lipschitz() << " (largest eigenvalue " << top << "), "
                               << solver.step_raises() << " raises; " << reached << " vs " << reference);
  CHECK(solver.step_raises() > 0);
  CHECK(solver.lipschitz() <= 1.02 * top * (1 + 1e-5)); // never above the margin over the true L
  CHECK(reached <= reference * (1 + 1e-4));
  const std::vector<double> &f = solver.objective_history();
  for (std::size_t k = 1; k < f.size(); ++k) CHECK(f[k] <= f[k - 1]); // monotone (no cycle spinning)
}

TEST_CASE("proximal solvers: no divergence over lambda and data scalings; FISTA is monotone", "[sparse]") {
  const double data_scale = GENERATE(1e-3, 1.0, 1e3);
  const DenseProblem p(Grid(16, 12), 100, data_scale, 7);
  const Image b = p.to_image(p.rhs);
  for (const double lambda : {1e-4, 1e-2, 1.0, 100.0})
    for (const auto algorithm : {ProximalAlgorithm::Fista, ProximalAlgorithm::Admm, ProximalAlgorithm::PrimalDual}) {
      SparseTerm term;
      term.penalty = SparsePenalty::L1Wavelet;
      term.wavelet = Wavelet::Haar;
      term.lambda = lambda * data_scale;
      auto solver = make_solver(p.normal_op(), p.grid, term, algorithm);
      solver.set_max_iterations(60).set_tolerance(0);
      solver.solve(b, p.data_energy());
      const std::vector<double> &f = solver.objective_history();
      INFO(to_string(algorithm) << " lambda " << lambda << " scale " << data_scale);
      REQUIRE(f.size() == 61);
      for (const double v : f) REQUIRE(std::isfinite(v));
      INFO("objective at 0, 10, ..., 60: " << f[0] << " " << f[10] << " " << f[20] << " " << f[30] << " " << f[40]
                                           << " " << f[50] << " " << f[60]);
      // ADMM is not a descent method: far above a useful lambda its start (rho = 0.01 L) overshoots
      // before rho balances (up to 18x f(0) at lambda 100 here); it must then decrease.
      if (algorithm == ProximalAlgorithm::Admm)
        CHECK(f.back() <= f[f.size() / 2]);
      else
        CHECK(f.back() <= f.front());
      if (algorithm == ProximalAlgorithm::Fista)
        for (std::size_t k = 1; k < f.size(); ++k) CHECK(f[k] <= f[k - 1]);
    }
}

TEST_CASE("proximal solvers: a non-finite right-hand side stops with NonFinite", "[sparse]") {
  const DenseProblem p(Grid(16, 16), 60, 1.0, 3);
  Image b = p.to_image(p.rhs);
  b.values()[5] = cfloat(NAN, 0);
  SparseTerm term;
  term.penalty = SparsePenalty::TotalVariation;
  term.lambda = 0.1;
  auto solver = make_solver(p.normal_op(), p.grid, term, ProximalAlgorithm::Admm);
  const Image x = solver.solve(b, 0);
  CHECK(solver.info() == CgStatus::NonFinite);
  for (const cfloat v : x.values()) CHECK(std::isfinite(v.real()));
}

TEST_CASE("proximal solvers: the algorithm rule and refusals", "[sparse][bad-input]") {
  SparseTerm w, tv;
  tv.penalty = SparsePenalty::TotalVariation;
  CHECK(resolve_proximal_algorithm(ProximalAlgorithm::Auto, {w}) == ProximalAlgorithm::Fista);
  CHECK(resolve_proximal_algorithm(ProximalAlgorithm::Auto, {tv}) == ProximalAlgorithm::Fista);
  CHECK(resolve_proximal_algorithm(ProximalAlgorithm::Auto, {w, tv}) == ProximalAlgorithm::Admm);
  CHECK(resolve_proximal_algorithm(ProximalAlgorithm::PrimalDual, {w, tv}) == ProximalAlgorithm::PrimalDual);
  CHECK(resolve_proximal_algorithm(ProximalAlgorithm::Fista, {tv}) == ProximalAlgorithm::Fista);
  CHECK_THROWS_AS(resolve_proximal_algorithm(ProximalAlgorithm::Fista, {w, tv}), InvalidArgument);
  CHECK_THROWS_AS(resolve_proximal_algorithm(ProximalAlgorithm::Fista, {w, w}), InvalidArgument);
  CHECK_THROWS_AS(resolve_proximal_algorithm(ProximalAlgorithm::Auto, {}), InvalidArgument);
  const DenseProblem p(Grid(16, 16), 20, 1.0, 5);
  ProximalSettings s;
  s.admm_rho = 0;
  CHECK_THROWS_AS((ProximalSolver<decltype(p.normal_op()), Image>(p.normal_op(), p.grid, {tv}, s)), InvalidArgument);
  s.admm_rho = -1;
  CHECK_THROWS_AS((ProximalSolver<decltype(p.normal_op()), Image>(p.normal_op(), p.grid, {tv}, s)), InvalidArgument);
  s.admm_rho = 0.01;
  s.tv_prox_iterations = 0;
  CHECK_THROWS_WITH((ProximalSolver<decltype(p.normal_op()), Image>(p.normal_op(), p.grid, {tv}, s)),
                    test::contains("settings.tv_prox_iterations"));
  s.tv_prox_iterations = 5;
  s.fista_power_iterations = 0;
  CHECK_THROWS_WITH((ProximalSolver<decltype(p.normal_op()), Image>(p.normal_op(), p.grid, {tv}, s)),
                    test::contains("settings.fista_power_iterations"));
}
