// The trajectory generators: sample counts, the [-n/2, n/2) range (including the rotated
// far end of a spoke, the classic way to land on +n/2), geometry and argument checks.
#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/trajectory.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

using namespace mri;

namespace {

constexpr double kPi = std::numbers::pi;

double radius(const KPoint &k) {
  return std::sqrt(double(k.kx) * k.kx + double(k.ky) * k.ky + double(k.kz) * k.kz);
}

// Angle of the line through two points of a spoke, folded into [0, pi).
double line_angle(const KPoint &a, const KPoint &b) {
  const double t = std::atan2(double(b.ky) - a.ky, double(b.kx) - a.kx);
  return std::fmod(t + 2 * kPi, kPi);
}

// Distance between angles on the circle of period `period`.
double angular_distance(double a, double b, double period) {
  const double d = std::fmod(std::abs(a - b), period);
  return std::min(d, period - d);
}

KPoint rotated(const KPoint &k, double angle) {
  const double c = std::cos(angle), s = std::sin(angle);
  return {float(k.kx * c - k.ky * s), float(k.kx * s + k.ky * c), k.kz};
}

bool same_point(const KPoint &a, const KPoint &b, double tol) {
  return std::abs(a.kx - b.kx) <= tol && std::abs(a.ky - b.ky) <= tol &&
         std::abs(a.kz - b.kz) <= tol;
}

} // namespace

TEST_CASE("trajectory: cartesian visits every grid point in voxel order", "[trajectory]") {
  const Grid g2(5, 4);
  const Trajectory t2 = traj::cartesian(g2);
  REQUIRE(t2.dims() == 2);
  REQUIRE(t2.size() == 20);
  CHECK_NOTHROW(t2.check_within(g2));
  CHECK(t2[0].kx == -2.0f);
  CHECK(t2[0].ky == -2.0f);
  CHECK(t2[1].kx == -1.0f); // kx fastest
  CHECK(t2[5].ky == -1.0f);
  CHECK(t2[19].kx == 2.0f);
  CHECK(t2[19].ky == 1.0f);

  const Grid g3(4, 3, 2);
  const Trajectory t3 = traj::cartesian(g3);
  REQUIRE(t3.dims() == 3);
  REQUIRE(t3.size() == 24);
  CHECK_NOTHROW(t3.check_within(g3));
  for (std::int64_t iz = 0; iz < 2; ++iz)
    for (std::int64_t iy = 0; iy < 3; ++iy)
      for (std::int64_t ix = 0; ix < 4; ++ix) {
        const KPoint &k = t3[std::size_t(g3.index(ix, iy, iz))];
        CHECK(k.kx == float(g3.coordinate(0, ix)));
        CHECK(k.ky == float(g3.coordinate(1, iy)));
        CHECK(k.kz == float(g3.coordinate(2, iz)));
      }
}

TEST_CASE("trajectory: uniform radial spokes pass through the centre, symmetric, at pi*s/spokes",
          "[trajectory]") {
  const Grid g(64, 64);
  const int spokes = 16, readout = 64;
  const Trajectory t = traj::radial(g, spokes, readout, traj::SpokeOrder::Uniform);
  REQUIRE(t.dims() == 2);
  REQUIRE(t.size() == std::size_t(spokes * readout));
  CHECK_NOTHROW(t.check_within(g));
  for (int s = 0; s < spokes; ++s) {
    const KPoint *p = &t[std::size_t(s * readout)];
    CHECK(radius(p[readout / 2]) == 0.0);          // DC at sample readout/2
    CHECK(radius(p[0]) == Approx(32.0));           // one end at radius n/2 ...
    CHECK(radius(p[readout - 1]) == Approx(31.0)); // ... the other one step short
    for (int j = 1; j < readout / 2; ++j) {
      // Points symmetric about the centre, spaced n/readout = 1 cycle/FOV.
      CHECK(same_point(p[readout / 2 + j],
                       KPoint{-p[readout / 2 - j].kx, -p[readout / 2 - j].ky, 0}, 1e-5));
      CHECK(radius(p[readout / 2 + j]) == Approx(j).margin(1e-5));
    }
    CHECK(angular_distance(line_angle(p[0], p[readout - 1]), kPi * s / spokes, kPi) < 1e-6);
  }
}

TEST_CASE("trajectory: odd readout keeps DC at readout/2", "[trajectory]") {
  const Grid g(33, 31); // odd extents: [-16.5, 16.5) x [-15.5, 15.5)
  const Trajectory t = traj::radial(g, 7, 33);
  CHECK_NOTHROW(t.check_within(g));
  for (int s = 0; s < 7; ++s)
    CHECK(radius(t[std::size_t(s * 33 + 16)]) == 0.0);
}

