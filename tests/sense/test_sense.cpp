// Multi-coil SENSE on the CPU: the encoding operator's adjointness, reconstruct against the
// normal equations summed explicitly in float64, the one-coil case against the single-coil path,
// estimated maps and coil compression on the simulated array, and the refusals.
#include <cmath>
#include <limits>
#include <memory>

#include "catch.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/coils.hpp"
#include "mri/density.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/gridding.hpp"
#include "mri/metrics.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri/regularizer.hpp"
#include "mri/sense.hpp"
#include "test_support.hpp"

using namespace mri;
using test::random_complex;

namespace {

// Smooth random maps: a random complex value per coil plus a random linear ramp per axis, so
// every voxel sees every coil with a different weight (a well-posed SENSE problem).
std::shared_ptr<const CoilSensitivities> random_maps(const Grid &grid, int coils, std::uint64_t seed) {
  const std::vector<cfloat> r = random_complex(static_cast<std::size_t>(coils) * 4, seed);
  std::vector<cfloat> maps(static_cast<std::size_t>(grid.voxels()) * static_cast<std::size_t>(coils));
  for (int c = 0; c < coils; ++c)
    for (std::int64_t z = 0; z < grid.nz(); ++z)
      for (std::int64_t y = 0; y < grid.ny(); ++y)
        for (std::int64_t x = 0; x < grid.nx(); ++x) {
          const float u[3] = {float(x) / float(grid.nx()) - 0.5f, float(y) / float(grid.ny()) - 0.5f,
                              float(z) / float(grid.nz()) - 0.5f};
          const cfloat *a = &r[static_cast<std::size_t>(c) * 4];
          maps[static_cast<std::size_t>(c * grid.voxels() + grid.index(x, y, z))] =
              a[0] + a[1] * u[0] + a[2] * u[1] + a[3] * u[2];
        }
  return std::make_shared<const CoilSensitivities>(grid, coils, std::move(maps));
}

// The SENSE normal equations in float64, by explicit sums:
//   A x = sum_c conj(S_c) F^H W F (S_c x) + lambda R^H R x,   b = sum_c conj(S_c) F^H W D_c.
struct Float64Sense {
  const KSpaceData &data;
  const CoilSensitivities &maps;
  const Grid grid;

  // (F v)_m = sum_n v_n exp(-i 2 pi k_m . x_n / n), x_n centred voxel coordinates.
  cdouble phase(std::size_t m, std::int64_t v, double sign) const {
    const KPoint &k = data.trajectory()[m];
    const std::int64_t i[3] = {v % grid.nx(), (v / grid.nx()) % grid.ny(), v / (grid.nx() * grid.ny())};
    const double kk[3] = {k.kx, k.ky, k.kz};
    double arg = 0;
    for (int a = 0; a < grid.dims(); ++a)
      arg += kk[a] * double(i[a] - grid.extent(a) / 2) / double(grid.extent(a));
    arg *= sign * 2 * M_PI;
    return {std::cos(arg), std::sin(arg)};
  }
  std::vector<cdouble> coil_normal(int c, const std::vector<cdouble> &samples) const {
    // F^H (w .* samples) then conj(S_c) .*
    std::vector<cdouble> out(static_cast<std::size_t>(grid.voxels()));
    for (std::int64_t v = 0; v < grid.voxels(); ++v) {
      cdouble s = 0;
      for (std::size_t m = 0; m < samples.size(); ++m)
        s += (data.has_weights() ? double(data.weights()[m]) : 1.0) * samples[m] * phase(m, v, +1);
      out[static_cast<std::size_t>(v)] = std::conj(cdouble(maps.map(c)[static_cast<std::size_t>(v)])) * s;
    }
    return out;
  }
  std::vector<cdouble> rhs() const {
    std::vector<cdouble> b(static_cast<std::size_t>(grid.voxels()));
    const std::size_t m = data.samples_per_coil();
    for (int c = 0; c < maps.coils(); ++c) {
      std::vector<cdouble> y(m);
      for (std::size_t i = 0; i < m; ++i) y[i] = cdouble(data.samples()[static_cast<std::size_t>(c) * m + i]);
      const auto part = coil_normal(c, y);
      for (std::size_t v = 0; v < b.size(); ++v) b[v] += part[v];
    }
    return b;
  }
  std::vector<cdouble> apply(const Image &x, Regularizer r, double lambda) const {
    std::vector<cdouble> out(x.size());
    for (int c = 0; c < maps.coils(); ++c) {
      std::vector<cdouble> y(data.samples_per_coil());
      for (std::size_t m = 0; m < y.size(); ++m)
        for (std::int64_t v = 0; v < grid.voxels(); ++v)
          y[m] += cdouble(maps.map(c)[static_cast<std::size_t>(v)]) * cdouble(x[static_cast<std::size_t>(v)]) *
                  phase(m, v, -1);
      const auto part = coil_normal(c, y);
      for (std::size_t v = 0; v < out.size(); ++v) out[v] += part[v];
    }
    Image reg(grid);
    add_regularizer_normal(r, lambda, grid, x.data(), reg.data());
    for (std::size_t v = 0; v < out.size(); ++v) out[v] += cdouble(reg[v]);
    return out;
  }
};

double relative_residual(const std::vector<cdouble> &ax, const std::vector<cdouble> &b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    num += std::norm(ax[i] - b[i]);
    den += std::norm(b[i]);
  }
  return std::sqrt(num / den);
}

