// Field maps from two echoes (estimate_field_map): the model's sign, accuracy inside the object
// with noise, the background filled, and the map's use in a reconstruction.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>
#include <random>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/offresonance.hpp"
#include "mri/phantom.hpp"

using namespace mri;

namespace {

std::vector<float> smooth_field(const Grid &g, double range) {
  std::vector<float> f(static_cast<std::size_t>(g.voxels()));
  for (std::int64_t y = 0; y < g.ny(); ++y)
    for (std::int64_t x = 0; x < g.nx(); ++x) {
      const double u = static_cast<double>(x) / g.nx() - 0.5, v = static_cast<double>(y) / g.ny() - 0.5;
      f[static_cast<std::size_t>(g.index(x, y))] = static_cast<float>(range * (std::exp(-8 * (u * u + v * v)) + 0.3 * u) - 0.4 * range);
    }
  return f;
}

} // namespace

TEST_CASE("field map from two echoes: the model's sign, exact without noise, smoothing against noise", "[offresonance]") {
  const Grid g(48, 48);
  const Image rho = Phantom::shepp_logan_2d().rasterize(g);
  const auto truth = smooth_field(g, 200);
  const double delta_te = 2.0e-3; // unambiguous for |f| < 250 Hz
  // echo at TE: rho exp(-2 pi i f TE) (the model's sign), TE1 = 1 ms; noise of sigma at each echo.
  const auto echoes = [&](float sigma) {
    std::mt19937_64 rng(5);
    std::normal_distribution<float> noise(0, sigma);
    std::pair<Image, Image> e{Image(g), Image(g)};
    for (std::size_t i = 0; i < rho.size(); ++i) {
      const double w = -2 * std::numbers::pi * truth[i];
      e.first[i] = cfloat(cdouble(rho[i]) * std::polar(1.0, w * 1e-3)) + cfloat(noise(rng), noise(rng));
      e.second[i] = cfloat(cdouble(rho[i]) * std::polar(1.0, w * (1e-3 + delta_te))) + cfloat(noise(rng), noise(rng));
    }
    return e;
  };
  float peak = 0;
  for (const cfloat v : rho.values()) peak = std::max(peak, std::abs(v));
  // RMS error (Hz) over the object (|rho| above 0.1 of its peak).
  const auto rms = [&](const FieldMap &f) {
    double sum = 0;
    std::size_t count = 0;
    for (std::size_t i = 0; i < rho.size(); ++i)
      if (std::abs(rho[i]) > 0.1f * peak) {
        sum += (f.hz()[i] - truth[i]) * (f.hz()[i] - truth[i]);
        ++count;
      }
    return std::sqrt(sum / static_cast<double>(count));
  };
  // Without noise and smoothing the angle is the field (float rounding of the phases: 0.05 Hz).
  const auto clean = echoes(0);
  CHECK(rms(estimate_field_map(clean.first, clean.second, delta_te, {0.1, 0})) < 0.05);
  // Noise of 1 % of the peak: in the phantom's 0.2-intensity regions the phase difference has
  // ~0.07 rad of noise, 5.6 Hz at delta_te = 2 ms; the 3x3 box averages it down (to ~2 Hz, plus the
  // magnitude weighting's bias at intensity edges): within 4 Hz RMS, and better than no smoothing.
  const auto noisy = echoes(0.01f);
  const FieldMap f = estimate_field_map(noisy.first, noisy.second, delta_te);
  const double smoothed = rms(f), raw = rms(estimate_field_map(noisy.first, noisy.second, delta_te, {0.1, 0}));
  CAPTURE(smoothed, raw);
  CHECK(smoothed < 4.0);
  CHECK(smoothed < raw);
  // The background (air) is filled from the nearest signal: finite and within the field's range.
  const auto outside = std::count_if(f.hz().begin(), f.hz().end(),
                                     [](float v) { return !std::isfinite(v) || v < -0.4f * 200 - 5 || v > 0.7f * 200 + 5; });
  CHECK(outside == 0);
}

TEST_CASE("field map from two echoes refuses bad input", "[offresonance][bad-input]") {
  const Grid g(8, 8);
  Image a(g), b(g);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = b[i] = cfloat(1.0f, 0.5f);
  using mri::test::contains; // Catch2 v2 and v3 (catch.hpp)
  CHECK_THROWS_WITH(estimate_field_map(a, Image(Grid(8, 4)), 1e-3), contains("echo2.grid().voxels() = 32"));
  CHECK_THROWS_WITH(estimate_field_map(a, b, 0), contains("delta_te = 0"));
  CHECK_THROWS_WITH(estimate_field_map(a, b, 1e-3, {1.5, 1}), contains("options.mask = 1.5"));
  CHECK_THROWS_WITH(estimate_field_map(Image(g), b, 1e-3), contains("no voxel above the mask"));
  b[3] = cfloat(NAN, 0);
  CHECK_THROWS_WITH(estimate_field_map(a, b, 1e-3), contains("echo2[3]"));
}
