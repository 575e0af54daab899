// The operator core (mri/linear_operator.hpp): every host operator and every
// composition is adjoint (<A x, y> = <x, A^H y> on fresh random vectors, sums in double), the
// normals equal A^H A, and the reconstruction's assembled normal (normal_assembly.hpp) equals
// its terms added by hand. Tolerances: float32 operators accumulate in float, so the two inner
// products of a product of M ~ 10^3 terms agree to ~1e-5 relative (checked at 1e-4); the float64
// sums to 1e-6 (they round their outputs to the API's complex<float>: measured 1e-8 .. 2e-7); the
// NUFFT to 1e-4 (spreading and interpolation with one kernel are adjoint up to float rounding).
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/kspace.hpp"
#include "mri/reconstruct.hpp"
#include "mri/linear_operator.hpp"
#include "mri/nufft.hpp"
#include "mri/regularizer.hpp"
#include "mri/sense.hpp"
#include "mri/toeplitz.hpp"
#include "mri_backend/normal_assembly.hpp"
#include "test_support.hpp"

using namespace mri;
using cdouble = std::complex<double>;
using test::inner;
using test::random_complex;

namespace {

std::uint64_t fresh_seed() { return std::random_device{}(); }

std::span<const cfloat> values(const Image &v) { return {v.data(), v.size()}; }
std::span<const cfloat> values(const std::vector<cfloat> &v) { return v; }

void fill_random(Image &v, std::uint64_t seed) { v = test::random_image(v.grid(), seed); }
void fill_random(std::vector<cfloat> &v, std::uint64_t seed) { v = random_complex(v.size(), seed); }

// |<A x, y> - <x, A^H y>| relative to ||A x|| ||y|| (the inner product's scale: <A x, y> itself
// can be small by cancellation between random vectors).
template <LinearOperator A> double adjoint_mismatch(const A &a, std::uint64_t seed) {
  typename A::Domain x = a.domain_vector(), ahy = a.domain_vector();
  typename A::Range y = a.range_vector(), ax = a.range_vector();
  fill_random(x, seed);
  fill_random(y, seed + 1);
  a.forward(x, ax);
  a.adjoint(y, ahy);
  const cdouble lhs = inner(values(ax), values(y)), rhs = inner(values(x), values(ahy));
  return std::abs(lhs - rhs) / std::sqrt(inner(values(ax), values(ax)).real() * inner(values(y), values(y)).real());
}

} // namespace

TEST_CASE("operator core: every host operator and composition is adjoint", "[operators]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  for (const Grid grid : {Grid(12, 10), Grid(6, 5, 4), Grid(7, 1, 5)}) {
    INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz());
    const Trajectory t = test::random_trajectory(grid, 700, seed);
    const std::vector<float> w = test::random_weights(t.size(), seed + 2);
    const FourierOperator f32(t, grid), f64(t, grid, {Backend::Cpu, Precision::Float64});
    CHECK(adjoint_mismatch(f32, seed) < 1e-4);
    CHECK(adjoint_mismatch(f64, seed) < 1e-6);
    const NufftOperator nufft(t, grid, {.tolerance = 1e-4});
    CHECK(adjoint_mismatch(nufft, seed) < 1e-4);
    for (Regularizer r : {Regularizer::None, Regularizer::Tikhonov, Regularizer::FiniteDifference}) {
      INFO("regularizer " << to_string(r));
      const RegularizerOperator reg(r, grid);
      if (r != Regularizer::None) CHECK(adjoint_mismatch(reg, seed) < 1e-5);
      // Its normal (the stencil) is W^H W.
      const Image x = test::random_image(grid, seed + 3);
      Image stencil(grid), composed(grid);
      reg.normal(x, stencil);
      const std::vector<cfloat> wx = mri::forward(reg, x);
      reg.adjoint(wx, composed);
      if (r == Regularizer::None)
        CHECK(VectorOps<Image>::norm2(stencil) + VectorOps<Image>::norm2(composed) == 0.0);
      else
        CHECK(test::relative_error(stencil, composed) < 1e-6);
    }
    const QOperator q(t, w, grid, {Backend::Cpu, Precision::Float64});
    CHECK(adjoint_mismatch(ref(q), seed) < 1e-6); // F^H W F is Hermitian (float32 FFTs)
    CHECK(adjoint_mismatch(adjoint_of(f64), seed) < 1e-6);
    CHECK(adjoint_mismatch(detail::direct_normal(f64, w), seed) < 1e-6);
    CHECK(adjoint_mismatch(sum(ref(q), normal_of(RegularizerOperator(Regularizer::FiniteDifference, grid)),
                               cdouble(0.3, -0.7)),
                           seed) < 1e-6);
    const auto maps = std::make_shared<const CoilSensitivities>(
        grid, 3, random_complex(3 * static_cast<std::size_t>(grid.voxels()), seed + 4));
    CHECK(adjoint_mismatch(SenseOperator(t, grid, maps, {Backend::Cpu, Precision::Float64}), seed) < 1e-6);
  }
}