struct Simulated {
  Grid grid;
  Image truth;
  KSpaceData data;
  std::shared_ptr<const CoilSensitivities> maps;
};

// The phantom seen by the simulated array on a radial trajectory with analytic density weights.
Simulated simulated_radial(std::int64_t n, int coils, double snr) {
  const Grid grid(n, n);
  const Phantom phantom = Phantom::shepp_logan_2d();
  const SimulatedCoils array(2, coils);
  Trajectory t = traj::radial(grid, int(n), int(2 * n));
  std::vector<float> w = density::radial(t, grid, int(n));
  std::vector<cfloat> y = array.kspace(phantom, t, grid);
  add_noise(y, snr, 7);
  return {grid, phantom.rasterize(grid), KSpaceData(std::move(t), std::move(y), std::move(w), coils),
          std::make_shared<const CoilSensitivities>(array.maps(grid))};
}

// The truth as estimated (RSS-normalised) maps see it: rho * sqrt(sum_c |S_c|^2).
Image truth_times_rss(const Simulated &s) {
  const Image rss = s.maps->root_sum_of_squares();
  Image out(s.grid);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = s.truth[i] * rss[i].real();
  return out;
}

} // namespace

TEST_CASE("sense: the encoding operator is adjoint, <E x, y> = <x, E^H y>", "[sense]") {
  for (const Grid grid : {Grid(14, 10), Grid(8, 6, 5)}) {
    const Trajectory t = test::random_trajectory(grid, 150, 11);
    const auto maps = random_maps(grid, 3, 12);
    const SenseOperator e(t, grid, maps, {Backend::Cpu, Precision::Float64});
    const Image x = test::random_image(grid, 13);
    const std::vector<cfloat> y = random_complex(3 * t.size(), 14);
    const cdouble lhs = test::inner(mri::forward(e, x), y);
    const Image ehy = mri::adjoint(e, y);
    const cdouble rhs = test::inner(x.values(), ehy.values());
    // float64 sums rounded to float32 outputs: relative agreement to ~1e-7 per value.
    CHECK(std::abs(lhs - rhs) / std::abs(lhs) < 1e-5);
  }
}

