// A 3D koosh-ball reconstruction: the 3D Shepp-Logan phantom sampled along radial spokes through
// the centre of k-space (directions on a golden-spiral lattice, analytic k-space + noise),
// reconstructed by conjugate gradient (on the GPU when one is present). Prints each phase's time
// (the Amdahl split) and the PSNR; writes the central slices as one PNG:
//   truth (xy) | CG (xy) | CG (xz) | CG (yz) | error (xy, x4)
// The defaults are MISSION.md's RECON-3D problem (128^3, 4096 x 256 = 2^20 samples, 20 iterations).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <mri/mri.hpp>

#include "example_support.hpp"

namespace {

// The central plane of a volume normal to `axis` (0: yz, 1: xz, 2: xy) as a 2D image.
mri::Image central_slice(const mri::Image &v, int axis) {
  const mri::Grid &g = v.grid();
  const int a = axis == 0 ? 1 : 0, b = axis == 2 ? 1 : 2; // the in-plane axes
  mri::Image s(mri::Grid(g.extent(a), g.extent(b)));
  std::int64_t pos[3] = {g.nx() / 2, g.ny() / 2, g.nz() / 2};
  for (std::int64_t j = 0; j < g.extent(b); ++j)
    for (std::int64_t i = 0; i < g.extent(a); ++i) {
      pos[a] = i;
      pos[b] = j;
      s.at(i, j) = v.at(pos[0], pos[1], pos[2]);
    }
  return s;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"mri example: 3D koosh-ball Shepp-Logan reconstruction"};
  int size = 128, spokes = 4096, readout = 256, iterations = 20;
  double snr = 50, lambda = 0;
  std::string out = "koosh_3d.png", cache;
  mri::Backend backend = mri::Backend::Auto;
  app.add_option("--size", size, "image size n (n^3 voxels)")->check(CLI::Range(8, 512));
  app.add_option("--spokes", spokes, "radial spokes")->check(CLI::PositiveNumber);
  app.add_option("--readout", readout, "samples per spoke")->check(CLI::PositiveNumber);
  app.add_option("--snr", snr, "signal-to-noise ratio (linear)")->check(CLI::PositiveNumber);
  app.add_option("--iterations", iterations, "CG iterations")->check(CLI::NonNegativeNumber);
  app.add_option("--lambda", lambda, "finite-difference regularisation weight")->check(CLI::NonNegativeNumber);
  example::add_backend_option(app, backend, "auto | cpu | cuda (the CPU takes minutes at 128^3 with --method exact)");
  app.add_option("--q-cache", cache, "directory of the Toeplitz kernel cache (a second run loads Q)");
  mri::ReconOptions options;
  example::add_method_options(app, options);
  app.add_option("--out", out, "PNG to write");
  CLI11_PARSE(app, argc, argv);

  try {
    const mri::Grid grid(size, size, size);
    const auto phantom = mri::Phantom::shepp_logan_3d();
    auto traj = mri::traj::koosh(grid, spokes, readout);
    auto samples = example::noisy_kspace(phantom, traj, grid, snr);
    const mri::KSpaceData data(std::move(traj), std::move(samples));
    const mri::Image truth = phantom.rasterize(grid, 2);
    std::printf("grid %d^3, koosh %d x %d = %zu samples, SNR %.0f\n", size, spokes, readout, data.samples_per_coil(),
                snr);

    options.solver.iterations = iterations;
    options.solver.lambda = lambda;
    options.solver.regularizer = lambda > 0 ? mri::Regularizer::FiniteDifference : mri::Regularizer::None;
    options.backend = backend;
    options.q_cache_dir = cache;
    const mri::ReconResult result = mri::reconstruct(data, grid, options);
    const auto &r = result.report;
    if (!r.backend_note.empty()) std::printf("%s\n", r.backend_note.c_str());
    std::printf("backend %s, method %s: F^H D %.3f s, Q %.3f s, FFT setup %.3f s, CG %.3f s (%d iterations, %s), "
                "transfers %.3f s, setup %.3f s, total %.3f s\n",
                mri::to_string(r.backend), mri::to_string(r.method), r.fhd_seconds, r.q_seconds, r.fft_setup_seconds, r.cg_seconds,
                r.iterations, mri::to_string(r.status), r.transfer_seconds, r.setup_seconds, r.total_seconds);
    if (!cache.empty())
      std::printf("Q cache: %s %s %s\n", mri::to_string(r.q_cache), r.q_cache_file.string().c_str(),
                  r.q_cache_message.c_str());
    std::printf("PSNR %.2f dB\n", mri::psnr(result.image, truth));

    // The 3D Shepp-Logan's skull is 2.0 and its soft tissue 1.0 .. 1.4: show magnitudes up to the
    // truth's maximum (the error panel x4).
    float peak = 0;
    for (const auto &v : truth.values()) peak = std::max(peak, std::abs(v));
    const mri::Image error = example::error_image(result.image, truth);
    const mri::Image truth_xy = central_slice(truth, 2), xy = central_slice(result.image, 2),
                     xz = central_slice(result.image, 1), yz = central_slice(result.image, 0),
                     error_xy = central_slice(error, 2);
    mri::write_png_montage(out, {{&truth_xy, peak}, {&xy, peak}, {&xz, peak}, {&yz, peak}, {&error_xy, peak / 4}});
    std::printf("wrote %s (truth xy | CG xy | CG xz | CG yz | error xy x4)\n", out.c_str());
    return example::exit_status(r);
  } catch (const mri::Error &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