TEST_CASE("operator core: the assembled normal equals its terms added by hand", "[operators]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid grid(16, 12);
  const Trajectory t = test::random_trajectory(grid, 900, seed);
  const std::vector<float> w = test::random_weights(t.size(), seed + 1);
  const FourierOperator f(t, grid, {Backend::Cpu, Precision::Float64});
  const Image x = test::random_image(grid, seed + 2);

  // direct_normal: F^H (w .* F x).
  std::vector<cfloat> fx = mri::forward(f, x);
  for (std::size_t m = 0; m < fx.size(); ++m) fx[m] *= w[m];
  Image by_hand(grid);
  f.adjoint(fx, by_hand);
  CHECK(test::relative_error(mri::forward(detail::direct_normal(f, w), x), by_hand) < 1e-6);
  // Without weights: normal_of(F) = F^H F.
  Image plain(grid);
  f.adjoint(mri::forward(f, x), plain);
  CHECK(test::relative_error(mri::forward(detail::direct_normal(f, {}), x), plain) < 1e-6);
  CHECK(test::relative_error(mri::forward(normal_of(f), x), plain) < 1e-6);

  // regularized: Q x + lambda W^H W x, and the Toeplitz form agrees with the direct one.
  const QOperator q(t, w, grid, {Backend::Cpu, Precision::Float64});
  const double lambda = 2.5;
  Image expected = mri::forward(ref(q), x);
  add_regularizer_normal(Regularizer::FiniteDifference, lambda, grid, x.data(), expected.data());
  const Image assembled =
      mri::forward(detail::regularized(ref(q), Regularizer::FiniteDifference, lambda, grid), x);
  CHECK(test::relative_error(assembled, expected) < 1e-6);
  CHECK(test::relative_error(mri::forward(ref(q), x), by_hand) < 1e-4); // Toeplitz = direct (float FFTs)
  // lambda = 0 adds nothing: bitwise the data term.
  const Image bare = mri::forward(detail::regularized(ref(q), Regularizer::FiniteDifference, 0.0, grid), x);
  CHECK(test::relative_error(bare, mri::forward(ref(q), x)) == 0.0);
}

TEST_CASE("operator core: vectors of the wrong space are refused", "[operators][bad-input]") {
  const Grid grid(8, 8);
  const Trajectory t = test::random_trajectory(grid, 50, 1);
  const FourierOperator f(t, grid);
  std::vector<cfloat> short_samples(49);
  Image x(grid), other(Grid(8, 7));
  CHECK_THROWS_AS(f.forward(x, short_samples), InvalidArgument);
  CHECK_THROWS_AS(f.forward(other, short_samples), InvalidArgument);
  std::vector<cfloat> y(50);
  CHECK_THROWS_AS(f.adjoint(y, other), InvalidArgument);
  const RegularizerOperator reg(Regularizer::FiniteDifference, grid);
  std::vector<cfloat> d(64); // needs 2 x 64
  CHECK_THROWS_AS(reg.forward(x, d), InvalidArgument);
  CHECK_THROWS_AS(RegularizerOperator(static_cast<Regularizer>(7), grid), InvalidArgument);
  const QOperator q(t, {}, grid);
  Image out(grid);
  CHECK_THROWS_AS(q.forward(other, out), InvalidArgument);
}

