// Multi-coil SENSE in 2D: the Shepp-Logan phantom seen by a simulated 8-coil array (exact
// multi-coil k-space, no inverse crime), undersampled radial spokes with noise, coil maps
// estimated from the data's k-space centre, and SENSE conjugate gradient. Prints PSNR per CG
// iteration and the report; writes one PNG, top row the maps |S_c| (estimated), middle row the
// coil images (gridding of each coil), bottom row truth x RSS | root-sum-of-squares gridding |
// SENSE | error x4:
//   sense_2d [--size 256] [--coils 8] [--spokes 96] [--out sense_2d.png] [--true-maps]
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include <mri/mri.hpp>

#include "example_support.hpp"

namespace {

// Coil c's data alone, as single-coil KSpaceData.
mri::KSpaceData coil_data(const mri::KSpaceData &data, int c) {
  const std::size_t m = data.samples_per_coil();
  const auto first = data.samples().begin() + static_cast<std::ptrdiff_t>(c * m);
  return mri::KSpaceData(data.trajectory(), std::vector<mri::cfloat>(first, first + static_cast<std::ptrdiff_t>(m)),
                         data.weights());
}

mri::Image map_image(const mri::CoilSensitivities &maps, int c) {
  const auto s = maps.map(c);
  return mri::Image(maps.grid(), std::vector<mri::cfloat>(s.begin(), s.end()));
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"mri example: 8-coil SENSE with estimated maps (2D radial)"};
  int size = 256, coils = 8, spokes = 96, iterations = 30;
  double snr = 60, lambda_per_voxel = 3e-2;
  bool true_maps = false;
  std::string out = "sense_2d.png";
  mri::Backend backend = mri::Backend::Auto;
  app.add_option("--size", size, "image size n (n x n)")->check(CLI::Range(32, 1024));
  app.add_option("--coils", coils, "simulated coils")->check(CLI::Range(1, 64));
  app.add_option("--spokes", spokes, "radial spokes (n spokes sample the edge at Nyquist)")->check(CLI::PositiveNumber);
  app.add_option("--iterations", iterations, "CG iterations")->check(CLI::NonNegativeNumber);
  app.add_option("--snr", snr, "signal-to-noise ratio (linear)")->check(CLI::PositiveNumber);
  app.add_option("--lambda", lambda_per_voxel, "Tikhonov weight per voxel (lambda / voxels)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--true-maps", true_maps, "use the simulator's maps instead of estimating them");
  mri::ReconOptions options;
  app.add_option("--calibration", options.coils.estimation.calibration, "map estimate: calibration width, cycles/FOV")
      ->capture_default_str();
  app.add_flag_callback("--espirit", [&] { options.coils.estimation.method = mri::MapEstimate::Espirit; },
                        "estimate the maps by ESPIRiT (default: the direct, caldir-style estimate)");
  app.add_option("--mask", options.coils.estimation.mask_threshold,
                 "map estimate: maps are zero where the low-resolution RSS is below this fraction of its peak")
      ->capture_default_str();
  example::add_backend_option(app, backend, "auto | cpu | cuda");
  app.add_option("--out", out, "PNG to write");
  CLI11_PARSE(app, argc, argv);

