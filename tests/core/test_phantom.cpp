// Shepp-Logan phantoms: the closed-form k-space against the exact DFT of the rasterised
// phantom (sign and scale of the convention), the integral at k = 0, voxel values, noise.
#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/phantom.hpp"
#include "mri/trajectory.hpp"
#include "mri_backend/direct_sums.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

using namespace mri;

namespace {

constexpr double kPi = std::numbers::pi;

// The continuous integral of the phantom in normalised units: sum of intensity * area
// (pi a b) or * volume (4/3 pi a b c).
double normalised_integral(const Phantom &p) {
  double sum = 0;
  for (const Ellipsoid &e : p.shapes())
    sum += p.dims() == 2 ? e.intensity * kPi * e.a * e.b
                         : e.intensity * 4.0 / 3.0 * kPi * e.a * e.b * e.c;
  return sum;
}

// Exact (double) unnormalised DFT of an image at the trajectory: the forward operator.
std::vector<cfloat> exact_dft(const Trajectory &t, const Image &image) {
  std::vector<cfloat> out(t.size());
  detail::forward_sum_f64(t, image, out.data());
  return out;
}

double max_abs_difference(const std::vector<cfloat> &a, const std::vector<cfloat> &b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(cdouble(a[i]) - cdouble(b[i])));
  return worst;
}

std::vector<cfloat> conjugated(std::vector<cfloat> v) {
  for (cfloat &c : v)
    c = std::conj(c);
  return v;
}

// A few low frequencies (cycles/FOV) in every direction, including ones where the phantom's
// asymmetry gives large imaginary parts, so a sign error cannot hide.
const std::vector<KPoint> kLowFrequencies2d{{0, 0, 0},  {1, 0, 0},  {0, 1, 0}, {-2, 3, 0},
                                            {3, -1, 0}, {0, -4, 0}, {4, 4, 0}};
const std::vector<KPoint> kLowFrequencies3d{{0, 0, 0}, {1, 0, 0},  {0, -1, 0}, {0, 0, 1},
                                            {1, 1, 0}, {2, -1, 3}, {-3, 2, 1}};

} // namespace

TEST_CASE("phantom: 2D closed-form k-space matches the DFT of a finely rasterised phantom",
          "[phantom]") {
  const Phantom p = Phantom::shepp_logan_2d();
  REQUIRE(p.dims() == 2);
  REQUIRE(p.shapes().size() == 10);
  const Trajectory t(2, kLowFrequencies2d);
  const Grid coarse(32, 32), fine(256, 256); // the same FOV, voxels 8x smaller
  const std::vector<cfloat> analytic = p.kspace(t, fine);
  const std::vector<cfloat> dft = exact_dft(t, p.rasterize(fine, 4));

  // Scale: S(k) is in voxel units, so a grid 8x finer sees 8^2 times the value.
  const std::vector<cfloat> analytic_coarse = p.kspace(t, coarse);
  for (std::size_t m = 0; m < t.size(); ++m)
    CHECK(std::abs(cdouble(analytic[m]) - 64.0 * cdouble(analytic_coarse[m])) <=
          1e-6 * std::abs(analytic[0]));

  // Tolerance, relative to S(0): the rasterised phantom differs from the continuous one in
  // the boundary voxels only (partial volume estimated from 4x4 points, errors of either
  // sign that largely cancel in the sum) and by the voxel-average blur, an attenuation
  // sinc^2(k/n) >= 1 - 1e-4 at these k. Measured: at most 2.4e-4; 1e-3 leaves 4x margin.
  // A wrong sign shows up as the conjugate, 0.157 away at k = (0, 1): 150x the tolerance.
  const double s0 = std::abs(analytic[0]);
  const double tol = 1e-3 * s0;
  CHECK(max_abs_difference(analytic, dft) <= tol);
  CHECK(max_abs_difference(conjugated(analytic), dft) > 50 * tol); // the test sees the sign

  // On the coarse grid itself (what simulations use) the same agreement, looser: partial
  // volume and aliasing of 32^2 voxels. Measured 6.7e-3 of S(0); tolerance 2e-2.
  const std::vector<cfloat> dft_coarse = exact_dft(t, p.rasterize(coarse, 8));
  CHECK(max_abs_difference(analytic_coarse, dft_coarse) <= 0.02 * std::abs(analytic_coarse[0]));
}

