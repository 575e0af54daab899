// Cross-check against BART itself (Debian package `bart`, 0.8): the conventions of
// MISSION.md (voxel coordinates i - n/2, forward sign exp(-i 2 pi k.x/n), x fastest, k in
// cycles/FOV, BART's nufft = 1/sqrt(voxels) * our unnormalised sums) are proved here, not
// assumed. The test runs `bart` in a temporary directory and fails when it is not on PATH.
//
// What BART 0.8 does, measured:
//  - `bart nufft -s` (its exact DFT) equals our sums with factor 1 to float rounding (~1e-6),
//    forward and adjoint, 2D and 3D, non-square grids: sign, centre index n/2, axis order.
//  - `bart nufft` (Kaiser-Bessel gridding, oversampling 2) equals nufft_scale * our sums
//    within its gridding error: a uniform scale bias of +0.14 % plus ~1e-4 shape error with
//    -P (periodic k-space). Without -P, samples within the kernel half-width of the k-space
//    edge lose part of their kernel, which costs a few 1e-3 for radial data reaching n/2.
//  - `bart fft` (centred, unnormalised) equals our forward sum on the Cartesian k-grid
//    k = j - floor(n/2) for every n, odd included: centre index floor(n/2) on both sides.
//  - Odd n, NOT covered by the nufft checks: BART 0.8's `nufft -s` puts the centre at the
//    half-integer n/2 (x = i - n/2 in real arithmetic, unlike its own `fft`), and its gridding
//    `nufft` matches neither centre (O(1) error). Even n is consistent everywhere.
//  - `bart traj -x X -y Y -r`: sample i of spoke s is (i - X/2 + 1/2) (sin t, cos t),
//    t = pi s / Y, in cycles/FOV of an X-voxel image; X = 2n with `bart scale 0.5` gives a
//    2x-oversampled readout for an n-voxel image, |k| <= n/2 - 1/4, inside [-n/2, n/2).
#include "catch.hpp"
#include "mri/bart.hpp"
#include "mri/error.hpp"
#include "mri/coils.hpp"
#include "mri/fourier.hpp"
#include "mri/metrics.hpp"
#include "mri/reconstruct.hpp"
#include "test_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numbers>
#include <random>
#include <sstream>
#include <string>

#include <unistd.h>

using namespace mri;
namespace fs = std::filesystem;

namespace {


void require_bart() {
  if (std::system("command -v bart > /dev/null 2>&1") != 0)
    FAIL("`bart` is not on PATH. This test cross-checks the SDK against BART 0.8: install the "
         "Debian/Ubuntu package `bart` (CI installs it).");
}

// Runs `bart <args>` inside dir; fails the test with bart's output if it does not succeed.
void run_bart(const test::TempDir &dir, const std::string &args) {
  const std::string cmd = "cd '" + dir.path().string() + "' && bart " + args + " > bart.log 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream in(dir / "bart.log");
    std::stringstream log;
    log << in.rdbuf();
    FAIL("`bart " << args << "` failed (status " << rc << "):\n" << log.str());
  }
}

// ||a - s b|| / ||s b||, the error of BART's `a` against our `b` scaled by s.
double scaled_error(std::span<const cfloat> bart_values, std::span<const cfloat> ours, double s) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const cdouble o = s * cdouble(ours[i]);
    num += std::norm(cdouble(bart_values[i]) - o);
    den += std::norm(o);
  }
  return std::sqrt(num / den);
}

// The least-squares scale c with bart ~ c * s * ours, to separate a scale bias from the shape.
cdouble fitted_scale(std::span<const cfloat> bart_values, std::span<const cfloat> ours, double s) {
  return test::inner(ours, bart_values) / (s * test::inner(ours, ours).real());
}

// Random points in [-n/2, n/2) on each axis of the grid.
Trajectory random_trajectory(const Grid &g, std::size_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<KPoint> p(m);
  auto coord = [&](std::int64_t n) {
    std::uniform_real_distribution<float> u(-0.5f * float(n), 0.5f * float(n));
    float v = u(rng);
    return v >= 0.5f * float(n) ? -0.5f * float(n) : v;
  };
  for (auto &k : p) {
    k.kx = coord(g.nx());
    k.ky = coord(g.ny());
    k.kz = g.dims() == 3 ? coord(g.nz()) : 0.0f;
  }
  return Trajectory(g.dims(), std::move(p));
}