TEST_CASE("sense: reconstruct solves the multi-coil normal equations summed in float64", "[sense]") {
  const Grid grid(12, 10);
  const int coils = 3;
  const Trajectory t = test::random_trajectory(grid, 260, 21);
  const auto maps = random_maps(grid, coils, 22);
  const KSpaceData data(t, random_complex(coils * t.size(), 23), test::random_weights(t.size(), 24), coils);
  const Float64Sense reference{data, *maps, grid};
  const std::vector<cdouble> b = reference.rhs();
  struct Case {
    Method method;
    Normal normal;
    Precision precision;
    Regularizer regularizer;
    double tolerance; // of the residual: measured 3e-7 to 9e-7 (float32 CG, operators to ~1e-6 and the NUFFT asked for 1e-5)
  };
  for (const Case k : {Case{Method::Exact, Normal::Toeplitz, Precision::Float32, Regularizer::FiniteDifference, 2e-5},
                       Case{Method::Exact, Normal::Direct, Precision::Float64, Regularizer::Tikhonov, 2e-5},
                       Case{Method::Nufft, Normal::Toeplitz, Precision::Float32, Regularizer::Tikhonov, 1e-4},
                       Case{Method::Nufft, Normal::Direct, Precision::Float32, Regularizer::FiniteDifference, 1e-4}}) {
    CAPTURE(to_string(k.method), to_string(k.normal), to_string(k.precision), to_string(k.regularizer));
    ReconOptions o;
    o.backend = Backend::Cpu;
    o.method = k.method;
    o.solver.normal = k.normal;
    o.precision = k.precision;
    o.nufft.tolerance = 1e-5;
    o.solver.regularizer = k.regularizer;
    o.solver.lambda = 20.0; // comparable to the normal operator's diagonal (sum w |S|^2 ~ 100): a
                     // regulariser applied per coil instead of once would leave a large residual
    o.solver.iterations = 200;
    o.solver.tolerance = 1e-9;
    o.coils.sensitivities = maps;
    const ReconResult r = reconstruct(data, grid, o);
    CHECK(r.report.coils == coils);
    CHECK(r.report.maps == "given");
    const double residual = relative_residual(reference.apply(r.image, k.regularizer, o.solver.lambda), b);
    CHECK(residual < k.tolerance);
  }
}

TEST_CASE("sense: one coil with all-ones maps equals the single-coil reconstruction", "[sense]") {
  const Grid grid(20, 16);
  const Trajectory t = test::random_trajectory(grid, 500, 31);
  const KSpaceData data(t, random_complex(t.size(), 32), test::random_weights(t.size(), 33));
  const auto ones = std::make_shared<const CoilSensitivities>(grid, 1, std::vector<cfloat>(grid.voxels(), 1.0f));
  for (const Method method : {Method::Exact, Method::Nufft}) {
    ReconOptions o;
    o.backend = Backend::Cpu;
    o.method = method;
    o.solver.iterations = 15;
    o.solver.lambda = 5;
    o.solver.regularizer = Regularizer::FiniteDifference;
    const ReconResult single = reconstruct(data, grid, o);
    CHECK(single.report.maps == "none");
    o.coils.sensitivities = ones;
    const ReconResult sense = reconstruct(data, grid, o);
    CHECK(sense.report.maps == "given");
    // The same operators in another order of float additions (regulariser after, not fused).
    CHECK(test::relative_error(sense.image, single.image) < 1e-5);
  }
}

TEST_CASE("sense: simulated array k-space is the DFT of maps times phantom", "[sense][coils]") {
  // The array's k-space is exact (shifted closed forms); the discrete F of the rasterised
  // product differs by the rasterisation only, as for one coil: the two errors must match.
  const Grid grid(48, 48);
  const Phantom phantom = Phantom::shepp_logan_2d();
  const SimulatedCoils array(2, 4);
  const CoilSensitivities maps = array.maps(grid);
  const Trajectory t = traj::radial(grid, 24, 48);
  const std::vector<cfloat> y = array.kspace(phantom, t, grid);
  const Image rho = phantom.rasterize(grid, 8);
  const FourierOperator f(t, grid, {Backend::Cpu, Precision::Float64});
  const double single = test::relative_error(mri::forward(f, rho), phantom.kspace(t, grid));
  for (int c = 0; c < 4; ++c) {
    Image product(grid);
    for (std::size_t i = 0; i < product.size(); ++i) product[i] = maps.map(c)[i] * rho[i];
    const std::span<const cfloat> yc(y.data() + c * t.size(), t.size());
    const std::vector<cfloat> dft = mri::forward(f, product);
    CAPTURE(c, single);
    CHECK(test::relative_error(dft, yc) < 2 * single + 1e-3);
  }
}