TEST_CASE("phantom: 3D closed-form k-space matches the DFT of a finely rasterised phantom",
          "[phantom]") {
  const Phantom p = Phantom::shepp_logan_3d();
  REQUIRE(p.dims() == 3);
  REQUIRE(p.shapes().size() == 10);
  const Trajectory t(3, kLowFrequencies3d);
  const Grid coarse(12, 12, 12), fine(96, 96, 96);
  const std::vector<cfloat> analytic = p.kspace(t, fine);
  const std::vector<cfloat> dft = exact_dft(t, p.rasterize(fine, 2));

  const std::vector<cfloat> analytic_coarse = p.kspace(t, coarse);
  for (std::size_t m = 0; m < t.size(); ++m)
    CHECK(std::abs(cdouble(analytic[m]) - 512.0 * cdouble(analytic_coarse[m])) <=
          1e-6 * std::abs(analytic[0]));

  // Tolerance, relative to S(0), as in 2D (partial volume from 2^3 points per voxel, blur
  // >= 1 - 2e-4): measured at most 2.1e-4; 6e-4 leaves 3x margin. The 3D head is nearly
  // symmetric, so its imaginary parts are small (<= 0.7% of S(0)); still, the conjugate is
  // 1.3e-2 away at k = (1, 1, 0), 20x the tolerance, so a sign error cannot pass.
  const double s0 = std::abs(analytic[0]);
  const double tol = 6e-4 * s0;
  CHECK(max_abs_difference(analytic, dft) <= tol);
  CHECK(max_abs_difference(conjugated(analytic), dft) > 10 * tol); // the test sees the sign
}

TEST_CASE("phantom: k = 0 is the integral of the phantom", "[phantom]") {
  const Trajectory dc2(2, {{0, 0, 0}});
  const Phantom p2 = Phantom::shepp_logan_2d();
  const Grid g2(128, 96);
  const double integral2 = normalised_integral(p2) * (128 / 2.0) * (96 / 2.0); // voxel units
  const cfloat s2 = p2.kspace(dc2, g2)[0];
  CHECK(s2.real() == Approx(integral2).epsilon(1e-6));
  CHECK(s2.imag() == Approx(0.0).margin(1e-6 * integral2));
  double pixel_sum = 0;
  const Image raster2 = p2.rasterize(g2, 4); // named: a range-for over a temporary's member dangles
  for (const cfloat &v : raster2.values())
    pixel_sum += v.real();
  CHECK(pixel_sum == Approx(integral2).epsilon(2e-3));

  const Trajectory dc3(3, {{0, 0, 0}});
  const Phantom p3 = Phantom::shepp_logan_3d();
  const Grid g3(32, 32, 24);
  const double integral3 = normalised_integral(p3) * 16.0 * 16.0 * 12.0;
  const cfloat s3 = p3.kspace(dc3, g3)[0];
  CHECK(s3.real() == Approx(integral3).epsilon(1e-6));
  CHECK(s3.imag() == Approx(0.0).margin(1e-6 * integral3));
  double voxel_sum = 0;
  const Image raster3 = p3.rasterize(g3, 3);
  for (const cfloat &v : raster3.values())
    voxel_sum += v.real();
  CHECK(voxel_sum == Approx(integral3).epsilon(1e-2));
}