std::string dims_arg(const Grid &g) {
  return std::to_string(g.nx()) + ":" + std::to_string(g.ny()) + ":" + std::to_string(g.nz());
}

constexpr OperatorOptions kReference{Backend::Cpu, Precision::Float64};

} // namespace

TEST_CASE("bart: `bart traj -r` spokes are in cycles/FOV, centred, 2x oversampled after scale 0.5",
          "[bart]") {
  require_bart();
  test::TempDir dir("bart");
  const int n = 64, X = 2 * n, Y = 12;
  run_bart(dir, "traj -x " + std::to_string(X) + " -y " + std::to_string(Y) + " -r traj_x2n");
  const auto raw = bart::read_cfl(dir / "traj_x2n");
  REQUIRE(raw.dims.size() >= 3);
  CHECK(raw.dims[0] == 3);
  CHECK(raw.dims[1] == X);
  CHECK(raw.dims[2] == Y);
  const Trajectory t_raw = bart::to_trajectory(raw, 2);
  // Unscaled, `-x 2n` spans +-(n - 1/2): the k-space of a 2n image, outside an n image's.
  for (int s = 0; s < Y; ++s) {
    const double theta = std::numbers::pi * s / Y;
    for (int i = 0; i < X; ++i) {
      const double r = i - X / 2 + 0.5;
      const KPoint &k = t_raw[static_cast<std::size_t>(i + X * s)];
      INFO("spoke " << s << " sample " << i << ": bart k = (" << k.kx << ", " << k.ky << ")");
      CHECK(std::abs(k.kx - r * std::sin(theta)) < 1e-4);
      CHECK(std::abs(k.ky - r * std::cos(theta)) < 1e-4);
    }
  }
  CHECK_NOTHROW(t_raw.check_within(Grid(X, X)));
  CHECK_THROWS_AS(t_raw.check_within(Grid(n, n)), InvalidArgument);

  // The usual BART recipe for an n^2 image: scale by 1/2 (readout oversampled twice).
  run_bart(dir, "scale 0.5 traj_x2n traj");
  const Trajectory t = bart::to_trajectory(bart::read_cfl(dir / "traj"), 2);
  float kmax = 0;
  for (const auto &k : t.points()) kmax = std::max({kmax, std::abs(k.kx), std::abs(k.ky)});
  CHECK(kmax == 0.5f * n - 0.25f);
  CHECK_NOTHROW(t.check_within(Grid(n, n)));
}

TEST_CASE("bart: BART's exact DFT (`nufft -s`) equals our sums: sign, centre, axis order, scale 1",
          "[bart]") {
  require_bart();
  test::TempDir dir("bart");
  // Non-square and 3D, so a transposition or a swapped axis cannot hide.
  for (const Grid g : {Grid(24, 16), Grid(8, 6, 4)}) {
    INFO("grid " << g.nx() << " x " << g.ny() << " x " << g.nz());
    const Trajectory t = random_trajectory(g, 300, 7);
    bart::write_cfl(dir / "t", bart::from_trajectory(t).dims, bart::from_trajectory(t).data);
    const FourierOperator F(t, g, kReference);

    // Forward: image -> k-space.
    const Image x = test::random_image(g, 8);
    bart::write_cfl(dir / "x", bart::from_image(x).dims, x.values());
    run_bart(dir, "nufft -s t x y_bart");
    const auto y_bart = bart::read_cfl(dir / "y_bart");
    REQUIRE(y_bart.data.size() == t.size());
    const auto y = mri::forward(F, x);
    const double e_fwd = scaled_error(y_bart.data, y, 1.0);
    CAPTURE(e_fwd);
    CHECK(e_fwd < 1e-5); // measured ~7e-7: BART computes in float32

    // Adjoint: k-space -> image.
    const auto c = test::random_complex(t.size(), 9);
    bart::write_cfl(dir / "c", {1, static_cast<std::int64_t>(t.size())}, c);
    run_bart(dir, "nufft -s -a -d " + dims_arg(g) + " t c z_bart");
    const Image z_bart = bart::to_image(bart::read_cfl(dir / "z_bart"));
    REQUIRE(z_bart.grid() == g);
    const Image z = mri::adjoint(F, c);
    const double e_adj = scaled_error(z_bart.values(), z.values(), 1.0);
    CAPTURE(e_adj);
    CHECK(e_adj < 1e-5);
  }
}

