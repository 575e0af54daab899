// mri::reconstruct with a field map (issue 43): on a simulated spiral with a field of 200 Hz over a
// 16 ms readout, the corrected reconstructions (time-segmented, exact) are far closer to the truth
// than the uncorrected one and close to each other; SENSE and a sparse solver run through it;
// a zero map equals the uncorrected reconstruction bitwise; bad input is refused.
#include <cmath>
#include <memory>
#include <vector>

#include "catch.hpp"
#include "mri/batch.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/error.hpp"
#include "mri/metrics.hpp"
#include "mri/offresonance.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

struct Problem {
  Grid grid;
  Image truth;
  std::shared_ptr<const FieldMap> field;
  KSpaceData data;
  std::shared_ptr<const CoilSensitivities> maps;
};

// A smooth field spanning `range` Hz (a bump on a ramp, as near air-tissue boundaries).
std::vector<float> smooth_field(const Grid &g, double range) {
  std::vector<float> f(static_cast<std::size_t>(g.voxels()));
  for (std::int64_t y = 0; y < g.ny(); ++y)
    for (std::int64_t x = 0; x < g.nx(); ++x) {
      const double u = static_cast<double>(x) / g.nx() - 0.5, v = static_cast<double>(y) / g.ny() - 0.5;
      f[static_cast<std::size_t>(g.index(x, y))] = static_cast<float>(range * (0.6 * std::exp(-10 * (u * u + v * v)) + 0.4 * (u + 0.5)) - 0.4 * range);
    }
  return f;
}

// Data of the phantom through the exact field model per coil (float64 sums), spiral of 4
// interleaves x `per` samples over 16 ms.
Problem simulate(int n, int coils, int per) {
  Problem p{Grid(n, n), {}, {}, {}, {}};
  p.truth = Phantom::shepp_logan_2d().rasterize(p.grid);
  p.field = std::make_shared<const FieldMap>(p.grid, smooth_field(p.grid, 200));
  const Trajectory t = traj::spiral(p.grid, 4, per);
  std::vector<float> times;
  for (int i = 0; i < 4; ++i)
    for (int s = 0; s < per; ++s) times.push_back(0.016f * static_cast<float>(s) / static_cast<float>(per));
  const FieldFourierOperator a(t, p.grid, p.field, times, {Backend::Cpu, Precision::Float64});
  p.maps = std::make_shared<const CoilSensitivities>(SimulatedCoils(2, coils).maps(p.grid));
  std::vector<cfloat> y;
  for (int c = 0; c < coils; ++c) {
    Image coil = p.truth;
    for (std::size_t i = 0; i < coil.size(); ++i) coil[i] *= p.maps->map(c)[i];
    const auto yc = mri::forward(a, coil);
    y.insert(y.end(), yc.begin(), yc.end());
  }
  p.data = KSpaceData(t, std::move(y), {}, coils, std::move(times));
  return p;
}

ReconOptions options(const Problem &p, bool corrected) {
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.solver.iterations = 10;
  o.coils.sensitivities = p.maps;
  if (corrected) o.offresonance.field_map = p.field;
  return o;
}

} // namespace