TEST_CASE("operator core: the value forms refuse NaN and Inf, naming the element", "[operators][bad-input]") {
  // mri::forward(A, x) and mri::adjoint(A, y) check the input's values for every host operator
  // (the members leave that to the caller); the sizes are the members' checks.
  const Grid grid(8, 8);
  const Trajectory t = test::random_trajectory(grid, 50, 1);
  const FourierOperator f(t, grid);
  const NufftOperator nufft(t, grid);
  const QOperator q(t, {}, grid);
  const SenseOperator e(t, grid, std::make_shared<const CoilSensitivities>(grid, 2, random_complex(128, 2)));
  Image x(grid);
  x[5] = cfloat(std::numeric_limits<float>::quiet_NaN(), 0.0f);
  std::vector<cfloat> y(50), y2(100);
  y[7] = y2[7] = cfloat(0.0f, std::numeric_limits<float>::infinity());
  CHECK_THROWS_WITH(mri::forward(f, x), test::contains("image[5]"));
  CHECK_THROWS_WITH(mri::adjoint(f, y), test::contains("samples[7]"));
  CHECK_THROWS_WITH(mri::forward(nufft, x), test::contains("image[5]"));
  CHECK_THROWS_WITH(mri::adjoint(nufft, y), test::contains("samples[7]"));
  CHECK_THROWS_WITH(mri::forward(q, x), test::contains("image[5]"));
  CHECK_THROWS_WITH(mri::forward(e, x), test::contains("image[5]"));
  CHECK_THROWS_WITH(mri::adjoint(e, y2), test::contains("samples[7]"));
  CHECK_THROWS_WITH(mri::forward(normal_of(f), x), test::contains("must be finite"));
  x[5] = 0.0f;
  y[7] = 0.0f;
  CHECK_THROWS_WITH(mri::adjoint(e, y), test::contains("samples.size() = 50")); // the member's check
  CHECK(mri::forward(f, x).size() == 50);
  CHECK(mri::adjoint(nufft, y).grid() == grid);
}

// docs/api.md's composition, as written there, solves what reconstruct solves (exact F, direct
// normal, finite differences): the same operators in the same order, so to float rounding.
TEST_CASE("operator core: the API tour's composition reproduces reconstruct", "[operators]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid grid(24, 20);
  const Trajectory traj = test::random_trajectory(grid, 1200, seed);
  const std::vector<float> w = test::random_weights(traj.size(), seed + 1);
  const KSpaceData data(traj, random_complex(traj.size(), seed + 2), w);
  const double lambda = 0.5;

  const mri::FourierOperator F(traj, grid);
  const auto N = mri::sum(mri::chain(mri::adjoint_of(F), mri::chain(mri::SampleWeights(w, traj.size()), F)),
                          mri::normal_of(mri::RegularizerOperator(mri::Regularizer::FiniteDifference, grid)),
                          lambda); // F^H W F + lambda D^H D
  const auto op = mri::normal_equations(N);
  mri::ConjugateGradient<decltype(op), mri::Image> cg(op);
  const mri::Image rhs = FhDOperator(traj, grid).apply(data);
  const mri::Image x = cg.set_max_iterations(30).set_tolerance(0).solve(rhs);

  ReconOptions o;
  o.method = Method::Exact;
  o.solver.normal = Normal::Direct;
  o.solver.regularizer = Regularizer::FiniteDifference;
  o.solver.lambda = lambda;
  o.solver.iterations = 30;
  o.solver.tolerance = 0;
  const ReconResult r = reconstruct(data, grid, o);
  CHECK(test::relative_error(x, r.image) < 1e-5);
  CHECK(cg.residual_history().back() < 1e-2 * cg.residual_history().front());
}