TEST_CASE("bart: BART's centred Cartesian `fft` is our forward sum on the Cartesian k-grid, odd "
          "sizes included",
          "[bart]") {
  require_bart();
  test::TempDir dir("bart");
  // k-space index j holds k = j - floor(n/2), the same centre as the image; unnormalised.
  for (const Grid g : {Grid(15, 8), Grid(7, 9, 5)}) {
    INFO("grid " << g.nx() << " x " << g.ny() << " x " << g.nz());
    std::vector<KPoint> p;
    for (std::int64_t z = 0; z < g.nz(); ++z)
      for (std::int64_t y = 0; y < g.ny(); ++y)
        for (std::int64_t x = 0; x < g.nx(); ++x)
          p.push_back({float(g.coordinate(0, x)), float(g.coordinate(1, y)),
                       g.dims() == 3 ? float(g.coordinate(2, z)) : 0.0f});
    const FourierOperator F(Trajectory(g.dims(), std::move(p)), g, kReference);
    const Image x = test::random_image(g, 3);
    bart::write_cfl(dir / "x", bart::from_image(x).dims, x.values());
    run_bart(dir, std::string("fft ") + (g.dims() == 3 ? "7" : "3") + " x k_bart");
    const auto k_bart = bart::read_cfl(dir / "k_bart");
    REQUIRE(k_bart.data.size() == static_cast<std::size_t>(g.voxels()));
    const double e = scaled_error(k_bart.data, mri::forward(F, x), 1.0);
    CAPTURE(e);
    CHECK(e < 1e-5); // measured ~1e-7
  }
}

TEST_CASE("bart: BART's gridding nufft of its analytic phantom, adjoint and forward, on its "
          "radial trajectory equals nufft_scale times our exact sums",
          "[bart]") {
  require_bart();
  test::TempDir dir("bart");
  const int n = 64, spokes = 96;
  const Grid g(n, n);
  const double s = bart::nufft_scale(g);
  run_bart(dir, "traj -x " + std::to_string(2 * n) + " -y " + std::to_string(spokes) + " -r traj_x2n");
  run_bart(dir, "scale 0.5 traj_x2n traj");
  run_bart(dir, "phantom -k -t traj ksp");
  const Trajectory t = bart::to_trajectory(bart::read_cfl(dir / "traj"), 2);
  const auto ksp = bart::read_cfl(dir / "ksp");
  REQUIRE(ksp.data.size() == t.size());
  const FourierOperator F(t, g, kReference);

  SECTION("adjoint") {
    const Image ours = mri::adjoint(F, ksp.data);
    // -P: periodic k-space, the same as the DFT's (exp(i 2 pi k x / n) is n-periodic in k).
    run_bart(dir, "nufft -a -P -d " + dims_arg(g) + " traj ksp img_p");
    const Image img_p = bart::to_image(bart::read_cfl(dir / "img_p"));
    const double e_p = scaled_error(img_p.values(), ours.values(), s);
    const cdouble c_p = fitted_scale(img_p.values(), ours.values(), s);
    const double e_p_shape = scaled_error(img_p.values(), ours.values(), s * c_p.real());
    // BART's default (non-periodic) gridding.
    run_bart(dir, "nufft -a -d " + dims_arg(g) + " traj ksp img");
    const Image img = bart::to_image(bart::read_cfl(dir / "img"));
    const double e = scaled_error(img.values(), ours.values(), s);
    CAPTURE(e_p, c_p, e_p_shape, e);
    // The scale BART applies is 1/sqrt(voxels) to its gridding bias (measured 1.0014).
    CHECK(std::abs(c_p - 1.0) < 3e-3);
    CHECK(e_p_shape < 5e-4);
    CHECK(e_p < 3e-3);
    CHECK(e < 1e-2);
  }

  SECTION("forward") {
    // BART's rasterised phantom image (not the one it sampled k-space from) plus noise, so
    // every voxel and every sample matters.
    run_bart(dir, "phantom -x " + std::to_string(n) + " x0");
    auto x0 = bart::read_cfl(dir / "x0");
    const auto noise = test::random_complex(x0.data.size(), 5);
    for (std::size_t i = 0; i < noise.size(); ++i) x0.data[i] += 0.1f * noise[i];
    const Image x = bart::to_image(x0);
    REQUIRE(x.grid() == g);
    bart::write_cfl(dir / "x", bart::from_image(x).dims, x.values());
    const auto ours = mri::forward(F, x);
    run_bart(dir, "nufft -P traj x y_p");
    const auto y_p = bart::read_cfl(dir / "y_p");
    REQUIRE(y_p.data.size() == t.size());
    const double e_p = scaled_error(y_p.data, ours, s);
    const cdouble c_p = fitted_scale(y_p.data, ours, s);
    const double e_p_shape = scaled_error(y_p.data, ours, s * c_p.real());
    run_bart(dir, "nufft traj x y");
    const auto y = bart::read_cfl(dir / "y");
    const double e = scaled_error(y.data, ours, s);
    CAPTURE(e_p, c_p, e_p_shape, e);
    CHECK(std::abs(c_p - 1.0) < 3e-3);
    CHECK(e_p_shape < 5e-4);
    CHECK(e_p < 3e-3);
    CHECK(e < 1e-2);
  }
}