TEST_CASE("phantom: rasterised values and orientation", "[phantom]") {
  // Index iy grows with +y (u = 2x/n); a shape is rotated counter-clockwise by phi.
  const Image img = Phantom::shepp_logan_2d().rasterize(Grid(256, 256), 4);
  auto at = [&](double u, double v) { // value at normalised (u, v), nearest voxel
    return img
        .at(std::int64_t(std::lround(u * 128)) + 128, std::int64_t(std::lround(v * 128)) + 128)
        .real();
  };
  CHECK(at(0, 0) == Approx(0.2).margin(1e-6));    // 1 - 0.8
  CHECK(at(0, 0.35) == Approx(0.3).margin(1e-6)); // + ellipse 5 at y = +0.35
  CHECK(at(0.22, 0) == Approx(0.0).margin(1e-6)); // dark ellipse 3
  CHECK(at(-0.95, -0.95) == 0.0f);                // outside the head
  CHECK(at(0, 0.9) == Approx(1.0).margin(1e-6));  // the skull (1.0 - nothing)
  // Ellipse 3 (phi = -18 deg, long axis b = 0.31 along y): its axis tilts to +x as y grows.
  const double s = std::sin(18 * kPi / 180), c = std::cos(18 * kPi / 180);
  // Below its centre the axis therefore leans to -x.
  CHECK(at(0.22 - 0.25 * s, -0.25 * c) == Approx(0.0).margin(1e-6));
  CHECK(at(0.22 + 0.25 * s, -0.25 * c) == Approx(0.2).margin(1e-6)); // mirror point: outside
  for (const cfloat &v : img.values())
    REQUIRE(v.imag() == 0.0f);

  const Image vol = Phantom::shepp_logan_3d().rasterize(Grid(32, 32, 32), 2);
  CHECK(vol.at(16, 16, 16).real() == Approx(1.2).margin(1e-6)); // 2 - 0.8
  CHECK(vol.at(0, 0, 0).real() == 0.0f);
}

TEST_CASE("phantom: rasterisation equals the plain supersampled point average", "[phantom]") {
  // The library skips sub-sampling for cells wholly inside or outside a shape and visits
  // only each shape's bounding box; the definition is the plain average below.
  auto reference = [](const Phantom &p, const Grid &g, int ss) {
    std::vector<double> out(std::size_t(g.voxels()), 0.0);
    const int ssz = p.dims() == 3 ? ss : 1;
    for (std::int64_t v = 0; v < g.voxels(); ++v) {
      const std::int64_t i[3] = {v % g.nx(), (v / g.nx()) % g.ny(), v / (g.nx() * g.ny())};
      for (int sz = 0; sz < ssz; ++sz)
        for (int sy = 0; sy < ss; ++sy)
          for (int sx = 0; sx < ss; ++sx) {
            const int s[3] = {sx, sy, sz};
            double u[3] = {0, 0, 0};
            for (int a = 0; a < p.dims(); ++a)
              u[a] = (g.coordinate(a, i[a]) + (s[a] + 0.5) / ss - 0.5) * 2.0 / double(g.extent(a));
            for (const Ellipsoid &e : p.shapes()) {
              const double phi = e.phi_deg * kPi / 180, dx = u[0] - e.x0, dy = u[1] - e.y0;
              const double xr = dx * std::cos(phi) + dy * std::sin(phi);
              const double yr = -dx * std::sin(phi) + dy * std::cos(phi);
              double q = (xr / e.a) * (xr / e.a) + (yr / e.b) * (yr / e.b);
              if (p.dims() == 3)
                q += ((u[2] - e.z0) / e.c) * ((u[2] - e.z0) / e.c);
              if (q <= 1)
                out[std::size_t(v)] += e.intensity / (double(ss) * ss * ssz);
            }
          }
    }
    return out;
  };
  const Phantom p2 = Phantom::shepp_logan_2d(), p3 = Phantom::shepp_logan_3d();
  const Grid g2(40, 37), g3(14, 12, 11);
  const Image r2 = p2.rasterize(g2, 3), r3 = p3.rasterize(g3, 2);
  const std::vector<double> e2 = reference(p2, g2, 3), e3 = reference(p3, g3, 2);
  double worst = 0;
  for (std::size_t v = 0; v < e2.size(); ++v)
    worst = std::max(worst, std::abs(r2[v].real() - e2[v]));
  for (std::size_t v = 0; v < e3.size(); ++v)
    worst = std::max(worst, std::abs(r3[v].real() - e3[v]));
  CHECK(worst < 1e-6); // float storage of the same sums
}