TEST_CASE("trajectory: golden-angle spokes advance by 111.246 degrees", "[trajectory]") {
  const Grid g(32, 32);
  const int spokes = 50, readout = 32;
  const Trajectory t = traj::radial(g, spokes, readout, traj::SpokeOrder::GoldenAngle);
  REQUIRE(t.size() == std::size_t(spokes * readout));
  CHECK_NOTHROW(t.check_within(g));
  const double golden = 111.24611797 * kPi / 180;
  for (int s = 0; s < spokes; ++s) {
    const KPoint *p = &t[std::size_t(s * readout)];
    CHECK(radius(p[readout / 2]) == 0.0);
    CHECK(angular_distance(line_angle(p[0], p[readout - 1]), std::fmod(s * golden, kPi), kPi) <
          1e-5);
  }
}

TEST_CASE("trajectory: spokes near 180 degrees never reach +n/2", "[trajectory]") {
  // pi*s/spokes gets within 3e-5 rad of pi; without orienting the spokes the -n/2 sample
  // would land at n/2 * cos(3e-5), which rounds to +n/2 in float.
  for (const Grid &g : {Grid(256, 256), Grid(255, 97), Grid(2, 2)}) {
    CHECK_NOTHROW(traj::radial(g, 100000, 2, traj::SpokeOrder::Uniform).check_within(g));
    CHECK_NOTHROW(traj::radial(g, 100000, 3, traj::SpokeOrder::GoldenAngle).check_within(g));
  }
  const Grid g3(16, 16, 16);
  CHECK_NOTHROW(traj::koosh(g3, 100000, 2).check_within(g3));
  CHECK_NOTHROW(traj::propeller(Grid(64, 64), 1000, 64, 64).check_within(Grid(64, 64)));
}

TEST_CASE("trajectory: spiral interleaves grow monotonically to n/2 and are rotated copies",
          "[trajectory]") {
  const Grid g(64, 64);
  const int interleaves = 4, samples = 512;
  const Trajectory t = traj::spiral(g, interleaves, samples);
  REQUIRE(t.dims() == 2);
  REQUIRE(t.size() == std::size_t(interleaves * samples));
  CHECK_NOTHROW(t.check_within(g));
  for (int i = 0; i < interleaves; ++i) {
    const KPoint *p = &t[std::size_t(i * samples)];
    CHECK(radius(p[0]) == 0.0);
    bool monotone = true;
    for (int j = 1; j < samples; ++j)
      monotone = monotone && radius(p[j]) > radius(p[j - 1]);
    CHECK(monotone);
    CHECK(radius(p[samples - 1]) > 0.99 * 32);
    CHECK(radius(p[samples - 1]) < 32);
    bool rotated_copy = true;
    for (int j = 0; j < samples; ++j)
      rotated_copy = rotated_copy &&
                     same_point(p[j], rotated(t[std::size_t(j)], 2 * kPi * i / interleaves), 1e-3);
    CHECK(rotated_copy);
  }
}

TEST_CASE("trajectory: spiral turn count follows the Nyquist spacing and undersampling",
          "[trajectory]") {
  // Unwrapped angle of interleave 0 = 2 pi * turns * final radius fraction, with
  // turns = n / (2 * interleaves * undersampling): adjacent arms `undersampling` apart.
  const Grid g(64, 64);
  auto total_turns = [&](int interleaves, double undersampling) {
    const int samples = 4096;
    const Trajectory t = traj::spiral(g, interleaves, samples, undersampling);
    double unwrapped = 0, previous = 0;
    for (int j = 1; j < samples; ++j) {
      const double a = std::atan2(t[std::size_t(j)].ky, t[std::size_t(j)].kx);
      if (j > 1)
        unwrapped += std::remainder(a - previous, 2 * kPi);
      previous = a;
    }
    // theta = theta_max * r / (n/2): the angle swept from sample 1 fixes theta_max.
    return unwrapped / (2 * kPi) / ((radius(t[samples - 1]) - radius(t[1])) / 32.0);
  };
  CHECK(total_turns(1, 1.0) == Approx(32.0).epsilon(0.01));
  CHECK(total_turns(4, 1.0) == Approx(8.0).epsilon(0.01));
  CHECK(total_turns(4, 2.0) == Approx(4.0).epsilon(0.02));
}