TEST_CASE("reconstruct with a field map: time-segmented and exact beat the uncorrected model", "[offresonance]") {
  const Problem p = simulate(24, 2, 500);
  const ReconResult plain = reconstruct(p.data, p.grid, options(p, false));
  const ReconResult segmented = reconstruct(p.data, p.grid, options(p, true));
  ReconOptions exact_options = options(p, true);
  exact_options.method = Method::Exact;
  const ReconResult exact = reconstruct(p.data, p.grid, exact_options);
  const double psnr_plain = psnr(plain.image, p.truth), psnr_seg = psnr(segmented.image, p.truth),
               psnr_exact = psnr(exact.image, p.truth);
  CAPTURE(psnr_plain, psnr_seg, psnr_exact, segmented.report.segments, segmented.report.segment_error);
  CHECK(plain.report.offresonance == "none");
  CHECK(segmented.report.offresonance == "time-segmented");
  CHECK(segmented.report.segment_interpolator == "least-squares");
  CHECK(segmented.report.segments >= 2);
  CHECK(segmented.report.segment_error <= 1e-3);
  CHECK(exact.report.offresonance == "exact");
  CHECK(exact.report.normal == Normal::Direct);
  // The field costs the uncorrected model about 12 dB here (15.8 against 27.7 dB, both
  // corrections); 5 dB leaves room for other thread counts and NUFFT kernels.
  CHECK(psnr_seg > psnr_plain + 5);
  CHECK(psnr_exact > psnr_plain + 5);
  // Segmented within 0.3 dB of exact (issue 43's quality target, here at 10 iterations).
  CHECK(std::abs(psnr_seg - psnr_exact) < 0.3);

  // The segmented direct normal agrees with its Toeplitz form (both the same model; NUFFT 1e-3).
  ReconOptions direct = options(p, true);
  direct.solver.normal = Normal::Direct;
  const ReconResult seg_direct = reconstruct(p.data, p.grid, direct);
  CHECK(relative_l2(seg_direct.image, segmented.image) < 1e-2);

  // A sparse solver runs on the same normal operator unchanged.
  ReconOptions sparse = options(p, true);
  sparse.solver.terms.push_back(SparseTerm{});
  sparse.solver.terms.back().penalty = SparsePenalty::L1Wavelet;
  sparse.solver.terms.back().lambda = 1e-4;
  const ReconResult cs = reconstruct(p.data, p.grid, sparse);
  CHECK(cs.report.offresonance == "time-segmented");
  CHECK(psnr(cs.image, p.truth) > psnr_plain + 5);
}

TEST_CASE("reconstruct with the exact field-corrected sums equals a float64 dense-matrix CG to 0.05 dB",
          "[offresonance]") {
  // One coil, 16^2, the dense E (M x N, float64) and CG on E^H E x = E^H y in double, the same
  // iterations from zero: what reconstruct's exact path (float64 sums, float32 vectors with double
  // reductions) must reproduce (issue 43's target: 0.05 dB).
  const Problem p = simulate(16, 1, 150);
  const Trajectory &t = p.data.trajectory();
  const auto &times = p.data.sample_times();
  const std::size_t M = t.size(), N = static_cast<std::size_t>(p.grid.voxels());
  std::vector<cdouble> e(M * N);
  for (std::size_t m = 0; m < M; ++m)
    for (std::int64_t y = 0; y < p.grid.ny(); ++y)
      for (std::int64_t x = 0; x < p.grid.nx(); ++x) {
        const auto n = static_cast<std::size_t>(p.grid.index(x, y));
        const double phase = 2 * M_PI * (t[m].kx * static_cast<double>(x - 8) / 16 + t[m].ky * static_cast<double>(y - 8) / 16 +
                                         p.field->hz()[n] * static_cast<double>(times[m]));
        e[m * N + n] = std::polar(1.0, -phase);
      }
  const auto apply_normal = [&](const std::vector<cdouble> &v) {
    std::vector<cdouble> ev(M), out(N);
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t n = 0; n < N; ++n) ev[m] += e[m * N + n] * v[n];
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t n = 0; n < N; ++n) out[n] += std::conj(e[m * N + n]) * ev[m];
    return out;
  };
  std::vector<cdouble> b(N), x(N);
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) b[n] += std::conj(e[m * N + n]) * cdouble(p.data.samples()[m]);
  std::vector<cdouble> r = b, d = b;
  double rr = 0;
  for (const cdouble v : r) rr += std::norm(v);
  const int iterations = 8;
  for (int k = 0; k < iterations; ++k) {
    const std::vector<cdouble> q = apply_normal(d);
    cdouble dq = 0;
    for (std::size_t n = 0; n < N; ++n) dq += std::conj(d[n]) * q[n];
    const double alpha = rr / dq.real();
    double rr_new = 0;
    for (std::size_t n = 0; n < N; ++n) {
      x[n] += alpha * d[n];
      r[n] -= alpha * q[n];
      rr_new += std::norm(r[n]);
    }
    for (std::size_t n = 0; n < N; ++n) d[n] = r[n] + (rr_new / rr) * d[n];
    rr = rr_new;
  }
  Image dense(p.grid);
  for (std::size_t n = 0; n < N; ++n) dense[n] = cfloat(x[n]);
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.method = Method::Exact;
  o.precision = Precision::Float64;
  o.solver.iterations = iterations;
  o.solver.tolerance = 0;
  o.offresonance.field_map = p.field;
  const ReconResult r_exact = reconstruct(p.data, p.grid, o);
  CAPTURE(psnr(r_exact.image, p.truth), psnr(dense, p.truth));
  CHECK(std::abs(psnr(r_exact.image, p.truth) - psnr(dense, p.truth)) < 0.05);
  CHECK(relative_l2(r_exact.image, dense) < 1e-3);
}