  try {
    const mri::Grid grid(size, size);
    const auto phantom = mri::Phantom::shepp_logan_2d();
    const mri::SimulatedCoils array(2, coils);
    auto traj = mri::traj::radial(grid, spokes, 2 * size, mri::traj::SpokeOrder::GoldenAngle);
    auto weights = mri::density::radial(traj, grid, spokes);
    auto y = array.kspace(phantom, traj, grid);
    mri::add_noise(y, snr, 1);
    const mri::KSpaceData data(std::move(traj), std::move(y), std::move(weights), coils);
    const auto truth_maps = std::make_shared<const mri::CoilSensitivities>(array.maps(grid));
    std::printf("grid %dx%d, %d coils, radial %d spokes x %d = %zu samples per coil (%.1fx below Nyquist), SNR %.0f\n",
                size, size, coils, spokes, 2 * size, data.samples_per_coil(), size * 3.14159 / 2 / spokes, snr);

    // What each reconstruction should return: with the true maps the phantom; with estimated
    // (RSS-normalised) maps the phantom times the true maps' root-sum-of-squares.
    const mri::Image rho = phantom.rasterize(grid);
    const mri::Image rss = truth_maps->root_sum_of_squares();
    mri::Image truth = rho;
    if (!true_maps)
      for (std::size_t i = 0; i < truth.size(); ++i) truth[i] *= rss[i].real();

    options.backend = backend;
    options.method = mri::Method::Nufft;
    options.solver.iterations = iterations;
    options.solver.regularizer = mri::Regularizer::Tikhonov;
    options.solver.lambda = lambda_per_voxel * static_cast<double>(grid.voxels());
    // The maps, estimated once here (for the picture too) unless the simulator's are asked for.
    options.coils.sensitivities =
        true_maps ? truth_maps
                  : std::make_shared<const mri::CoilSensitivities>(
                        mri::estimate_sensitivities(data, grid, options.coils.estimation));
    options.on_iteration = [&](int k, const mri::Image &x, double residual) {
      if (k % 5 == 0) std::printf("  CG %2d  residual %.3e  PSNR %.2f dB\n", k, residual, mri::psnr(x, truth));
    };
    const mri::ReconResult r = mri::reconstruct(data, grid, options);
    const mri::ReconReport &rep = r.report;
    std::printf("backend %s, %d coils, maps %s\n", mri::to_string(rep.backend), rep.coils,
                true_maps ? "the simulator's" : to_string(options.coils.estimation.method));
    std::printf("F^H D %.3f s, Q %.3f s, CG %.3f s (%d iterations), total %.3f s\n",
                rep.fhd_seconds, rep.q_seconds, rep.cg_seconds, rep.iterations, rep.total_seconds);

    // The baselines: each coil gridded, and their root-sum-of-squares.
    std::vector<mri::Image> coil_images;
    for (int c = 0; c < coils; ++c) coil_images.push_back(mri::gridding_reconstruction(coil_data(data, c), grid));
    mri::Image combined = mri::gridding_reconstruction(data, grid);
    const mri::cfloat s = mri::best_scale(combined, truth);
    for (auto &v : combined.values()) v *= s;
    const double psnr_sense = mri::psnr(r.image, truth), psnr_rss = mri::psnr(combined, truth);
    std::printf("PSNR: root-sum-of-squares gridding %.2f dB, SENSE %.2f dB\n", psnr_rss, psnr_sense);

    std::vector<mri::Image> maps;
    for (int c = 0; c < coils; ++c) maps.push_back(map_image(*options.coils.sensitivities, c));
    const mri::Image error = example::error_image(r.image, truth);
    // Three montages stacked: the PNG writer lays panels side by side, so write the rows apart.
    std::vector<mri::PngPanel> row_maps, row_coils;
    for (int c = 0; c < coils; ++c) {
      row_maps.push_back({&maps[c], 0});
      row_coils.push_back({&coil_images[c], 0});
    }
    float peak = 0;
    for (const auto &v : truth.values()) peak = std::max(peak, std::abs(v));
    const std::vector<mri::PngPanel> row_result{{&truth, peak}, {&combined, peak}, {&r.image, peak}, {&error, peak / 4}};
    const std::string stem = out.substr(0, out.rfind('.'));
    mri::write_png_montage(stem + "_maps.png", row_maps);
    mri::write_png_montage(stem + "_coils.png", row_coils);
    mri::write_png_montage(out, row_result);
    std::printf("wrote %s (truth | RSS gridding | SENSE | error x4), %s_maps.png, %s_coils.png\n", out.c_str(),
                stem.c_str(), stem.c_str());
    return example::exit_status(rep);
  } catch (const mri::Error &e) {
    std::fprintf(stderr, "sense_2d: %s\n", e.what());
    return 1;
  }
}
