// Reconstructs non-Cartesian k-space from BART files, as `bart pics -l2` does:
//   recon_cfl --size 256 [--sens maps] traj ksp image
//     traj: BART's 3 x samples x spokes, cycles/FOV; ksp: 1 x samples x spokes [x coils];
//     maps: size x size x 1 x coils (without it, multi-coil maps are estimated); image: size x size
// A plain program that links libmri: docs/performance.md times its start-up and peak memory
// against `bart pics` on the same files (tools/dev/bench-startup.sh).
#include <CLI/CLI.hpp>

#include <cstdio>

#include <mri/mri.hpp>

#include "example_support.hpp"

int main(int argc, char **argv) {
  CLI::App app{"mri: reconstruct BART .cfl k-space (single or multi-coil SENSE) by CG"};
  std::string traj_file, ksp_file, out_file, sens_file;
  int size = 256, iterations = 30;
  double lambda = 0;
  mri::Backend backend = mri::Backend::Cpu;
  app.add_option("traj", traj_file, "BART trajectory (no extension)")->required();
  app.add_option("ksp", ksp_file, "BART k-space 1 x samples x spokes (no extension)")->required();
  app.add_option("image", out_file, "BART image to write (no extension)")->required();
  app.add_option("--sens", sens_file, "BART coil maps size x size x 1 x coils (no extension); "
                                      "default: estimated from the k-space centre");
  app.add_option("--size", size, "image size n (n x n)")->check(CLI::Range(8, 4096));
  app.add_option("--iterations", iterations, "CG iterations")->check(CLI::NonNegativeNumber);
  app.add_option("--lambda", lambda, "Tikhonov weight (ours; BART's -r is lambda / voxels)")
      ->check(CLI::NonNegativeNumber);
  example::add_backend_option(app, backend, "cpu | cuda | auto");
  mri::ReconOptions options;
  example::add_method_options(app, options);
  CLI11_PARSE(app, argc, argv);

  try {
    const mri::Grid grid(size, size);
    const mri::bart::CflArray traj = mri::bart::read_cfl(traj_file);
    const mri::bart::CflArray ksp = mri::bart::read_cfl(ksp_file);
    mri::Trajectory t = mri::bart::to_trajectory(traj, 2);
    if (ksp.data.size() % t.size() != 0) {
      std::fprintf(stderr, "recon_cfl: %s holds %zu samples, not a whole number of coils of the trajectory's %zu\n",
                   ksp_file.c_str(), ksp.data.size(), t.size());
      return 2;
    }
    const int coils = static_cast<int>(ksp.data.size() / t.size());
    const mri::KSpaceData data(std::move(t), ksp.data, {}, coils);
    if (!sens_file.empty()) {
      mri::bart::CflArray sens = mri::bart::read_cfl(sens_file);
      const std::size_t maps = sens.data.size() / static_cast<std::size_t>(grid.voxels());
      options.coils.sensitivities =
          std::make_shared<const mri::CoilSensitivities>(grid, static_cast<int>(maps), std::move(sens.data));
    }
    options.solver.iterations = iterations;
    options.solver.lambda = lambda;
    options.solver.regularizer = lambda > 0 ? mri::Regularizer::Tikhonov : mri::Regularizer::None;
    options.backend = backend;
    const mri::ReconResult r = mri::reconstruct(data, grid, options);
    mri::bart::write_cfl(out_file, {grid.nx(), grid.ny()}, r.image.values());
    const mri::ReconReport &rep = r.report;
    std::printf("%s: %d coils (maps %s), %d iterations on %s, method %s: F^H D %.3f s, Q %.3f s, FFT setup %.3f s, CG %.3f s, total %.3f s\n",
                out_file.c_str(), rep.coils, rep.maps.c_str(), rep.iterations, mri::to_string(rep.backend), mri::to_string(rep.method),
                rep.fhd_seconds, rep.q_seconds, rep.fft_setup_seconds, rep.cg_seconds, rep.total_seconds);
    if (!rep.backend_note.empty()) std::printf("%s\n", rep.backend_note.c_str());
  } catch (const mri::Error &e) {
    std::fprintf(stderr, "recon_cfl: %s\n", e.what());
    return 1;
  }
  return 0;
}