TEST_CASE("reconstruct_batch with a field map: no shared Q key, each item as reconstruct alone", "[offresonance]") {
  const Problem p = simulate(16, 1, 200);
  ReconOptions o = options(p, true);
  o.solver.iterations = 4;
  CHECK_FALSE(reconstruct_q_key(p.data, p.grid, o).has_value());
  const std::vector<KSpaceData> items{p.data, p.data};
  const auto results = reconstruct_batch(items, p.grid, o, {2, true});
  const ReconResult alone = reconstruct(p.data, p.grid, o);
  for (const BatchResult &r : results) {
    REQUIRE_FALSE(r.error);
    CHECK(r.report.offresonance == "time-segmented");
    CHECK(relative_l2(r.image, alone.image) < 1e-5); // another OpenMP team size: not bitwise
  }
}

TEST_CASE("reconstruct with a zero field map equals the uncorrected reconstruction bitwise", "[offresonance]") {
  const Problem p = simulate(16, 1, 200);
  ReconOptions o = options(p, false);
  const ReconResult plain = reconstruct(p.data, p.grid, o);
  o.offresonance.field_map = std::make_shared<const FieldMap>(p.grid, std::vector<float>(256));
  const ReconResult zero = reconstruct(p.data, p.grid, o);
  CHECK(zero.image.values() == plain.image.values());
  CHECK(zero.report.offresonance == "none");
  CHECK(zero.report.offresonance_note.find("zero everywhere") != std::string::npos);
}

TEST_CASE("reconstruct resamples a field map on another grid and says so", "[offresonance]") {
  const Problem p = simulate(16, 1, 200);
  ReconOptions o = options(p, true);
  o.solver.iterations = 3;
  const Grid coarse(8, 8);
  o.offresonance.field_map = std::make_shared<const FieldMap>(p.field->resampled(coarse));
  const ReconResult r = reconstruct(p.data, p.grid, o);
  CHECK(r.report.offresonance == "time-segmented");
  CHECK(r.report.offresonance_note.find("resampled from 8x8x1 to 16x16x1") != std::string::npos);
}

TEST_CASE("reconstruct with a field map refuses bad input", "[offresonance][bad-input]") {
  const Problem p = simulate(16, 1, 200);
  using mri::test::contains; // Catch2 v2 and v3 (catch.hpp)
  const KSpaceData no_times(p.data.trajectory(), p.data.samples());
  ReconOptions o = options(p, true);
  CHECK_THROWS_WITH(reconstruct(no_times, p.grid, o), contains("data.sample_times().size() = 0"));
  o.backend = Backend::Cuda; // refused without a device; with one it runs (tests/gpu/offresonance)
  if (!cuda_available()) CHECK_THROWS_AS(reconstruct(p.data, p.grid, o), Unsupported);
  o = options(p, true);
  o.offresonance.segmentation.max_segments = 1;
  CHECK_THROWS_WITH(reconstruct(p.data, p.grid, o), contains("max_segments = 1"));
}

TEST_CASE("field map resampling is linear in FOV fractions", "[offresonance]") {
  // A linear ramp in x stays the same ramp (within the clamped edge) on a finer grid.
  const Grid coarse(8, 4), fine(16, 8);
  std::vector<float> f(32);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 8; ++x) f[static_cast<std::size_t>(coarse.index(x, y))] = 10.0f * static_cast<float>(x - 4) / 8.0f;
  const FieldMap r = FieldMap(coarse, f).resampled(fine);
  for (int x = 0; x < 15; ++x) // the last fine voxel lies beyond the coarse grid's last centre: clamped
    CHECK(r.hz()[static_cast<std::size_t>(fine.index(x, 3))] == Approx(10.0 * (x - 8) / 16.0).margin(1e-5));
}