TEST_CASE("phantom: noise has the requested SNR and is reproducible by seed", "[phantom]") {
  const Grid g(128, 128);
  const Trajectory t = traj::spiral(g, 8, 4096);
  const std::vector<cfloat> clean = Phantom::shepp_logan_2d().kspace(t, g);
  double signal_power = 0;
  for (const cfloat &v : clean)
    signal_power += std::norm(cdouble(v));
  signal_power /= double(clean.size());

  for (double snr : {5.0, 40.0}) {
    std::vector<cfloat> noisy = clean;
    add_noise(noisy, snr, 123);
    double noise_power = 0, real_power = 0;
    cdouble mean = 0;
    for (std::size_t m = 0; m < clean.size(); ++m) {
      const cdouble n = cdouble(noisy[m]) - cdouble(clean[m]);
      noise_power += std::norm(n);
      real_power += n.real() * n.real();
      mean += n;
    }
    const double count = double(clean.size());
    // M = 32768 samples: the noise power estimate has relative std sqrt(1/M) ~ 0.6%.
    CHECK(std::sqrt(signal_power / (noise_power / count)) == Approx(snr).epsilon(0.02));
    CHECK(real_power / noise_power == Approx(0.5).margin(0.01)); // split evenly re/im
    CHECK(std::abs(mean / count) < 0.02 * std::sqrt(noise_power / count));
  }

  std::vector<cfloat> a = clean, b = clean, c = clean;
  add_noise(a, 10.0, 7);
  add_noise(b, 10.0, 7);
  add_noise(c, 10.0, 8);
  CHECK(a == b);
  CHECK(a != c);
  std::vector<cfloat> empty;
  CHECK_NOTHROW(add_noise(empty, 10.0, 1));
}

TEST_CASE("phantom: mismatched dims, bad supersampling and bad SNR are rejected",
          "[phantom][bad-input]") {
  const Phantom p2 = Phantom::shepp_logan_2d(), p3 = Phantom::shepp_logan_3d();
  const Grid g2(16, 16), g3(8, 8, 8);
  CHECK_THROWS_WITH(p2.rasterize(g3), test::contains("grid.dims() = 3"));
  CHECK_THROWS_AS(p3.rasterize(g2), InvalidArgument);
  CHECK_THROWS_WITH(p2.rasterize(g2, 0), test::contains("supersample = 0"));
  CHECK_THROWS_AS(p3.rasterize(g3, -1), InvalidArgument);
  const Trajectory t2(2, {{0, 0, 0}}), t3(3, {{0, 0, 0}});
  CHECK_THROWS_WITH(p2.kspace(t3, g2), test::contains("trajectory.dims() = 3"));
  CHECK_THROWS_WITH(p2.kspace(t2, g3), test::contains("grid.dims() = 3"));
  CHECK_THROWS_AS(p3.kspace(t2, g2), InvalidArgument);
  std::vector<cfloat> s(4, cfloat(1, 0));
  CHECK_THROWS_WITH(add_noise(s, 0.0, 1), test::contains("snr = 0"));
  CHECK_THROWS_AS(add_noise(s, -3.0, 1), InvalidArgument);
  CHECK_THROWS_AS(add_noise(s, std::numeric_limits<double>::quiet_NaN(), 1), InvalidArgument);
  CHECK_THROWS_AS(add_noise(s, std::numeric_limits<double>::infinity(), 1), InvalidArgument);
  CHECK(s == std::vector<cfloat>(4, cfloat(1, 0))); // untouched on error
  s[2] = {std::numeric_limits<float>::quiet_NaN(), 0};
  CHECK_THROWS_WITH(add_noise(s, 10.0, 1), test::contains("samples must be finite"));
}