TEST_CASE("sense: estimated maps reconstruct within 0.5 dB of the true maps", "[sense][coils]") {
  const Simulated s = simulated_radial(96, 8, 80);
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.method = Method::Nufft;
  o.solver.iterations = 20;
  o.solver.lambda = 1e-3 * s.grid.voxels();
  o.coils.sensitivities = s.maps;
  const ReconResult with_true = reconstruct(s.data, s.grid, o);
  o.coils.sensitivities.reset();
  const ReconResult estimated = reconstruct(s.data, s.grid, o);
  CHECK(estimated.report.maps.rfind("estimated", 0) == 0);
  CHECK(estimated.report.coils == 8);
  const double psnr_true = psnr(with_true.image, s.truth);
  // RSS-normalised maps reconstruct rho * RSS(true maps) (E x = S rho with S = S_est RSS).
  const double psnr_est = psnr(estimated.image, truth_times_rss(s));
  CAPTURE(psnr_true, psnr_est);
  CHECK(psnr_true > 28);
  CHECK(psnr_est > psnr_true - 0.5);
}

TEST_CASE("sense: coil compression keeps the energy it reports and the image", "[sense][coils]") {
  const Simulated s = simulated_radial(64, 12, 80);
  const CoilCompression all(s.data, 12);
  CHECK(std::abs(all.energy_kept() - 1.0) < 1e-9);
  const CoilCompression cc(s.data, 5);
  CHECK(cc.energy_kept() > 0.95);
  CHECK(cc.energy_kept() <= 1.0);
  // The virtual coils are orthogonal projections: the compressed data's energy is what is kept.
  const KSpaceData v = cc.apply(s.data);
  double e_in = 0, e_out = 0;
  for (const cfloat &x : s.data.samples()) e_in += std::norm(cdouble(x));
  for (const cfloat &x : v.samples()) e_out += std::norm(cdouble(x));
  CHECK(std::abs(e_out / e_in - cc.energy_kept()) < 1e-4);

  ReconOptions o;
  o.backend = Backend::Cpu;
  o.method = Method::Nufft;
  o.solver.iterations = 20;
  o.solver.lambda = 1e-3 * s.grid.voxels();
  o.coils.sensitivities = s.maps;
  const double full = psnr(reconstruct(s.data, s.grid, o).image, s.truth);
  o.coils.virtual_coils = 5;
  const ReconResult r = reconstruct(s.data, s.grid, o);
  CHECK(r.report.acquired_coils == 12);
  CHECK(r.report.coils == 5);
  CHECK(r.report.coil_energy_kept == cc.energy_kept());
  CAPTURE(full);
  CHECK(psnr(r.image, s.truth) > full - 0.3);
}

TEST_CASE("sense: bad input never becomes a single-coil result", "[sense][bad-input]") {
  const Grid grid(16, 16);
  const Trajectory t = test::random_trajectory(grid, 200, 41);
  const KSpaceData data(t, random_complex(4 * t.size(), 42), {}, 4);
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.solver.iterations = 2;
  o.coils.maps = CoilMaps::Require;
  CHECK_THROWS_WITH(reconstruct(data, grid, o), test::contains("options.coils.sensitivities"));
  o.coils.sensitivities = random_maps(Grid(16, 15), 4, 43);
  CHECK_THROWS_WITH(reconstruct(data, grid, o), test::contains("reconstruction grid"));
  o.coils.sensitivities = random_maps(grid, 3, 44);
  CHECK_THROWS_WITH(reconstruct(data, grid, o), test::contains("data.coils() = 4"));
  o.coils.sensitivities = random_maps(grid, 4, 45);
  o.coils.virtual_coils = 5;
  CHECK_THROWS_WITH(reconstruct(data, grid, o), test::contains("options.coils.virtual_coils = 5"));
  o.coils.virtual_coils = -1;
  CHECK_THROWS_AS(reconstruct(data, grid, o), InvalidArgument);

  std::vector<cfloat> bad(grid.voxels() * 2, 1.0f);
  bad[grid.voxels() + 7] = {std::numeric_limits<float>::quiet_NaN(), 0};
  CHECK_THROWS_WITH(CoilSensitivities(grid, 2, bad), test::contains("coil 1, voxel 7"));
  CHECK_THROWS_AS(CoilSensitivities(grid, 0, {}), InvalidArgument);
  CHECK_THROWS_AS(CoilSensitivities(grid, 2, std::vector<cfloat>(5)), InvalidArgument);
  CHECK_THROWS_AS(KSpaceData(t, random_complex(t.size(), 1), {}, 0), InvalidArgument);
  CHECK_THROWS_AS(CoilCompression(data, 0), InvalidArgument);
  SensitivityOptions so;
  so.calibration = 2;
  CHECK_THROWS_WITH(estimate_sensitivities(data, grid, so), test::contains("calibration"));
  so.calibration = 16;
  so.mask_threshold = 1;
  CHECK_THROWS_AS(estimate_sensitivities(data, grid, so), InvalidArgument);
}

