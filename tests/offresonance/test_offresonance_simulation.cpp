// The simulation helpers of mri/offresonance.hpp (what examples/spiral_b0 and the off-resonance
// benchmarks make their data with): the field map's range, the readout times, and the simulated
// acquisition against the model written out in float64; the fit cache and the tables made from
// a fit; the device memory estimate's arithmetic (mri_backend/offresonance.hpp).
#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "catch.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/error.hpp"
#include "mri/offresonance.hpp"
#include "mri_backend/offresonance.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;

// y_c(t_m) = sum_x S_c(x) rho(x) exp(-2 pi i (k_m . x / n + f(x) t_m)) in float64, x from the centre.
std::vector<cdouble> model_sum(const Trajectory &t, const Image &rho, const FieldMap &f, const std::vector<float> &times,
                               std::span<const cfloat> map) {
  const Grid &g = rho.grid();
  std::vector<cdouble> y(t.size());
  for (std::size_t m = 0; m < t.size(); ++m)
    for (std::int64_t yy = 0; yy < g.ny(); ++yy)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const auto v = static_cast<std::size_t>(g.index(x, yy));
        const double phase = static_cast<double>(t[m].kx) * static_cast<double>(x - g.nx() / 2) / static_cast<double>(g.nx()) +
                             static_cast<double>(t[m].ky) * static_cast<double>(yy - g.ny() / 2) / static_cast<double>(g.ny()) +
                             static_cast<double>(f.hz()[v]) * static_cast<double>(times[m]);
        y[m] += cdouble(map[v]) * cdouble(rho[v]) * std::polar(1.0, -kTwoPi * phase);
      }
  return y;
}

} // namespace

TEST_CASE("simulated field map, readout times and acquisition follow the model", "[offresonance]") {
  const Grid g(20, 18);
  const FieldMap field = simulated_field_map(g, 150);
  // -0.4 range .. +0.6 range, the extremes reached (float rounding of the Hz values)
  CHECK(std::abs(field.min_hz() + 60) < 1e-4);
  CHECK(std::abs(field.max_hz() - 90) < 1e-4);
  const FieldMap field3 = simulated_field_map(Grid(8, 8, 6), 200);
  CHECK(std::abs(field3.max_hz() - field3.min_hz() - 200) < 1e-4);

  const std::vector<float> times = readout_times(3, 40, 0.012);
  REQUIRE(times.size() == 120);
  CHECK(times[0] == 0.0f);
  CHECK(times[41] == static_cast<float>(0.012 / 40)); // readout 1, sample 1
  CHECK(times[119] == static_cast<float>(0.012 * 39 / 40));

  // Data of a random image with 2 coils against the float64 sum: the helper's model is bound at
  // 1e-7 (segmentation) and 1e-6 (float64 NUFFT), so 1e-5 relative holds with room; the field of
  // 150 Hz over 12 ms turns samples by up to 1.1 cycles, so a model without it would miss by O(1).
  const Trajectory t = traj::spiral(g, 3, 40);
  const Image rho = test::random_image(g, 7);
  const CoilSensitivities maps = SimulatedCoils(2, 2).maps(g);
  const KSpaceData data = simulate_field_acquisition(rho, t, field, times, &maps, 0);
  REQUIRE(data.coils() == 2);
  REQUIRE(data.sample_times() == times);
  for (int c = 0; c < 2; ++c) {
    const std::vector<cdouble> ref = model_sum(t, rho, field, times, maps.map(c));
    const std::span<const cfloat> got(data.samples().data() + static_cast<std::size_t>(c) * t.size(), t.size());
    CHECK(test::relative_error(got, ref) < 1e-5);
  }
  // One coil without maps, with noise at SNR 20: the residual's RMS is the signal's / 20 (+-15%
  // over 120 complex samples).
  const KSpaceData noisy = simulate_field_acquisition(rho, t, field, times, nullptr, 20, 5);
  const std::vector<cfloat> ones(static_cast<std::size_t>(g.voxels()), cfloat(1, 0));
  const std::vector<cdouble> clean = model_sum(t, rho, field, times, ones);
  double noise = 0, signal = 0;
  for (std::size_t m = 0; m < t.size(); ++m) {
    noise += std::norm(cdouble(noisy.samples()[m]) - clean[m]);
    signal += std::norm(clean[m]);
  }
  CHECK(std::abs(std::sqrt(noise / signal) * 20 - 1) < 0.15);

  CHECK_THROWS_AS(simulated_field_map(g, -1), InvalidArgument);
  CHECK_THROWS_AS(readout_times(0, 4, 0.01), InvalidArgument);
  CHECK_THROWS_AS(readout_times(1, 4, 0), InvalidArgument);
  CHECK_THROWS_AS(simulate_field_acquisition(rho, t, simulated_field_map(Grid(8, 8)), times, nullptr, 0), InvalidArgument);
  CHECK_THROWS_AS(simulate_field_acquisition(rho, t, field, times, nullptr, -1), InvalidArgument);
}

