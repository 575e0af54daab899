// The exact non-uniform DFT: adjointness of the float64 reference, the float32 separable
// path (every CPU kernel this machine has) against the float64 reference on fresh random
// inputs, and FourierOperator's argument checks.
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "test_support.hpp"
#include "mri_backend/direct_sums.hpp"

using namespace mri;

namespace {

double norm2(std::span<const cfloat> v) {
  double s = 0;
  for (const cfloat &z : v) s += std::norm(cdouble(z));
  return std::sqrt(s);
}

// Why 1e-5 (the float32 operators' contract) is the right bound for the float32 path: every phase
// table entry is within a few float ulps (~2e-7 relative) of the exact phasor, and the
// GEMM sums at most 256 samples (adjoint) or nx voxels (forward) in float before adding into
// double, so the float error is ~ eps * sqrt(256) ~ 1e-6 relative, not eps * sqrt(M). The
// measured error is ~3e-7; 1e-5 leaves room for unlucky inputs without hiding a real bug
// (a wrong sign, coordinate or table is O(1), an undamped float recurrence ~1e-4).
constexpr double kFloat32Tolerance = 1e-5;
const char *const kKernels[] = {"", "avx2", "generic"};

void check_adjoint_f32(const Trajectory &t, const Grid &out, const Grid &period, std::uint64_t seed) {
  const auto c = test::random_complex(t.size(), seed);
  std::vector<cfloat> reference(static_cast<std::size_t>(out.voxels()));
  detail::adjoint_sum_f64(t, c, out, period, reference.data());
  for (const char *kernel : kKernels) {
    const test::EnvScope scope("MRI_SEPARABLE_KERNEL", kernel);
    std::vector<cfloat> fast(reference.size(), cfloat(NAN, NAN));
    detail::adjoint_sum_f32(t, c, out, period, fast.data());
    const double err = test::relative_error(fast, reference);
    INFO("kernel '" << kernel << "', out " << out.nx() << "x" << out.ny() << "x" << out.nz() << ", period "
                    << period.nx() << "x" << period.ny() << "x" << period.nz() << ", M = " << t.size()
                    << ": rel L2 error " << err);
    CHECK(err <= kFloat32Tolerance);
  }
}

void check_forward_f32(const Trajectory &t, const Grid &grid, std::uint64_t seed) {
  const Image x = test::random_image(grid, seed);
  std::vector<cfloat> reference(t.size());
  detail::forward_sum_f64(t, x, reference.data());
  for (const char *kernel : kKernels) {
    const test::EnvScope scope("MRI_SEPARABLE_KERNEL", kernel);
    std::vector<cfloat> fast(t.size(), cfloat(NAN, NAN));
    detail::forward_sum_f32(t, x, fast.data());
    const double err = test::relative_error(fast, reference);
    INFO("kernel '" << kernel << "', grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz()
                    << ", M = " << t.size() << ": rel L2 error " << err);
    CHECK(err <= kFloat32Tolerance);
  }
}

} // namespace

TEST_CASE("fourier: the float64 operator is adjoint, <F x, y> = <x, F^H y>", "[fourier]") {
  // The float64 path sums in double but its API returns cfloat, so F x and F^H y carry one
  // float rounding each (|delta_i| <= 2^-24 |v_i|); by Cauchy-Schwarz that moves the inner
  // products by at most 2^-24 (||F x|| ||y|| + ||x|| ||F^H y||), while the double sums
  // contribute ~1e-15. So the identity is checked to that rigorous bound (x 1.5), normalised
  // by the same scale; a relative 1e-12 is unobservable through a float-valued API, and
  // re-implementing the double sums here would only test the copy. The float32 path is held
  // to the same identity at its own accuracy (kFloat32Tolerance).
  const Grid grid = GENERATE(Grid(16, 12), Grid(15, 17), Grid(6, 5, 4), Grid(7, 3, 5));
  const auto t = test::random_trajectory(grid, 333, 101 + static_cast<std::uint64_t>(grid.voxels()));
  const Image x = test::random_image(grid, 7);
  const auto y = test::random_complex(t.size(), 8);

  for (const Precision precision : {Precision::Float64, Precision::Float32}) {
    const FourierOperator f(t, grid, {Backend::Cpu, precision});
    const auto fx = mri::forward(f, x);
    const Image fhy = mri::adjoint(f, y);
    const cdouble lhs = test::inner(fx, y);
    const cdouble rhs = test::inner(x.values(), fhy.values());
    const double scale = norm2(fx) * norm2(y) + norm2(x.values()) * norm2(fhy.values());
    const double normalised = std::abs(lhs - rhs) / scale;
    INFO(to_string(precision) << ", grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz()
                              << ": |<Fx,y> - <x,F^H y>| / scale = " << normalised);
    CHECK(normalised <= (precision == Precision::Float64 ? 1.5 * 0x1p-24 : kFloat32Tolerance));
  }
}

