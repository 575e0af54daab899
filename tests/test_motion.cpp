// Motion estimation (issue 12, seed 004) on the CPU: the stages against float64 and analytic
// references, the estimator on synthetic sequences with known motion, and bad input.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "catch.hpp"
#include "../lib/motion/cpu_stages.hpp"
#include "mri/error.hpp"
#include "mri/motion.hpp"

using namespace mri;
namespace dm = mri::detail::motion;

namespace {

std::uint64_t fresh_seed() { return std::random_device{}(); }

template <class T> dm::Volume<T> to_volume(const RealVolume &f) {
  dm::Volume<T> v(f.grid());
  std::copy(f.values().begin(), f.values().end(), v.v.begin());
  return v;
}
template <class T> dm::Field<T> to_field(const DisplacementField &w) {
  return {to_volume<T>(w.u), to_volume<T>(w.v), to_volume<T>(w.w)};
}

double max_abs_diff(const std::vector<float> &a, const std::vector<double> &b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

// A random smooth field of peak `amplitude` voxels (random plane waves per component).
DisplacementField random_field(const Grid &g, double amplitude, std::uint64_t seed) {
  DisplacementField w(g);
  w.u = textured_volume(g, seed), w.v = textured_volume(g, seed + 1), w.w = textured_volume(g, seed + 2);
  for (RealVolume *c : {&w.u, &w.v, &w.w})
    for (float &x : c->values()) x = float(amplitude * (2 * x - 1));
  return w;
}

double mean_magnitude(const DisplacementField &w) { return average_endpoint_error(w, DisplacementField(w.grid())); }

MotionOptions test_options() {
  MotionOptions o;
  o.iterations = 20;
  return o;
}

} // namespace

TEST_CASE("motion: Gaussian taps are normalised, 3 std wide, at most 15", "[motion]") {
  const auto taps = dm::gaussian_taps(7.0 / 3.0, "options.rho");
  CHECK(taps.size() == 15);
  double sum = 0;
  for (double t : taps) sum += t;
  CHECK(sum == Approx(1.0).epsilon(1e-12));
  CHECK(taps[7] > taps[6]);
  CHECK(taps[6] == Approx(taps[8]));
  CHECK(dm::gaussian_taps(0.0, "options.sigma").size() == 1);
  CHECK_THROWS_WITH(dm::gaussian_taps(2.4, "options.rho"), Catch::Contains("options.rho = 2.4") && Catch::Contains("15"));
}

TEST_CASE("motion: gradients, warping and smoothing in float32 match float64", "[motion]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid g(29, 24, 26);
  RealVolume f = textured_volume(g, seed);
  add_noise(f, 0.05, seed + 9);
  const DisplacementField w = random_field(g, 3.0, seed + 3);
  for (MotionDerivative d : {MotionDerivative::Forward, MotionDerivative::Central}) {
    dm::Field<float> gf{dm::Volume<float>(g), dm::Volume<float>(g), dm::Volume<float>(g)};
    dm::Field<double> gd{dm::Volume<double>(g), dm::Volume<double>(g), dm::Volume<double>(g)};
    dm::gradients(to_volume<float>(f), gf, d);
    dm::gradients(to_volume<double>(f), gd, d);
    // One float subtraction of values <= ~1.2: the rounding of the inputs and the result, ~2^-23.
    for (int a = 0; a < 3; ++a) CHECK(max_abs_diff(gf[a].v, gd[a].v) < 4e-7);
  }
  dm::Volume<float> of(g);
  dm::Volume<double> od(g);
  dm::warp(to_volume<float>(f), to_field<float>(w), of);
  dm::warp(to_volume<double>(f), to_field<double>(w), od);
  // Positions x + w up to ~32 carry float rounding ~2^-24 * 32 = 2e-6 voxels, times |grad f| <~ 1,
  // plus ~4 float roundings of the 7 lerps: < 1e-5 with room to spare.
  CHECK(max_abs_diff(of.v, od.v) < 1e-5);
  dm::Volume<float> sf = to_volume<float>(f), tf(g);
  dm::Volume<double> sd = to_volume<double>(f), td(g);
  const auto taps = dm::gaussian_taps(2.0, "rho");
  dm::gaussian(sf, tf, taps);
  dm::gaussian(sd, td, taps);
  // 3 passes of 13 taps, float accumulation of values <= ~1.2: ~40 roundings of 6e-8.
  CHECK(max_abs_diff(sf.v, sd.v) < 3e-6);
}

TEST_CASE("motion: trilinear warping reproduces a linear function exactly", "[motion]") {
  // Trilinear interpolation is exact for affine intensities: an analytic reference, not a twin.
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid g(24, 27, 25);
  RealVolume f(g);
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) f.at(x, y, z) = float(0.3 * x - 0.2 * y + 0.15 * z + 1.0);
  DisplacementField w = random_field(g, 2.0, seed);
  const RealVolume out = warp(f, w);
  double worst = 0;
  for (std::int64_t z = 3; z < g.nz() - 3; ++z) // 2-voxel motion stays inside away from the border
    for (std::int64_t y = 3; y < g.ny() - 3; ++y)
      for (std::int64_t x = 3; x < g.nx() - 3; ++x) {
        const double X = x + w.u.at(x, y, z), Y = y + w.v.at(x, y, z), Z = z + w.w.at(x, y, z);
        worst = std::max(worst, std::abs(out.at(x, y, z) - (0.3 * X - 0.2 * Y + 0.15 * Z + 1.0)));
      }
  CHECK(worst < 2e-5); // float positions and lerps on values ~10
}

TEST_CASE("motion: pyramid grids halve rounding up (odd and non-power-of-two)", "[motion]") {
  const auto grids = dm::pyramid_grids(Grid(27, 33, 25), 3);
  REQUIRE(grids.size() == 3);
  CHECK(grids[1] == Grid(14, 17, 13));
  CHECK(grids[2] == Grid(7, 9, 7));
}

TEST_CASE("motion: a constant sequence gives zero flow", "[motion]") {
  const Grid g(24, 24, 24);
  const RealVolume frame = textured_volume(g, fresh_seed());
  const std::vector<RealVolume> frames(3, frame);
  MotionEstimator est(g, test_options());
  const auto fields = est.estimate_sequence(frames);
  REQUIRE(fields.size() == 2);
  for (const auto &w : fields) CHECK(mean_magnitude(w) == 0.0); // It = 0 and w0 = 0: r = 0 exactly
  CHECK(est.report().solver_sweeps > 0);
}

TEST_CASE("motion: metrics on known fields", "[motion]") {
  const Grid g(12, 10, 8);
  DisplacementField a(g), zero(g);
  for (float &x : a.u.values()) x = 1.0f;
  CHECK(average_endpoint_error(a, zero) == Approx(1.0));
  CHECK(average_angular_error(a, zero) == Approx(45.0)); // (1,0,0,1) vs (0,0,0,1)
  const JacobianStats rigid = jacobian_stats(synthetic_field(Grid(32, 32, 32), SyntheticMotion::Rotation, 2.0));
  CHECK(rigid.fraction_nonpositive == 0.0);
  CHECK(rigid.std_log_det < 1e-3); // a rotation keeps volume: det = cos^2 + sin^2 at every voxel
  const JacobianStats squeeze = jacobian_stats(synthetic_field(Grid(32, 32, 32), SyntheticMotion::Compressive, 1.5));
  CHECK(squeeze.mean_det < 0.99);
  CHECK(squeeze.std_log_det > 0.02);
}