TEST_CASE("fit_segmentation is cached and its tables equal segment_field's", "[offresonance]") {
  const Grid g(24, 24);
  const FieldMap field = simulated_field_map(g, 200);
  const std::vector<float> times = readout_times(2, 500, 0.016);
  for (SegmentInterpolator kind : {SegmentInterpolator::LeastSquares, SegmentInterpolator::Hanning}) {
    SegmentationOptions o;
    o.interpolator = kind;
    o.segments = kind == SegmentInterpolator::Hanning ? 6 : 0; // Hanning's automatic L is large (docs)
    const TimeSegmentation full = segment_field(field, times, o);
    const TimeSegmentation fit = fit_segmentation(field, times, o); // the cached entry
    CHECK(fit.segments == full.segments);
    CHECK(fit.error == full.error);
    CHECK(fit.sample_coefficients.empty());
    CHECK(fit.voxel_phases.empty());
    CHECK(fit.projector.size() == (kind == SegmentInterpolator::Hanning ? 0 : fit.fit_hz.size() * fit.segments));
    TimeSegmentation made = fit;
    make_segment_tables(made, field, times);
    CHECK(made.sample_coefficients == full.sample_coefficients);
    CHECK(made.voxel_phases == full.voxel_phases);
    // another tolerance is another key: recomputed, a different L
    if (kind == SegmentInterpolator::LeastSquares) {
      SegmentationOptions tighter = o;
      tighter.tolerance = o.tolerance / 100;
      CHECK(fit_segmentation(field, times, tighter).segments > fit.segments);
    }
  }
  // A uniform field: one segment, b = 1 (the fit's P = 1 at 0 Hz)
  const FieldMap uniform(g, std::vector<float>(static_cast<std::size_t>(g.voxels()), 30.0f));
  TimeSegmentation one = fit_segmentation(uniform, times, {});
  CHECK(one.segments == 1);
  make_segment_tables(one, uniform, times);
  for (std::size_t m = 0; m < times.size(); m += 97)
    CHECK(std::abs(cdouble(one.sample_coefficients[m]) - std::polar(1.0, -kTwoPi * 30.0 * times[m])) < 1e-6);

  TimeSegmentation bare;
  bare.segments = 3;
  bare.centres = {0, 1, 2};
  CHECK_THROWS_AS(make_segment_tables(bare, field, times), InvalidArgument); // least squares without its fit
}

TEST_CASE("device memory estimate of a field-corrected reconstruction adds up its buffers", "[offresonance]") {
  // B0-SPIRAL's sizes: 128^2, M = 16384, 4 coils, L = 8, plans given in bytes.
  detail::FieldDeviceSizes z;
  z.grid = Grid(128, 128);
  z.samples = 16384;
  z.coils = 4;
  z.segments = 8;
  z.toeplitz = true;
  z.toeplitz_bytes = 100 << 20;
  z.nufft_plan = 30 << 20;
  z.q_plan = 70 << 20;
  const std::size_t n = 16384, m = 16384, c8 = 8, L = 8;
  // held: maps + a coil scratch image, the plan, B and E, the adjoint's vectors and images (3 coils
  // x L each), the forward's image and samples
  z.adjoint_coils = 3; // coils per pass of the batched adjoint
  const std::size_t held = 4 * n * c8 + n * c8 + (30 << 20) + (1 + 3) * L * (m + n) * c8 + (n + m) * c8;
  const detail::FieldDeviceBytes b = detail::field_reconstruct_device_bytes(z);
  CHECK(b.fhd == held + 2 * n * c8 + 4 * m * c8);           // rhs, a coil image, every coil's samples
  CHECK(b.q == held + n * c8 + (70 << 20) + (100 << 20));  // rhs, the kernels' plan, the operator
  CHECK(b.cg == held + 7 * n * c8 + (100 << 20));          // 5 + 2 (SENSE) images, the operator
  CHECK(b.peak() == b.q + b.q / 20 + (std::size_t{128} << 20));

  // The direct normal: no Q phase, samples and weights in CG instead of the operator.
  z.toeplitz = false;
  const detail::FieldDeviceBytes d = detail::field_reconstruct_device_bytes(z);
  CHECK(d.q == 0);
  CHECK(d.cg == held + 7 * n * c8 + m * 12);
  // The exact sums: their plan instead of the segmented buffers; one coil without maps.
  z.segments = 0;
  z.coils = 0;
  z.exact_plan = 5 << 20;
  const detail::FieldDeviceBytes e = detail::field_reconstruct_device_bytes(z);
  CHECK(e.fhd == (5 << 20) + n * c8 + m * c8);
  CHECK(e.cg == (5 << 20) + 5 * n * c8 + m * 12);
  // More segments never need less.
  z.segments = 4;
  const std::size_t four = detail::field_reconstruct_device_bytes(z).peak();
  z.segments = 12;
  CHECK(detail::field_reconstruct_device_bytes(z).peak() > four);
}