TEST_CASE("fourier: float32 adjoint matches the float64 reference", "[fourier]") {
  // 2D and 3D, odd and even extents; M not a multiple of the 256-sample chunk, and M = 1.
  SECTION("2D 32x32, M = 2000") {
    const Grid g(32, 32);
    check_adjoint_f32(test::random_trajectory(g, 2000, 1), g, g, 2);
  }
  SECTION("2D 15x17, M = 2037") {
    const Grid g(15, 17);
    check_adjoint_f32(test::random_trajectory(g, 2037, 3), g, g, 4);
  }
  SECTION("2D 40x2, M = 300 and 1") {
    const Grid g(40, 2);
    check_adjoint_f32(test::random_trajectory(g, 300, 5), g, g, 6);
    check_adjoint_f32(test::random_trajectory(g, 1, 7), g, g, 8);
  }
  SECTION("3D 9x7x5, M = 1111") {
    const Grid g(9, 7, 5);
    check_adjoint_f32(test::random_trajectory(g, 1111, 9), g, g, 10);
  }
  SECTION("3D 8x6x4, M = 700") {
    const Grid g(8, 6, 4);
    check_adjoint_f32(test::random_trajectory(g, 700, 11), g, g, 12);
  }
}

TEST_CASE("fourier: float32 Q sum on the doubled grid matches the float64 reference", "[fourier]") {
  // Q uses out = 2n with period n (coordinates -n..n-1, phases beyond one period).
  SECTION("2D 15x17") {
    const Grid g(15, 17);
    check_adjoint_f32(test::random_trajectory(g, 1500, 13), g.doubled(), g, 14);
  }
  SECTION("3D 9x7x5") {
    const Grid g(9, 7, 5);
    check_adjoint_f32(test::random_trajectory(g, 600, 15), g.doubled(), g, 16);
  }
}

TEST_CASE("fourier: float32 forward matches the float64 reference", "[fourier]") {
  SECTION("2D 32x32, M = 2000") {
    const Grid g(32, 32);
    check_forward_f32(test::random_trajectory(g, 2000, 21), g, 22);
  }
  SECTION("2D 15x17, M = 2037") {
    const Grid g(15, 17);
    check_forward_f32(test::random_trajectory(g, 2037, 23), g, 24);
  }
  SECTION("2D 40x2, M = 1 and 300") {
    const Grid g(40, 2);
    check_forward_f32(test::random_trajectory(g, 1, 25), g, 26);
    check_forward_f32(test::random_trajectory(g, 300, 27), g, 28);
  }
  SECTION("3D 9x7x5, M = 1111") {
    const Grid g(9, 7, 5);
    check_forward_f32(test::random_trajectory(g, 1111, 29), g, 30);
  }
  SECTION("3D 8x6x4, M = 700") {
    const Grid g(8, 6, 4);
    check_forward_f32(test::random_trajectory(g, 700, 31), g, 32);
  }
}

TEST_CASE("fourier: float32 error does not grow with the trajectory length", "[fourier]") {
  // 2^17 samples on an 8x8 grid: a float accumulator over all M would reach
  // ~eps * sqrt(M / 2) ~ 1.5e-5; the chunked float + double accumulation stays ~1e-6.
  const Grid g(8, 8);
  const auto t = test::random_trajectory(g, std::size_t{1} << 17, 41);
  check_adjoint_f32(t, g, g, 42);
  check_forward_f32(t, g, 43);
}

TEST_CASE("fourier: FourierOperator float32 agrees with float64 through the public API", "[fourier]") {
  const Grid g(24, 20);
  const auto t = test::random_trajectory(g, 900, 51);
  const FourierOperator f32(t, g, {Backend::Cpu, Precision::Float32});
  const FourierOperator f64(t, g, {Backend::Cpu, Precision::Float64});
  const auto y = test::random_complex(t.size(), 52);
  const Image x = test::random_image(g, 53);
  CHECK(test::relative_error(mri::adjoint(f32, y), mri::adjoint(f64, y)) <= kFloat32Tolerance);
  CHECK(test::relative_error(mri::forward(f32, x), mri::forward(f64, x)) <= kFloat32Tolerance);
}