TEST_CASE("bart: multi-coil SENSE on BART's own data and maps matches `bart pics` (radial and spiral)",
          "[bart][sense]") {
  // `bart phantom -s 8 -k -t traj` (the phantom seen by BART's 8 simulated coils, analytic) with
  // `bart phantom -S 8` maps, reconstructed by `bart pics -l2 -r R -w 1 -i 30` and by ours with the
  // same maps. BART's operator is unitary-scaled (s = 1/sqrt(N)): its normal equations are ours
  // times s^2 with lambda = R / s^2 = R N, and its image is ours / s (bart.hpp).
  require_bart();
  test::TempDir dir("bart_sense");
  const int n = 96, coils = 8;
  const Grid grid(n, n);
  const double r_bart = 0.005;
  run_bart(dir, "traj -x " + std::to_string(2 * n) + " -y 121 -r traj_x2n");
  run_bart(dir, "scale 0.5 traj_x2n radial");
  bart::write_cfl(dir / "spiral", {3, 3072, 8}, bart::from_trajectory(traj::spiral(grid, 8, 3072)).data);
  run_bart(dir, "phantom -x " + std::to_string(n) + " truth");
  run_bart(dir, "phantom -S " + std::to_string(coils) + " -x " + std::to_string(n) + " sens");
  const Image truth = bart::to_image(bart::read_cfl(dir / "truth"));
  const bart::CflArray sens = bart::read_cfl(dir / "sens");
  REQUIRE(sens.dims[0] == n);
  REQUIRE(sens.dims[3] == coils);
  const auto maps = std::make_shared<const CoilSensitivities>(grid, coils, sens.data);
  const double s = bart::nufft_scale(grid);
  for (const std::string name : {"radial", "spiral"}) {
    INFO(name);
    run_bart(dir, "phantom -s " + std::to_string(coils) + " -k -t " + name + " ksp_" + name);
    run_bart(dir, "pics -l2 -r " + std::to_string(r_bart) + " -w 1 -i 30 -t " + name + " ksp_" + name +
                      " sens img_" + name);
    const Image bart_image = bart::to_image(bart::read_cfl(dir / ("img_" + name)));
    const bart::CflArray ksp = bart::read_cfl(dir / ("ksp_" + name));
    const Trajectory t = bart::to_trajectory(bart::read_cfl(dir / name), 2);
    REQUIRE(ksp.data.size() == t.size() * coils);
    ReconOptions o;
    o.backend = Backend::Cpu;
    o.method = Method::Nufft;
    o.nufft.tolerance = 1e-4;
    o.solver.regularizer = Regularizer::Tikhonov;
    o.solver.lambda = r_bart / (s * s);
    o.solver.iterations = 30;
    o.solver.tolerance = 0;
    o.coils.sensitivities = maps;
    const ReconResult r = reconstruct(KSpaceData(t, ksp.data, {}, coils), grid, o);
    REQUIRE(r.report.coils == coils);
    Image ours = r.image;
    for (auto &v : ours.values()) v /= static_cast<float>(s);
    // `bart phantom` draws its image on another scale than its analytic k-space: both images are
    // put on the truth's scale by the one least-squares factor each (metrics.hpp best_scale).
    const auto fitted = [&](Image x) {
      const cfloat c = best_scale(x, truth);
      for (auto &v : x.values()) v *= c;
      return x;
    };
    const double psnr_ours = psnr(fitted(ours), truth), psnr_bart = psnr(fitted(bart_image), truth);
    WARN(name << ": PSNR vs truth ours " << psnr_ours << " dB, bart pics " << psnr_bart << " dB; images differ by "
              << test::relative_error(ours, bart_image));
    CHECK(psnr_ours >= psnr_bart - 0.1);
    // The same problem solved by two NUFFTs: the images agree to well below the error vs truth.
    CHECK(test::relative_error(ours, bart_image) < 0.02); // measured 0.004 radial, 0.008 spiral
  }
}

