// Compressed sensing in 2D (docs/sparse.md): the 256^2 Shepp-Logan phantom seen by 4 simulated
// coils, golden-angle radial with 48 spokes of 512 samples (2x oversampled readout; 48 of the 403
// spokes Nyquist needs, 8.4x below), complex noise at 30 dB SNR, reconstructed four ways with the
// simulator's maps: l2 (CG, Tikhonov and few iterations), l1-wavelet (FISTA), total variation
// (FISTA) and wavelet + TV (ADMM). Each writes <out>_<name>.png (reconstruction | error x4) and
// prints its PSNR against the phantom (after the least-squares scale), solver, step, L and seconds:
//   cs_radial_2d [--backend auto|cpu|cuda] [--iterations 100] [--lambda-wavelet 0.768] [--lambda-tv 2.56]
//                [--combined-solver admm|primal-dual] [--only l2 wavelet tv wavelet+tv] [--out stem]
// The lambdas are the SDK's: the sparse ones (SparseTerm::lambda) act on the data scaled as
// BART's pics scales them, and an l1 lambda is BART's -R W:3:0:L times sqrt(voxels) (256 here:
// 0.768 is BART's 3e-3); the l2 one (CG, no data scaling) is 0.5 lambda ||x||^2 against the data
// as simulated (docs/sparse.md, "Lambda units").
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <mri/mri.hpp>

#include "example_support.hpp"

namespace {

struct Recon {
  std::string name;
  mri::ReconOptions options;
};

mri::SparseTerm term(mri::SparsePenalty penalty, double lambda) {
  mri::SparseTerm t;
  t.penalty = penalty;
  t.lambda = lambda;
  return t;
}

// Runs one reconstruction, prints its line and writes its picture; returns the exit status.
int run(const Recon &r, const mri::KSpaceData &data, const mri::Image &truth, const std::string &stem) {
  mri::ReconResult result = mri::reconstruct(data, truth.grid(), r.options);
  const mri::cfloat s = mri::best_scale(result.image, truth);
  for (auto &v : result.image.values()) v *= s;
  const double db = mri::psnr(result.image, truth);
  const mri::ReconReport &rep = result.report;
  std::printf("%-10s %-11s %3d iterations  PSNR %5.2f dB  step %.3g  L %.3g  solver %6.2f s  total %6.2f s  (%s)\n",
              r.name.c_str(), rep.solver.c_str(), rep.iterations, db, rep.step, rep.lipschitz, rep.cg_seconds,
              rep.total_seconds, mri::to_string(rep.backend));
  const mri::Image error = example::error_image(result.image, truth);
  const std::string path = stem + "_" + r.name + ".png";
  mri::write_png_montage(path, {{&result.image, 1.0f}, {&error, 0.25f}});
  return example::exit_status(rep);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"mri example: compressed sensing (l2, l1-wavelet, TV) on undersampled golden-angle radial data"};
  int iterations = 100, l2_iterations = 20, spokes = 48;
  double snr_db = 30, lambda_l2 = 1e3, lambda_wavelet = 0.768, lambda_tv = 2.56, combined_wavelet = 0.768,
         combined_tv = 2.56;
  std::string out = "cs_radial_2d";
  std::vector<std::string> only;
  bool cycle_spinning = true;
  mri::ProximalAlgorithm combined_solver = mri::ProximalAlgorithm::Admm;
  mri::Backend backend = mri::Backend::Auto;
  example::add_backend_option(app, backend, "auto | cpu | cuda");
  app.add_option("--iterations", iterations, "iterations of the sparse solvers")->check(CLI::NonNegativeNumber);
  app.add_option("--l2-iterations", l2_iterations, "CG iterations of the l2 reconstruction (early stopping)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--spokes", spokes, "golden-angle spokes of 512 samples")->check(CLI::PositiveNumber);
  app.add_option("--snr", snr_db, "signal-to-noise ratio of the k-space, dB");
  app.add_option("--lambda-l2", lambda_l2, "l2: Tikhonov weight (0.5 lambda ||x||^2, the data unscaled)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lambda-wavelet", lambda_wavelet, "W: l1-wavelet weight (SparseTerm::lambda)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lambda-tv", lambda_tv, "T: total variation weight (SparseTerm::lambda)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--combined-wavelet", combined_wavelet, "W+T: the wavelet term's weight")->check(CLI::NonNegativeNumber);
  app.add_option("--combined-tv", combined_tv, "W+T: the TV term's weight")->check(CLI::NonNegativeNumber);
  app.add_option("--combined-solver", combined_solver, "W+T: admm | primal-dual")
      ->transform(CLI::CheckedTransformer(std::map<std::string, mri::ProximalAlgorithm>{
          {"admm", mri::ProximalAlgorithm::Admm}, {"primal-dual", mri::ProximalAlgorithm::PrimalDual}}));
  app.add_flag("!--no-cycle-spinning", cycle_spinning, "wavelet terms: no random shifts");
  app.add_option("--only", only, "run only these: l2 wavelet tv wavelet+tv");
  app.add_option("--out", out, "stem of the PNGs (<out>_<name>.png)");
  CLI11_PARSE(app, argc, argv);

