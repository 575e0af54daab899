// The README's first command: a 2D Shepp-Logan phantom sampled along a spiral (analytic
// k-space + noise), reconstructed by F^H D alone and by conjugate gradient. Prints PSNR per
// CG iteration and the time of each phase; writes truth | adjoint | CG | error as a PNG.
#include <CLI/CLI.hpp>

#include <cstdio>

#include <mri/mri.hpp>

#include "example_support.hpp"

int main(int argc, char **argv) {
  CLI::App app{"mri demo: 2D spiral Shepp-Logan, adjoint vs CG"};
  int size = 128, interleaves = 16, samples = 2048, iterations = 20;
  double snr = 50, lambda = 0;
  std::string out = "demo.png";
  mri::Backend backend = mri::Backend::Auto;
  app.add_option("--size", size, "image size n (n x n)")->check(CLI::Range(8, 1024));
  app.add_option("--interleaves", interleaves, "spiral interleaves")->check(CLI::PositiveNumber);
  app.add_option("--samples", samples, "samples per interleave")->check(CLI::PositiveNumber);
  app.add_option("--snr", snr, "signal-to-noise ratio (linear, RMS signal / noise std)")->check(CLI::PositiveNumber);
  app.add_option("--iterations", iterations, "CG iterations")->check(CLI::NonNegativeNumber);
  app.add_option("--lambda", lambda, "Tikhonov weight")->check(CLI::NonNegativeNumber);
  example::add_backend_option(app, backend, "auto | cpu | cuda");
  mri::ReconOptions options;
  example::add_method_options(app, options);
  app.add_option("--out", out, "PNG to write");
  CLI11_PARSE(app, argc, argv);

  try {
    const mri::Grid grid(size, size);
    const auto phantom = mri::Phantom::shepp_logan_2d();
    const mri::Image truth = phantom.rasterize(grid);
    auto traj = mri::traj::spiral(grid, interleaves, samples);
    auto samples_k = example::noisy_kspace(phantom, traj, grid, snr);
    const mri::KSpaceData data(std::move(traj), std::move(samples_k));
    std::printf("grid %lldx%lld, spiral %d x %d = %zu samples, SNR %.0f\n", static_cast<long long>(grid.nx()),
                static_cast<long long>(grid.ny()), interleaves, samples, data.samples_per_coil(), snr);

    options.solver.iterations = iterations;
    options.solver.lambda = lambda;
    options.solver.regularizer = lambda > 0 ? mri::Regularizer::Tikhonov : mri::Regularizer::None;
    options.backend = backend;
    options.on_iteration = [&](int k, const mri::Image &x, double residual) {
      std::printf("  CG %2d  residual %.3e  PSNR %.2f dB\n", k, residual, mri::psnr(x, truth));
    };
    const mri::ReconResult result = mri::reconstruct(data, grid, options);

    // The adjoint alone is unnormalised: put it on the truth's scale before PSNR.
    mri::Image adjoint = mri::FhDOperator(data.trajectory(), grid, {result.report.backend}).apply(data);
    const mri::cfloat s = mri::best_scale(adjoint, truth);
    for (auto &v : adjoint.values()) v *= s;

    const mri::Image error = example::error_image(result.image, truth);
    const auto &r = result.report;
    if (!r.backend_note.empty()) std::printf("%s\n", r.backend_note.c_str());
    std::printf("backend %s, method %s: F^H D %.3f s, Q %.3f s, CG %.3f s (%d iterations, %s), total %.3f s\n",
                mri::to_string(r.backend), mri::to_string(r.method), r.fhd_seconds, r.q_seconds, r.cg_seconds, r.iterations,
                mri::to_string(r.status), r.total_seconds);
    std::printf("PSNR: adjoint F^H D (best scale) %.2f dB, CG %.2f dB\n", mri::psnr(adjoint, truth),
                mri::psnr(result.image, truth));
    mri::write_png_montage(out, {{&truth, 1.0f}, {&adjoint, 1.0f}, {&result.image, 1.0f}, {&error, 0.25f}});
    std::printf("wrote %s (truth | adjoint | CG | error x4)\n", out.c_str());
    return example::exit_status(r);
  } catch (const mri::Error &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