namespace {
// The map error of `est` against `ref` after removing the per-voxel common phase (maps are
// defined up to one phase per voxel): sqrt(sum over voxels with |ref| > 0 of
// ||e^{-i phi} est - ref||^2 / sum ||ref||^2), phi = arg <ref, est> at the voxel.
double map_error(const CoilSensitivities &est, const CoilSensitivities &ref) {
  double num = 0, den = 0;
  for (std::size_t v = 0; v < ref.voxels(); ++v) {
    cdouble inner = 0;
    double norm = 0;
    for (int c = 0; c < ref.coils(); ++c) {
      inner += std::conj(cdouble(ref.map(c)[v])) * cdouble(est.map(c)[v]);
      norm += std::norm(cdouble(ref.map(c)[v]));
    }
    if (norm == 0) continue;
    const cdouble unphase = std::abs(inner) > 0 ? std::conj(inner) / std::abs(inner) : 1.0;
    for (int c = 0; c < ref.coils(); ++c) num += std::norm(unphase * cdouble(est.map(c)[v]) - cdouble(ref.map(c)[v]));
    den += norm;
  }
  return std::sqrt(num / den);
}

// Maps divided by their root-sum-of-squares, zero outside `mask` (what RSS-normalised estimates
// should equal where the object is).
CoilSensitivities normalised(const CoilSensitivities &maps, const Image &mask) {
  const Image rss = maps.root_sum_of_squares();
  std::vector<cfloat> out(maps.values());
  for (int c = 0; c < maps.coils(); ++c)
    for (std::size_t v = 0; v < maps.voxels(); ++v)
      out[c * maps.voxels() + v] *= std::abs(mask[v]) > 0 && rss[v].real() > 0 ? 1.0f / rss[v].real() : 0.0f;
  return CoilSensitivities(maps.grid(), maps.coils(), std::move(out));
}
} // namespace

