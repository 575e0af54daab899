// reconstruct() end to end on the CPU: analytic phantom k-space (no inverse crime) + noise.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/metrics.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// Measured 25.9 dB (48^2, 8 x 1024 spiral, SNR 50, 12 iterations); the floor leaves 1.5 dB for
// platform differences in float rounding.
constexpr double kPsnrFloor = 24.4;

struct Problem {
  Grid grid;
  Image truth;
  KSpaceData data;
};

Problem spiral_phantom(std::int64_t n) {
  const Grid grid(n, n);
  const auto phantom = Phantom::shepp_logan_2d();
  auto t = traj::spiral(grid, 8, 1024);
  auto s = phantom.kspace(t, grid);
  add_noise(s, 50.0, 1);
  return {grid, phantom.rasterize(grid), KSpaceData(std::move(t), std::move(s))};
}

} // namespace

TEST_CASE("reconstruct: CG on the spiral phantom beats the adjoint and PSNR rises", "[reconstruct]") {
  const Problem p = spiral_phantom(48);
  std::vector<double> psnrs;
  ReconOptions o;
  o.solver.iterations = 12;
  o.backend = Backend::Cpu;
  o.on_iteration = [&](int, const Image &x, double) { psnrs.push_back(psnr(x, p.truth)); };
  const ReconResult r = reconstruct(p.data, p.grid, o);

  Image adjoint = FhDOperator(p.data.trajectory(), p.grid).apply(p.data);
  const cfloat s = best_scale(adjoint, p.truth);
  for (auto &v : adjoint.values()) v *= s;
  const double adjoint_psnr = psnr(adjoint, p.truth);
  const double final_psnr = psnr(r.image, p.truth);
  INFO("adjoint " << adjoint_psnr << " dB, CG " << final_psnr << " dB");
  REQUIRE(psnrs.size() == 12);
  CHECK(psnrs.back() > psnrs.front() + 3.0);
  CHECK(final_psnr > adjoint_psnr + 5.0);
  CHECK(final_psnr > kPsnrFloor);
  CHECK(r.report.iterations == 12);
  CHECK(r.report.status == CgStatus::MaxIterations);
  CHECK(r.report.residuals.size() == 13);
  CHECK(r.report.backend == Backend::Cpu);
  CHECK(r.report.fhd_seconds > 0);
  CHECK(r.report.q_seconds > 0);
  CHECK(r.report.cg_seconds > 0);
  // One driver times both backends: every phase field counts its own seconds once, so together
  // they fit in the total.
  const ReconReport &t = r.report;
  CHECK(t.total_seconds >= t.setup_seconds + t.coil_seconds + t.transfer_seconds + t.fhd_seconds + t.q_seconds +
                               t.fft_setup_seconds + t.cg_seconds);
  for (double phase : {t.setup_seconds, t.coil_seconds, t.transfer_seconds, t.fft_setup_seconds}) CHECK(phase >= 0);
}

TEST_CASE("reconstruct: on_phase announces each phase's start and end, with Q's estimate on the CPU",
          "[reconstruct]") {
  const Problem p = spiral_phantom(48);
  const test::TempDir cache("mri-phase-cache");
  std::vector<std::string> events;
  double q_expected = NAN;
  ReconOptions o;
  o.solver.iterations = 3;
  o.backend = Backend::Cpu;
  o.q_cache_dir = cache.path();
  o.on_phase = [&](const ReconPhase &phase) {
    events.push_back(std::string(phase.name) + (phase.fraction == 0 ? " start" : " end"));
    if (phase.name == "Q" && phase.fraction == 0) q_expected = phase.expected_seconds;
  };
  const ReconResult computed = reconstruct(p.data, p.grid, o);
  const std::vector<std::string> with_q = {"coil maps start", "coil maps end", "F^H D start", "F^H D end",
                                           "Q start",         "Q end",         "CG start",    "CG end"};
  CHECK(events == with_q);
  // F^H D's seconds x voxels(doubled) / voxels / coils: the same sums on a 4x larger grid.
  CHECK(q_expected == Approx(4 * computed.report.fhd_seconds));
  events.clear();
  const ReconResult loaded = reconstruct(p.data, p.grid, o); // Q from the cache: no Q phase
  REQUIRE(loaded.report.q_cache == QCacheStatus::Hit);
  const std::vector<std::string> without_q = {"coil maps start", "coil maps end", "F^H D start", "F^H D end",
                                              "CG start",        "CG end"};
  CHECK(events == without_q);
  events.clear();
  o.solver.iterations = -1; // refused before any phase: nothing announced
  CHECK_THROWS_AS(reconstruct(p.data, p.grid, o), InvalidArgument);
  CHECK(events.empty());
}