TEST_CASE("sense: the automatic calibration width fits small grids; an explicit one is checked", "[sense][coils]") {
  const Simulated s = simulated_radial(20, 3, 80); // 20^2: below the default width of 24
  SensitivityOptions so; // calibration 0: min(24, 20) = 20
  const CoilSensitivities est = estimate_sensitivities(s.data, s.grid, so);
  so.calibration = 20;
  CHECK(est.values() == estimate_sensitivities(s.data, s.grid, so).values());
  so.calibration = 21;
  CHECK_THROWS_WITH(estimate_sensitivities(s.data, s.grid, so), test::contains("sensitivity.calibration = 21"));
  ReconOptions o;
  o.solver.iterations = 2;
  CHECK_THAT(reconstruct(s.data, s.grid, o).report.maps, test::contains("|k| < 10"));
}

TEST_CASE("sense: estimated maps are finite and zero where the coils see nothing", "[sense][coils]") {
  const Simulated s = simulated_radial(64, 8, 80);
  const CoilSensitivities est = estimate_sensitivities(s.data, s.grid);
  const Image rss = est.root_sum_of_squares();
  int unit = 0, zero = 0;
  for (std::size_t i = 0; i < rss.size(); ++i) {
    const float r = rss[i].real();
    REQUIRE(std::isfinite(r));
    if (std::abs(r - 1.0f) < 1e-4f) ++unit;
    else if (r == 0.0f) ++zero;
  }
  // Every voxel is either normalised (RSS 1) or masked (0), and both occur (the phantom does not
  // fill the field of view).
  CHECK(unit + zero == static_cast<int>(rss.size()));
  CHECK(unit > 0);
  CHECK(zero > 0);
}

TEST_CASE("sense: the direct estimate's kept calibration weights are reused for the same trajectory only",
          "[sense][coils]") {
  // Without data weights the estimate computes Pipe-Menon's weights of the calibration samples and
  // keeps them per trajectory (lib/sense/calibration.cpp): A, B, A must give A's maps twice,
  // bitwise, and B's must differ (same sample count, other points: a match is never a collision).
  const Grid grid(48, 48);
  const Phantom phantom = Phantom::shepp_logan_2d();
  const SimulatedCoils array(2, 4);
  const auto data = [&](traj::SpokeOrder order) {
    const Trajectory t = traj::radial(grid, 48, 96, order);
    return KSpaceData(t, array.kspace(phantom, t, grid), {}, 4);
  };
  const KSpaceData a = data(traj::SpokeOrder::Uniform), b = data(traj::SpokeOrder::GoldenAngle);
  REQUIRE(a.samples_per_coil() == b.samples_per_coil());
  const CoilSensitivities first = estimate_sensitivities(a, grid), other = estimate_sensitivities(b, grid),
                          again = estimate_sensitivities(a, grid);
  CHECK(again.values() == first.values());
  // B's maps are those of B's own Pipe-Menon weights, given as data weights on its calibration
  // samples (|k_a| < calibration / 2 = 12 on each axis; the others do not enter).
  std::vector<KPoint> cal;
  std::vector<std::size_t> at;
  for (std::size_t m = 0; m < b.samples_per_coil(); ++m) {
    const KPoint &k = b.trajectory()[m];
    if (std::abs(k.kx) < 12 && std::abs(k.ky) < 12) cal.push_back(k), at.push_back(m);
  }
  const std::vector<float> w = density::pipe_menon(Trajectory(2, cal), grid).weights;
  std::vector<float> weights(b.samples_per_coil(), 1.0f);
  for (std::size_t i = 0; i < at.size(); ++i) weights[at[i]] = w[i];
  const KSpaceData b_weighted(b.trajectory(), b.samples(), weights, 4);
  CHECK(other.values() == estimate_sensitivities(b_weighted, grid).values());
  CHECK(other.values() != first.values());
}