TEST_CASE("fourier: FourierOperator rejects bad input", "[fourier][bad-input]") {
  const Grid g(8, 8);
  const auto t = test::random_trajectory(g, 50, 61);
  const FourierOperator f(t, g);

  SECTION("image on a different grid") {
    CHECK_THROWS_AS(mri::forward(f, Image(Grid(8, 9))), InvalidArgument);
    CHECK_THROWS_AS(mri::forward(f, Image(Grid(8, 8, 2))), InvalidArgument);
  }
  SECTION("non-finite image") {
    Image x(g);
    x[5] = cfloat(std::numeric_limits<float>::infinity(), 0);
    CHECK_THROWS_AS(mri::forward(f, x), InvalidArgument);
  }
  SECTION("samples size differs from M") {
    CHECK_THROWS_AS(mri::adjoint(f, std::vector<cfloat>(t.size() + 1)), InvalidArgument);
    CHECK_THROWS_AS(mri::adjoint(f, std::vector<cfloat>(t.size() - 1)), InvalidArgument);
    CHECK_THROWS_AS(mri::adjoint(f, std::vector<cfloat>{}), InvalidArgument);
  }
  SECTION("NaN sample") {
    auto y = test::random_complex(t.size(), 62);
    y[17] = cfloat(1.0f, std::numeric_limits<float>::quiet_NaN());
    CHECK_THROWS_AS(mri::adjoint(f, y), InvalidArgument);
  }
  SECTION("sample beyond 3n/2 at construction (a unit mistake); up to it, periodic images") {
    CHECK_THROWS_WITH(FourierOperator(Trajectory(2, {{0, 0, 0}, {12.01f, 0, 0}}), g),
                      test::contains("trajectory[1]") && test::contains("beyond 3n/2"));
    CHECK_THROWS_AS(FourierOperator(Trajectory(2, {{0, -12.5f, 0}}), g), InvalidArgument);
    CHECK_NOTHROW(FourierOperator(Trajectory(2, {{-12.0f, 12.0f, 0}, {4.0f, -4.0f, 0}}), g));
  }
  SECTION("empty trajectory") {
    CHECK_THROWS_AS(FourierOperator(Trajectory(2, {}), g), InvalidArgument);
  }
  SECTION("trajectory dims differ from the grid's") {
    CHECK_THROWS_AS(FourierOperator(Trajectory(3, {{0, 0, 0.5f}}), g), InvalidArgument);
    CHECK_THROWS_AS(FourierOperator(Trajectory(2, {{0, 0, 0}}), Grid(8, 8, 4)), InvalidArgument);
  }
}

namespace {

// The dense double sum, written out here independently of lib/exact (x fastest, coordinates
// {-n/2 .. n/2-1}).
std::vector<cdouble> dense_forward(const Trajectory &t, const Grid &g, const std::vector<cdouble> &x) {
  std::vector<cdouble> y(t.size());
  for (std::size_t m = 0; m < t.size(); ++m)
    for (std::int64_t v = 0; v < g.voxels(); ++v) {
      const double cx = static_cast<double>(v % g.nx() - g.nx() / 2), cy = static_cast<double>(v / g.nx() - g.ny() / 2);
      const double phase = -2 * std::numbers::pi * (t[m].kx * cx / g.nx() + t[m].ky * cy / g.ny());
      y[m] += x[static_cast<std::size_t>(v)] * std::polar(1.0, phase);
    }
  return y;
}

std::vector<cdouble> random_double(std::size_t n, std::uint64_t seed) {
  const std::vector<cfloat> a = test::random_complex(n, seed), b = test::random_complex(n, seed + 1);
  std::vector<cdouble> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = cdouble(a[i]) + 1e-4 * cdouble(b[i]); // beyond float's 24 bits
  return v;
}

double max_relative(const std::vector<cdouble> &a, const std::vector<cdouble> &b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

} // namespace

// Double in and out: the values are not rounded to float (the inputs carry bits beyond float's
// mantissa), so the only error is double rounding over N terms: about 1e-15 relative; 1e-12
// leaves room and still catches any float step (1e-7).
TEST_CASE("FourierOperator's complex double forms equal the dense double sums and are adjoint",
          "[exact][small]") {
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  const Grid g(10, 7); // odd and even extents
  const Trajectory t = test::random_trajectory(g, 53, seed);
  const FourierOperator f(t, g);
  const std::vector<cdouble> x = random_double(static_cast<std::size_t>(g.voxels()), seed + 2);
  const std::vector<cdouble> y = random_double(t.size(), seed + 4);
  std::vector<cdouble> fx(t.size()), fhy(static_cast<std::size_t>(g.voxels()));
  f.forward(x, fx);
  f.adjoint(y, fhy);
  CHECK(max_relative(fx, dense_forward(f.trajectory(), g, x)) < 1e-12);
  cdouble lhs = 0, rhs = 0;
  for (std::size_t m = 0; m < y.size(); ++m) lhs += fx[m] * std::conj(y[m]);
  for (std::size_t v = 0; v < x.size(); ++v) rhs += x[v] * std::conj(fhy[v]);
  CHECK(std::abs(lhs - rhs) < 1e-12 * std::abs(lhs));
  std::vector<cdouble> short_samples(t.size() - 1), short_image(x.size() - 1);
  CHECK_THROWS_WITH(f.forward(x, short_samples), test::contains("samples.size()"));
  CHECK_THROWS_WITH(f.adjoint(y, short_image), test::contains("image.size()"));
  CHECK_THROWS_AS(f.forward_device(nullptr, nullptr), Unsupported); // the CPU backend has no device forms
}
