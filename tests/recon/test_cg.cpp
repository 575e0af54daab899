// ConjugateGradient on small dense Hermitian systems, checked against Eigen's direct solve.
#include "catch.hpp"
#include "mri/conjugate_gradient.hpp"
#include "test_support.hpp"

#include <Eigen/Dense>
#include <limits>

using namespace mri;

namespace {

using Matrix = Eigen::MatrixXcd;

// A = B^H B + shift I: Hermitian, positive definite when shift > 0.
Matrix random_spd(int n, double shift, std::uint64_t seed) {
  const auto v = test::random_complex(static_cast<std::size_t>(n * n), seed);
  Matrix b(n, n);
  for (int i = 0; i < n * n; ++i) b(i % n, i / n) = cdouble(v[static_cast<std::size_t>(i)]);
  return b.adjoint() * b + shift * Matrix::Identity(n, n);
}

struct DenseOperator {
  Matrix a;
  void operator()(const Image &in, Image &out) const {
    Eigen::VectorXcd x(static_cast<Eigen::Index>(in.size()));
    for (std::size_t i = 0; i < in.size(); ++i) x(static_cast<Eigen::Index>(i)) = cdouble(in[i]);
    const Eigen::VectorXcd y = a * x;
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = cfloat(y(static_cast<Eigen::Index>(i)));
  }
};

} // namespace

TEST_CASE("cg: solves a random SPD system to the requested tolerance", "[cg]") {
  const int n = 40;
  const Matrix a = random_spd(n, 5.0, 17);
  const Image b = test::random_image(Grid(n, 1), 23);
  int calls = 0;
  ConjugateGradient<DenseOperator, Image> cg(DenseOperator{a});
  cg.set_max_iterations(200).set_tolerance(1e-5).set_callback([&](int k, const Image &, double r) {
    ++calls;
    CHECK(k == calls);
    CHECK(std::isfinite(r));
  });
  const Image x = cg.solve(b);
  CHECK(cg.info() == CgStatus::Converged);
  CHECK(cg.error() <= 1e-5);
  CHECK(calls == cg.iterations());
  CHECK(cg.residual_history().size() == static_cast<std::size_t>(cg.iterations() + 1));
  CHECK(std::abs(cg.residual_history().front() - 1.0) < 1e-12);

  Eigen::VectorXcd rhs(n);
  for (int i = 0; i < n; ++i) rhs(i) = cdouble(b[static_cast<std::size_t>(i)]);
  const Eigen::VectorXcd exact = a.ldlt().solve(rhs);
  Image xe(Grid(n, 1));
  for (int i = 0; i < n; ++i) xe[static_cast<std::size_t>(i)] = cfloat(exact(i));
  // Residual 1e-5 with cond(A) ~ 1e2 bounds the error near 1e-3; float32 vectors add ~1e-6.
  CHECK(test::relative_error(x, xe) < 2e-3);
}

TEST_CASE("cg: solve_with_guess from the solution converges at once", "[cg]") {
  const Matrix a = random_spd(12, 2.0, 3);
  const Image b = test::random_image(Grid(12, 1), 4);
  ConjugateGradient<DenseOperator, Image> cg(DenseOperator{a});
  cg.set_max_iterations(100).set_tolerance(1e-6);
  Image x = cg.solve(b);
  cg.solve_with_guess(b, x);
  CHECK(cg.iterations() <= 1);
  CHECK(cg.info() == CgStatus::Converged);
}

TEST_CASE("cg: a zero right-hand side returns zero", "[cg]") {
  ConjugateGradient<DenseOperator, Image> cg(DenseOperator{random_spd(5, 1.0, 1)});
  Image b(Grid(5, 1));
  const Image x = cg.solve(b);
  CHECK(cg.info() == CgStatus::Converged);
  CHECK(VectorOps<Image>::norm2(x) == 0.0); // every element: the direct solve of A x = 0
}

TEST_CASE("cg: a broken operator stops with a status, not NaNs", "[cg][bad-input]") {
  const Image b = test::random_image(Grid(8, 1), 9);
  auto nan_op = [](const Image &, Image &out) {
    for (auto &v : out.values()) v = {std::numeric_limits<float>::quiet_NaN(), 0};
  };
  ConjugateGradient<decltype(nan_op), Image> cg(nan_op);
  cg.solve(b);
  CHECK(cg.info() == CgStatus::NonFinite);

  auto negative = [](const Image &in, Image &out) {
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = -in[i];
  };
  ConjugateGradient<decltype(negative), Image> cg2(negative);
  const Image x = cg2.solve(b);
  CHECK(cg2.info() == CgStatus::Breakdown);
  CHECK(VectorOps<Image>::all_finite(x));

  CHECK_THROWS_AS(cg2.set_max_iterations(-1), InvalidArgument);
  CHECK_THROWS_AS(cg2.set_tolerance(std::numeric_limits<double>::quiet_NaN()), InvalidArgument);
}