TEST_CASE("bart: estimated coil maps against `bart caldir` and `bart ecalib` on the same radial data: map error "
          "and final PSNR",
          "[bart][sense]") {
  // BART's 8-coil phantom on radial spokes; the reference is BART's true maps normalised by their
  // root-sum-of-squares inside the object. BART's caldir needs Cartesian k-space: the coils'
  // adjoint NUFFT (`bart nufft -a`) transformed back (`bart fft -u 3`), calibration 24 as ours.
  require_bart();
  test::TempDir dir("bart_caldir");
  const int n = 96, coils = 8;
  const Grid grid(n, n);
  run_bart(dir, "traj -x " + std::to_string(2 * n) + " -y 121 -r traj_x2n");
  run_bart(dir, "scale 0.5 traj_x2n traj");
  run_bart(dir, "phantom -x " + std::to_string(n) + " truth");
  run_bart(dir, "phantom -S " + std::to_string(coils) + " -x " + std::to_string(n) + " sens");
  run_bart(dir, "phantom -s " + std::to_string(coils) + " -k -t traj ksp");
  run_bart(dir, "nufft -a -d " + std::to_string(n) + ":" + std::to_string(n) + ":1 traj ksp coil_images");
  run_bart(dir, "fft -u 3 coil_images kgrid");
  run_bart(dir, "caldir 24 kgrid caldir_maps");
  run_bart(dir, "ecalib -m 1 -r 24 kgrid ecalib_maps");
  const Image truth = bart::to_image(bart::read_cfl(dir / "truth"));
  const CoilSensitivities true_maps(grid, coils, bart::read_cfl(dir / "sens").data);
  const CoilSensitivities bart_maps(grid, coils, bart::read_cfl(dir / "caldir_maps").data);
  const Trajectory t = bart::to_trajectory(bart::read_cfl(dir / "traj"), 2);
  const KSpaceData data(t, bart::read_cfl(dir / "ksp").data, {}, coils);
  const CoilSensitivities ours = estimate_sensitivities(data, grid);
  const CoilSensitivities bart_ecalib(grid, coils, bart::read_cfl(dir / "ecalib_maps").data);
  SensitivityOptions espirit;
  espirit.method = MapEstimate::Espirit;
  const CoilSensitivities ours_espirit = estimate_sensitivities(data, grid, espirit);

  Image mask(grid);
  for (std::size_t v = 0; v < mask.size(); ++v) mask[v] = std::abs(truth[v]) > 0 ? 1.0f : 0.0f;
  const CoilSensitivities reference = normalised(true_maps, mask);
  const double e_ours = map_error(normalised(ours, mask), reference);
  const double e_bart = map_error(normalised(bart_maps, mask), reference);
  const double e_espirit = map_error(normalised(ours_espirit, mask), reference);
  const double e_ecalib = map_error(normalised(bart_ecalib, mask), reference);

  // Final PSNR: SENSE with each set of maps (on the truth's scale by one fitted factor each).
  const auto psnr_with = [&](const CoilSensitivities &maps) {
    ReconOptions o;
    o.backend = Backend::Cpu;
    o.method = Method::Nufft;
    o.solver.iterations = 30;
    o.solver.regularizer = Regularizer::Tikhonov;
    o.solver.lambda = 0.005 * grid.voxels();
    o.coils.sensitivities = std::make_shared<const CoilSensitivities>(maps);
    Image x = reconstruct(data, grid, o).image;
    // Estimated maps see rho * RSS(true maps): compare with that image.
    Image seen = truth;
    const Image rss = true_maps.root_sum_of_squares();
    if (&maps != &true_maps)
      for (std::size_t v = 0; v < seen.size(); ++v) seen[v] *= rss[v].real();
    const cfloat c = best_scale(x, seen);
    for (auto &v : x.values()) v *= c;
    return psnr(x, seen);
  };
  const double p_true = psnr_with(true_maps), p_ours = psnr_with(ours), p_bart = psnr_with(bart_maps);
  const double p_espirit = psnr_with(ours_espirit), p_ecalib = psnr_with(bart_ecalib);
  WARN("map error inside the object: ours (direct) " << e_ours << ", bart caldir " << e_bart << ", ours (espirit) "
                                                     << e_espirit << ", bart ecalib " << e_ecalib
                                                     << "; final PSNR: true maps " << p_true << " dB, ours (direct) "
                                                     << p_ours << ", bart caldir maps " << p_bart << ", ours (espirit) "
                                                     << p_espirit << ", bart ecalib maps " << p_ecalib << " dB");
  CHECK(e_ours < 0.2);
  CHECK(e_ours <= 1.5 * e_bart);
  CHECK(p_ours > p_true - 0.5);
  CHECK(e_espirit <= 1.5 * e_ecalib);
  CHECK(p_espirit > p_ecalib - 0.5);
}