TEST_CASE("reconstruct: regularisers and float64 operators agree in kind", "[reconstruct]") {
  const Problem p = spiral_phantom(32);
  ReconOptions o;
  o.solver.iterations = 8;
  o.backend = Backend::Cpu;
  const double plain = psnr(reconstruct(p.data, p.grid, o).image, p.truth);
  o.precision = Precision::Float64;
  CHECK(std::abs(psnr(reconstruct(p.data, p.grid, o).image, p.truth) - plain) < 0.05);
  o.precision = Precision::Float32;
  const Image unregularised = reconstruct(p.data, p.grid, o).image;
  // What each regulariser must change: lambda R^H R penalises ||R x||^2, so the regularised
  // image has a smaller ||R x|| than the unregularised one (R = I: the norm; R = finite
  // differences: the roughness). lambda is a tenth of F^H F's scale (about M), enough to move
  // the 8-iteration solution by percent, not enough to destroy it.
  const auto penalty = [&](Regularizer r, const Image &x) {
    Image rx(p.grid);
    add_regularizer_normal(r, 1.0, p.grid, x.data(), rx.data()); // R^H R x
    return VectorOps<Image>::dot(x, rx).real();                   // ||R x||^2
  };
  o.solver.lambda = 0.1 * static_cast<double>(p.data.samples_per_coil());
  for (Regularizer r : {Regularizer::Tikhonov, Regularizer::FiniteDifference}) {
    o.solver.regularizer = r;
    const ReconResult res = reconstruct(p.data, p.grid, o);
    INFO(to_string(r));
    CHECK(VectorOps<Image>::all_finite(res.image));
    CHECK(test::relative_error(res.image, unregularised) > 1e-2);
    CHECK(penalty(r, res.image) < 0.9 * penalty(r, unregularised));
    CHECK(psnr(res.image, p.truth) > plain - 6.0); // a moderate lambda must not destroy the image
  }
}

TEST_CASE("reconstruct: method = Nufft matches the exact method (Toeplitz and direct normal)", "[reconstruct][nufft]") {
  // The bar: PSNR within 0.1 dB of the exact method. At tolerance 1e-3 the NUFFT's F^H D
  // and Q are within ~1e-3 of the exact sums, so the iterates differ by about that (bounded 1e-2
  // over 10 iterations: CG amplifies operator errors mildly on this well-conditioned problem).
  const Problem p = spiral_phantom(40);
  ReconOptions o;
  o.solver.iterations = 10;
  o.backend = Backend::Cpu;
  for (const Normal normal : {Normal::Toeplitz, Normal::Direct}) {
    o.solver.normal = normal;
    o.method = Method::Exact;
    const ReconResult exact = reconstruct(p.data, p.grid, o);
    o.method = Method::Nufft;
    for (const Gridding g : {Gridding::Gather, Gridding::Scatter}) {
      o.nufft.gridding = g;
      const ReconResult fast = reconstruct(p.data, p.grid, o);
      const double d_psnr = psnr(fast.image, p.truth) - psnr(exact.image, p.truth);
      const double rel = test::relative_error(fast.image, exact.image);
      INFO(to_string(normal) << ", " << to_string(g) << ": PSNR difference " << d_psnr << " dB, rel " << rel);
      CHECK(fast.report.method == Method::Nufft);
      CHECK(fast.report.status == CgStatus::MaxIterations);
      CHECK(std::abs(d_psnr) < 0.1);
      CHECK(rel < 1e-2);
    }
  }
  // Float64 NUFFT at 1e-6 is within ~1e-5 of the float64 exact method.
  o.solver.normal = Normal::Toeplitz;
  o.precision = Precision::Float64;
  o.method = Method::Exact;
  const Image exact64 = reconstruct(p.data, p.grid, o).image;
  o.method = Method::Nufft;
  o.nufft.tolerance = 1e-6;
  CHECK(test::relative_error(reconstruct(p.data, p.grid, o).image, exact64) < 1e-4);
}

TEST_CASE("reconstruct: bad input", "[reconstruct][bad-input]") {
  const Problem p = spiral_phantom(16);
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.solver.lambda = -0.1;
  CHECK_THROWS_WITH(reconstruct(p.data, p.grid, o), test::contains("options.solver.lambda = -0.1"));
  o.solver.lambda = 0;
  o.solver.iterations = -2;
  CHECK_THROWS_AS(reconstruct(p.data, p.grid, o), InvalidArgument);
  o.solver.iterations = 2;
  CHECK_THROWS_WITH(reconstruct(p.data, Grid(4, 4), o), test::contains("beyond 3n/2")); // |k| up to 8 > 6
  CHECK_THROWS_AS(reconstruct(p.data, Grid(16, 16, 4), o), InvalidArgument); // 2D data, 3D grid
  o.method = Method::Nufft;
  for (const double tol : {0.2, 1e-7, 0.0, std::numeric_limits<double>::quiet_NaN()}) {
    o.nufft.tolerance = tol;
    CHECK_THROWS_WITH(reconstruct(p.data, p.grid, o), test::contains("options.nufft.tolerance"));
    CHECK_THROWS_AS(reconstruct(p.data, p.grid, o), InvalidArgument);
  }
  o.nufft.tolerance = 1e-6; // float32 reaches 1e-5
  CHECK_THROWS_WITH(reconstruct(p.data, p.grid, o), test::contains("precision = float32"));
  o.method = Method::Exact;
  o.nufft.tolerance = 1e-3;
  if (!cuda_available()) { // on a GPU machine tests/gpu covers backend = Cuda
    o.backend = Backend::Cuda;
    CHECK_THROWS_AS(reconstruct(p.data, p.grid, o), Unsupported);
  }
  // devices ask for the CUDA backend: refused with cpu, and with auto where no GPU is usable
  // (never run on the CPU with the devices ignored)
  o.gpu.devices = {0};
  o.backend = Backend::Cpu;
  CHECK_THROWS_WITH(reconstruct(p.data, p.grid, o), test::contains("options.gpu.devices = 1: entries need the CUDA backend"));
  if (!cuda_available()) {
    o.backend = Backend::Auto;
    CHECK_THROWS_AS(reconstruct(p.data, p.grid, o), Unsupported);
  }
}
