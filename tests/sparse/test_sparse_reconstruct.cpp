// mri::reconstruct with sparse terms (ReconOptions::solver.terms): better images than l2 on
// undersampled radial data, the data scaling's invariance, the report, and bad terms refused
// before any work.
#include <cmath>
#include <vector>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/metrics.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "recon_test_options.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// 64^2 Shepp-Logan from 24 golden-angle spokes (4x below Nyquist's ~100), SNR 30 (linear), one coil.
struct Undersampled {
  Grid grid{64, 64};
  Trajectory trajectory = traj::radial(grid, 24, 128, traj::SpokeOrder::GoldenAngle);
  Image truth = Phantom::shepp_logan_2d().rasterize(grid);
  std::vector<cfloat> samples;
  explicit Undersampled(double scale = 1.0) : samples(Phantom::shepp_logan_2d().kspace(trajectory, grid)) {
    add_noise(samples, 30.0, 17);
    for (cfloat &s : samples) s *= static_cast<float>(scale);
  }
  KSpaceData data() const { return KSpaceData(trajectory, samples); }
};

SparseTerm term(SparsePenalty p, double lambda) {
  SparseTerm t;
  t.penalty = p;
  t.lambda = lambda;
  return t;
}

double scaled_psnr(const Image &x, const Image &truth) {
  Image s = x;
  const cfloat a = best_scale(x, truth);
  for (cfloat &v : s.values()) v *= a;
  return psnr(s, truth);
}

} // namespace

TEST_CASE("sparse reconstruct: TV and wavelet beat l2 on undersampled radial data", "[sparse]") {
  const Undersampled p;
  ReconOptions l2 = test::fixed_iterations(30);
  l2.solver.lambda = 0; // the best l2 on this data stops early instead (iterations as regulariser)
  l2.solver.iterations = 8;
  const double psnr_l2 = scaled_psnr(reconstruct(p.data(), p.grid, l2).image, p.truth);

  ReconOptions tv = test::fixed_iterations(60);
  tv.solver.terms = {term(SparsePenalty::TotalVariation, 0.256)}; // BART's 4e-3 (times sqrt(4096))
  const ReconResult r_tv = reconstruct(p.data(), p.grid, tv);
  ReconOptions w = test::fixed_iterations(60);
  w.solver.terms = {term(SparsePenalty::L1Wavelet, 0.192)}; // BART's 3e-3
  const ReconResult r_w = reconstruct(p.data(), p.grid, w);
  const double psnr_tv = scaled_psnr(r_tv.image, p.truth), psnr_w = scaled_psnr(r_w.image, p.truth);
  INFO("l2 " << psnr_l2 << " dB, tv " << psnr_tv << " dB, wavelet " << psnr_w << " dB");
  CHECK(psnr_tv > psnr_l2 + 2.0);
  CHECK(psnr_w > psnr_l2 + 1.0);
  CHECK(r_tv.report.solver == "fista"); // one term: FISTA, TV's map by inner iterations
  CHECK(r_w.report.solver == "fista");
  CHECK(r_w.report.lipschitz > 0);
  CHECK(r_w.report.data_scale > 0);
  REQUIRE(r_tv.report.objective.size() == 61);
  CHECK(r_tv.report.objective.back() < r_tv.report.objective.front());
  CHECK(r_tv.report.iterations == 60);
  CHECK(r_tv.report.status == CgStatus::MaxIterations);
}

TEST_CASE("sparse reconstruct: with BART's scaling the image follows the data's units", "[sparse]") {
  // lambda is relative to the scaled data: data x 1000 gives the image x 1000, the iterations alike.
  const Undersampled a(1.0), b(1000.0);
  ReconOptions o = test::fixed_iterations(20);
  o.solver.terms = {term(SparsePenalty::TotalVariation, 0.1)};
  // ADMM's x-updates to their 10 CG iterations: a CG stopped at a tolerance decides by a float
  // comparison, which rounding at another scale may flip (1e-2 apart then, both valid images).
  o.solver.proximal.admm_cg_tolerance = 0;
  const Image xa = reconstruct(a.data(), a.grid, o).image;
  Image xb = reconstruct(b.data(), b.grid, o).image;
  for (cfloat &v : xb.values()) v /= 1000.0f;
  // 1e-3: float32 rounding of the scaled arithmetic, and ADMM's rho balancing compares residuals
  // of that arithmetic (a near tie may double rho one iteration apart).
  CHECK(test::relative_error(xb, xa) < 1e-3);
}

TEST_CASE("sparse reconstruct: bad terms are refused naming the term", "[sparse][bad-input]") {
  const Undersampled p;
  const auto refused = [&](SparseTerm t, const std::string &needle, ProximalAlgorithm a = ProximalAlgorithm::Auto) {
    ReconOptions o = test::fixed_iterations(5);
    o.solver.terms = {t};
    o.solver.proximal.algorithm = a;
    try {
      reconstruct(p.data(), p.grid, o);
      FAIL("accepted " << to_string(t));
    } catch (const InvalidArgument &e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
  };
  refused(term(SparsePenalty::L1Wavelet, -1), "lambda");
  refused(term(SparsePenalty::TotalVariation, NAN), "lambda");
  SparseTerm z = term(SparsePenalty::TotalVariation, 0.1);
  z.axes = 4; // z on a 2D grid
  refused(z, "axes");
  SparseTerm joint = term(SparsePenalty::L1Wavelet, 0.1);
  joint.joint = 8;
  refused(joint, "joint");
  ReconOptions two = test::fixed_iterations(5);
  two.solver.terms = {term(SparsePenalty::TotalVariation, 0.1), term(SparsePenalty::L1Wavelet, 0.1)};
  two.solver.proximal.algorithm = ProximalAlgorithm::Fista;
  CHECK_THROWS_WITH(reconstruct(p.data(), p.grid, two), test::contains("fista"));
  ReconOptions rho = test::fixed_iterations(5);
  rho.solver.terms = {term(SparsePenalty::TotalVariation, 0.1)};
  rho.solver.proximal.admm_rho = 0;
  CHECK_THROWS_AS(reconstruct(p.data(), p.grid, rho), InvalidArgument);
  // A wavelet needs an axis of at least kWaveletMinSplitExtent samples.
  const Grid small(8, 8);
  const Trajectory t = traj::radial(small, 8, 16);
  ReconOptions w = test::fixed_iterations(5);
  w.solver.terms = {term(SparsePenalty::L1Wavelet, 0.1)};
  CHECK_THROWS_AS(reconstruct(KSpaceData(t, test::random_complex(t.size(), 3)), small, w), InvalidArgument);
}