TEST_CASE("trajectory: propeller blades are Cartesian patches rotated by pi*b/blades",
          "[trajectory]") {
  const Grid g(64, 64);
  const int blades = 8, lines = 16, readout = 64;
  const Trajectory t = traj::propeller(g, blades, lines, readout);
  REQUIRE(t.dims() == 2);
  REQUIRE(t.size() == std::size_t(blades * lines * readout));
  CHECK_NOTHROW(t.check_within(g));
  const std::size_t per_blade = std::size_t(lines * readout);
  // Blade 0: lines parallel to kx at constant ky, samples and lines equally spaced.
  const double dk = t[1].kx - t[0].kx;
  CHECK(dk > 0.9);
  CHECK(dk <= 1.0);
  for (int l = 0; l < lines; ++l)
    for (int j = 0; j < readout; ++j) {
      const KPoint &k = t[std::size_t(l * readout + j)];
      CHECK(k.kx == Approx((j - readout / 2) * dk).margin(1e-4));
      CHECK(k.ky == Approx((l - lines / 2) * dk).margin(1e-4));
    }
  CHECK(radius(t[std::size_t(lines / 2 * readout + readout / 2)]) == 0.0); // centre sampled
  for (int b = 1; b < blades; ++b) {
    bool rotated_copy = true;
    for (std::size_t m = 0; m < per_blade; ++m)
      rotated_copy =
          rotated_copy && same_point(t[b * per_blade + m], rotated(t[m], kPi * b / blades), 1e-4);
    CHECK(rotated_copy);
  }
}

TEST_CASE("trajectory: stack of stars repeats the 2D star on every kz partition", "[trajectory]") {
  const Grid g(32, 24, 8);
  for (auto order : {traj::SpokeOrder::Uniform, traj::SpokeOrder::GoldenAngle}) {
    const Trajectory t = traj::stack_of_stars(g, 10, 32, order);
    REQUIRE(t.dims() == 3);
    REQUIRE(t.size() == std::size_t(8 * 10 * 32));
    CHECK_NOTHROW(t.check_within(g));
    const Trajectory star = traj::radial(Grid(32, 24), 10, 32, order);
    bool matches = true;
    for (std::size_t p = 0; p < 8; ++p)
      for (std::size_t m = 0; m < star.size(); ++m) {
        const KPoint &k = t[p * star.size() + m];
        matches = matches && k.kx == star[m].kx && k.ky == star[m].ky && k.kz == float(int(p) - 4);
      }
    CHECK(matches);
  }
  // Golden angle is the default order.
  const Trajectory d = traj::stack_of_stars(g, 3, 8);
  const Trajectory ga = traj::stack_of_stars(g, 3, 8, traj::SpokeOrder::GoldenAngle);
  CHECK(std::equal(d.points().begin(), d.points().end(), ga.points().begin(),
                   [](const KPoint &a, const KPoint &b) { return same_point(a, b, 0); }));
}

TEST_CASE("trajectory: koosh spokes are unit directions spread evenly over the sphere",
          "[trajectory]") {
  const Grid g(32, 32, 32);
  const int spokes = 400, readout = 32;
  const Trajectory t = traj::koosh(g, spokes, readout);
  REQUIRE(t.dims() == 3);
  REQUIRE(t.size() == std::size_t(spokes * readout));
  CHECK_NOTHROW(t.check_within(g));
  std::vector<std::array<double, 3>> d(spokes);
  double tensor[3][3] = {};
  for (int s = 0; s < spokes; ++s) {
    const KPoint *p = &t[std::size_t(s * readout)];
    CHECK(radius(p[readout / 2]) == 0.0);
    d[std::size_t(s)] = {-p[0].kx / 16.0, -p[0].ky / 16.0,
                         -p[0].kz / 16.0}; // first sample = -d n/2
    const auto &v = d[std::size_t(s)];
    CHECK(std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) == Approx(1.0).margin(1e-6));
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        tensor[a][b] += v[a] * v[b] / spokes;
  }
  // Isotropic orientation tensor: mean d d^T = I/3 for lines uniform on the sphere.
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      CHECK(tensor[a][b] == Approx(a == b ? 1.0 / 3 : 0.0).margin(0.01));
  // No two spokes nearly coincide: the closest pair of lines is a good fraction of the
  // mean spacing sqrt(2 pi / spokes) of points on a hemisphere (0.49 of it measured; the
  // closest pairs straddle the equator, where d and -d meet).
  double closest = kPi;
  for (int i = 0; i < spokes; ++i)
    for (int j = i + 1; j < spokes; ++j) {
      const auto &a = d[std::size_t(i)], &b = d[std::size_t(j)];
      const double c = std::abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
      closest = std::min(closest, std::acos(std::min(1.0, c)));
    }
  CHECK(closest > 0.4 * std::sqrt(2 * kPi / spokes));
  const Grid aniso(32, 20, 12);
  CHECK_NOTHROW(traj::koosh(aniso, 500, 24).check_within(aniso));
}