TEST_CASE("sense: gridding combines multi-coil data by root-sum-of-squares of the coil images", "[sense][coils]") {
  const Simulated s = simulated_radial(48, 4, 80);
  const Image combined = gridding_reconstruction(s.data, s.grid);
  std::vector<Image> coil_images;
  const std::size_t m = s.data.samples_per_coil();
  for (int c = 0; c < 4; ++c) {
    const std::vector<cfloat> yc(s.data.samples().begin() + c * m, s.data.samples().begin() + (c + 1) * m);
    coil_images.push_back(gridding_reconstruction(KSpaceData(s.data.trajectory(), yc, s.data.weights()), s.grid));
  }
  CHECK(test::relative_error(combined, root_sum_of_squares(coil_images)) == 0.0);
  // And the coil images are the phantom seen through each map (gridding's accuracy, ~20 dB).
  Image seen(s.grid);
  for (std::size_t i = 0; i < seen.size(); ++i) seen[i] = s.maps->map(2)[i] * s.truth[i];
  CHECK(psnr(coil_images[2], seen) > 20);
}

TEST_CASE("sense: ESPIRiT maps match the true maps inside the object and reconstruct as well", "[sense][coils]") {
  const Simulated s = simulated_radial(96, 8, 80);
  SensitivityOptions so;
  so.method = MapEstimate::Espirit;
  const CoilSensitivities est = estimate_sensitivities(s.data, s.grid, so);
  // Per voxel inside the object: |<S_est, S_true>| / (|S_est| |S_true|) (maps are defined up to
  // one phase and scale per voxel). Measured 0.9998 at 128^2.
  double corr = 0;
  int voxels = 0, kept = 0;
  for (std::size_t v = 0; v < s.truth.size(); ++v) {
    if (std::abs(s.truth[v]) < 0.05f) continue;
    cdouble ip = 0;
    double nt = 0, ne = 0;
    for (int c = 0; c < 8; ++c) {
      ip += std::conj(cdouble(s.maps->map(c)[v])) * cdouble(est.map(c)[v]);
      nt += std::norm(cdouble(s.maps->map(c)[v]));
      ne += std::norm(cdouble(est.map(c)[v]));
    }
    ++voxels;
    if (ne == 0) continue;
    ++kept;
    corr += std::abs(ip) / std::sqrt(nt * ne);
    REQUIRE(std::abs(ne - 1.0) < 1e-4); // unit norm over the coils where kept
  }
  CAPTURE(voxels, kept);
  CHECK(kept == voxels); // nothing inside the object cropped
  CHECK(corr / kept > 0.995);

  ReconOptions o;
  o.backend = Backend::Cpu;
  o.method = Method::Nufft;
  o.solver.iterations = 20;
  o.solver.lambda = 1e-3 * s.grid.voxels();
  o.coils.estimation = so;
  const ReconResult r = reconstruct(s.data, s.grid, o);
  CHECK(r.report.maps.rfind("estimated, espirit", 0) == 0);
  o.coils.sensitivities = s.maps;
  const double p_true = psnr(reconstruct(s.data, s.grid, o).image, s.truth);
  // Unit-norm maps reconstruct rho * RSS(true maps), with the object's own (zero) phase.
  const double p_espirit = psnr(r.image, truth_times_rss(s));
  CAPTURE(p_true, p_espirit);
  CHECK(p_espirit > p_true - 0.5);

  so.espirit_kernel = 1;
  CHECK_THROWS_WITH(estimate_sensitivities(s.data, s.grid, so), test::contains("espirit_kernel"));
  so.espirit_kernel = 0;
  so.espirit_threshold = 0;
  CHECK_THROWS_WITH(estimate_sensitivities(s.data, s.grid, so), test::contains("espirit_threshold"));
}