  try {
    const mri::Grid grid(256, 256);
    const int coils = 4, readout = 2 * 256; // 2x oversampled: k = -128 .. 127.5 in steps of 0.5
    const auto phantom = mri::Phantom::shepp_logan_2d();
    const mri::SimulatedCoils array(2, coils);
    auto traj = mri::traj::radial(grid, spokes, readout, mri::traj::SpokeOrder::GoldenAngle);
    auto y = array.kspace(phantom, traj, grid);
    mri::add_noise(y, std::pow(10.0, snr_db / 20), 2026); // add_noise takes the linear amplitude ratio
    // No density weights: the objective is the plain least squares of BART's pics.
    const mri::KSpaceData data(std::move(traj), std::move(y), {}, coils);
    const mri::Image truth = phantom.rasterize(grid);
    std::printf("256x256, %d coils, golden-angle radial %d spokes x %d samples (%.1fx below Nyquist), %.0f dB SNR\n",
                coils, spokes, readout, 256 * M_PI / 2 / spokes, snr_db);

    mri::ReconOptions base;
    base.backend = backend;
    base.method = mri::Method::Nufft;
    base.coils.sensitivities = std::make_shared<const mri::CoilSensitivities>(array.maps(grid));
    base.solver.iterations = iterations;
    base.solver.tolerance = 0; // run every iteration, as bart pics -i does
    base.solver.proximal.cycle_spinning = cycle_spinning;

    std::vector<Recon> recons(4, Recon{"", base});
    recons[0].name = "l2";
    recons[0].options.solver.iterations = l2_iterations;
    recons[0].options.solver.lambda = lambda_l2;
    recons[0].options.solver.regularizer = lambda_l2 > 0 ? mri::Regularizer::Tikhonov : mri::Regularizer::None;
    recons[1].name = "wavelet";
    recons[1].options.solver.terms = {term(mri::SparsePenalty::L1Wavelet, lambda_wavelet)};
    recons[2].name = "tv";
    recons[2].options.solver.terms = {term(mri::SparsePenalty::TotalVariation, lambda_tv)};
    recons[3].name = "wavelet+tv";
    recons[3].options.solver.terms = {term(mri::SparsePenalty::L1Wavelet, combined_wavelet),
                                      term(mri::SparsePenalty::TotalVariation, combined_tv)};
    recons[3].options.solver.proximal.algorithm = combined_solver;

    int status = 0;
    for (const Recon &r : recons)
      if (only.empty() || std::find(only.begin(), only.end(), r.name) != only.end())
        status |= run(r, data, truth, out);
    std::printf("wrote %s_{l2,wavelet,tv,wavelet+tv}.png (reconstruction | error x4)\n", out.c_str());
    return status;
  } catch (const mri::Error &e) {
    std::fprintf(stderr, "cs_radial_2d: %s\n", e.what());
    return 1;
  }
}