TEST_CASE("trajectory: uniform random points are reproducible by seed and fill the grid",
          "[trajectory]") {
  const Grid g2(64, 48);
  const Trajectory a = traj::uniform_random(g2, 20000, 42);
  const Trajectory b = traj::uniform_random(g2, 20000, 42);
  const Trajectory c = traj::uniform_random(g2, 20000, 43);
  REQUIRE(a.dims() == 2);
  REQUIRE(a.size() == 20000);
  CHECK_NOTHROW(a.check_within(g2));
  auto identical = [](const Trajectory &x, const Trajectory &y) {
    return std::equal(x.points().begin(), x.points().end(), y.points().begin(),
                      [](const KPoint &p, const KPoint &q) { return same_point(p, q, 0); });
  };
  CHECK(identical(a, b));
  CHECK_FALSE(identical(a, c));
  // Uniform: each quadrant holds a quarter (binomial std ~0.3%), the extremes approach +-n/2.
  int quadrant[4] = {};
  float lo = 0, hi = 0;
  for (const KPoint &k : a.points()) {
    ++quadrant[(k.kx >= 0) + 2 * (k.ky >= 0)];
    CHECK(k.kz == 0.0f);
    lo = std::min(lo, k.kx);
    hi = std::max(hi, k.kx);
  }
  for (int q : quadrant)
    CHECK(q / 20000.0 == Approx(0.25).margin(0.015));
  CHECK(lo < -31.9f);
  CHECK(hi > 31.9f);

  const Grid g3(16, 16, 8);
  const Trajectory t3 = traj::uniform_random(g3, 5000, 1);
  REQUIRE(t3.dims() == 3);
  CHECK_NOTHROW(t3.check_within(g3));
  const float kz_max =
      std::max_element(t3.points().begin(), t3.points().end(),
                       [](const KPoint &p, const KPoint &q) { return p.kz < q.kz; })
          ->kz;
  CHECK(kz_max > 3.9f);
}

TEST_CASE("trajectory: generators reject non-positive counts and the wrong grid",
          "[trajectory][bad-input]") {
  const Grid g2(32, 32), g3(16, 16, 16);
  CHECK_THROWS_WITH(traj::radial(g2, 0, 32), test::contains("spokes = 0"));
  CHECK_THROWS_WITH(traj::radial(g2, 8, -4), test::contains("readout = -4"));
  CHECK_THROWS_WITH(traj::radial(g3, 8, 32), test::contains("grid.dims() = 3"));
  CHECK_THROWS_WITH(traj::spiral(g2, 0, 100), test::contains("interleaves = 0"));
  CHECK_THROWS_WITH(traj::spiral(g2, 2, 0), test::contains("samples_per_interleave = 0"));
  CHECK_THROWS_WITH(traj::spiral(g2, 2, 100, 0.0), test::contains("undersampling = 0"));
  CHECK_THROWS_AS(traj::spiral(g2, 2, 100, -1.0), InvalidArgument);
  CHECK_THROWS_AS(traj::spiral(g2, 2, 100, std::numeric_limits<double>::quiet_NaN()),
                  InvalidArgument);
  CHECK_THROWS_AS(traj::spiral(g2, 2, 100, std::numeric_limits<double>::infinity()),
                  InvalidArgument);
  CHECK_THROWS_AS(traj::spiral(g3, 2, 100), InvalidArgument);
  CHECK_THROWS_WITH(traj::propeller(g2, 0, 8, 32), test::contains("blades = 0"));
  CHECK_THROWS_WITH(traj::propeller(g2, 4, -1, 32), test::contains("lines_per_blade = -1"));
  CHECK_THROWS_WITH(traj::propeller(g2, 4, 8, 0), test::contains("readout = 0"));
  CHECK_THROWS_AS(traj::propeller(g3, 4, 8, 16), InvalidArgument);
  CHECK_THROWS_WITH(traj::stack_of_stars(g2, 8, 32), test::contains("grid.dims() = 2"));
  CHECK_THROWS_WITH(traj::stack_of_stars(g3, -2, 16), test::contains("spokes = -2"));
  CHECK_THROWS_WITH(traj::stack_of_stars(g3, 2, 0), test::contains("readout = 0"));
  CHECK_THROWS_WITH(traj::koosh(g2, 8, 32), test::contains("grid.dims() = 2"));
  CHECK_THROWS_WITH(traj::koosh(g3, 0, 16), test::contains("spokes = 0"));
  CHECK_THROWS_WITH(traj::koosh(g3, 8, 0), test::contains("readout = 0"));
  CHECK_THROWS_WITH(traj::uniform_random(g2, 0, 1), test::contains("m = 0"));
}
