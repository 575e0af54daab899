// Off-resonance correction on a simulated spiral (issue 43's B0-SPIRAL problem): the Shepp-Logan
// phantom seen by a simulated coil array, spiral interleaves of a long readout, a smooth field map
// spanning --range Hz, noise at --snr. Reconstructs without the field (the uncorrected model), with
// time segmentation (the automatic L, then a sweep of L and both interpolators: the table of L vs
// error vs time) and, with --exact, with the exact field-corrected sums. Prints PSNR, seconds, L and
// the stated error bound per reconstruction; writes one PNG: truth | uncorrected | time-segmented
// | (exact) | field map.
//   spiral_b0 [--size 128] [--coils 4] [--interleaves 4] [--samples 4096] [--readout-ms 16]
//             [--range 200] [--snr 30] [--iterations 20] [--exact] [--sweep] [--out spiral_b0.png]
//
// The data (mri::simulate_field_acquisition): the rasterised phantom through the field model by time
// segmentation at an error below 1e-7 and the NUFFT at 1e-6 in float64 (far tighter than any
// reconstruction below, so none of them sees its own operator), plus complex white noise
// (mri::add_noise, linear SNR); the field map is mri::simulated_field_map (a bump on a ramp).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include <mri/mri.hpp>

#include "example_support.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// |image| scaled to the truth (the best complex scale), for the pictures.
mri::Image scaled(mri::Image image, const mri::Image &truth) {
  const mri::cfloat s = mri::best_scale(image, truth);
  for (mri::cfloat &v : image.values()) v *= s;
  return image;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"mri example: off-resonance correction of a long spiral readout (time segmentation, exact)"};
  int size = 128, coils = 4, interleaves = 4, samples = 4096, iterations = 20;
  double readout_ms = 16, range = 200, snr = 30;
  bool exact = false, sweep = false;
  std::string out = "spiral_b0.png";
  app.add_option("--size", size, "image size n (n x n)")->check(CLI::Range(16, 512));
  app.add_option("--coils", coils, "simulated coils")->check(CLI::Range(1, 32));
  app.add_option("--interleaves", interleaves, "spiral interleaves")->check(CLI::PositiveNumber);
  app.add_option("--samples", samples, "samples per interleave")->check(CLI::PositiveNumber);
  app.add_option("--readout-ms", readout_ms, "readout duration, ms")->check(CLI::PositiveNumber);
  app.add_option("--range", range, "field map range, Hz")->check(CLI::NonNegativeNumber);
  app.add_option("--snr", snr, "signal-to-noise ratio (linear)")->check(CLI::PositiveNumber);
  app.add_option("--iterations", iterations, "CG iterations")->check(CLI::NonNegativeNumber);
  app.add_flag("--exact", exact, "also the exact field-corrected sums (O(N M) per CG iteration and coil: slow)");
  app.add_flag("--sweep", sweep, "also L = 2 .. 12 (least squares) and the automatic Hanning L: the table of L vs error vs time");
  app.add_option("--out", out, "PNG output");
  CLI11_PARSE(app, argc, argv);

  const mri::Grid grid(size, size);
  const mri::Image truth = mri::Phantom::shepp_logan_2d().rasterize(grid);
  const auto field = std::make_shared<const mri::FieldMap>(mri::simulated_field_map(grid, range));
  const std::vector<float> times = mri::readout_times(interleaves, samples, readout_ms * 1e-3);
  const auto maps = std::make_shared<const mri::CoilSensitivities>(mri::SimulatedCoils(2, coils).maps(grid));

  auto t0 = std::chrono::steady_clock::now();
  const mri::KSpaceData data =
      mri::simulate_field_acquisition(truth, mri::traj::spiral(grid, interleaves, samples), *field, times, maps.get(), snr);
  std::printf("B0 spiral: %dx%d, %d coils, %d interleaves x %d samples over %.1f ms, field %.1f .. %.1f Hz, SNR %.0f "
              "(data simulated in %.1f s)\n",
              size, size, coils, interleaves, samples, readout_ms, field->min_hz(), field->max_hz(), snr, seconds_since(t0));

  mri::ReconOptions base;
  base.backend = mri::Backend::Cpu;
  base.solver.iterations = iterations;
  base.solver.tolerance = 0; // every iteration, so that times compare
  base.coils.sensitivities = maps;
  std::printf("%-32s %7s %7s %6s %6s %6s %4s %9s %9s\n", "reconstruction", "PSNR dB", "seconds", "setup", "F^H D", "Q",
              "L", "bound", "worst");
  const auto run = [&](const std::string &name, const mri::ReconOptions &o) {
    const mri::ReconResult r = mri::reconstruct(data, grid, o);
    const mri::ReconReport &p = r.report;
    std::printf("%-32s %7.2f %7.2f %6.2f %6.2f %6.2f %4d %9.2e %9.2e\n", name.c_str(), mri::psnr(scaled(r.image, truth), truth),
                p.total_seconds, p.setup_seconds, p.fhd_seconds, p.q_seconds, p.segments, p.segment_error, p.segment_max_error);
    return r;
  };
  const mri::ReconResult plain = run("uncorrected (nufft, toeplitz)", base);
  mri::ReconOptions corrected = base;
  corrected.offresonance.field_map = field;
  const mri::ReconResult segmented = run("time-segmented (auto L, ls)", corrected);
  std::vector<mri::Image> shown{truth, scaled(plain.image, truth), scaled(segmented.image, truth)};
  if (sweep) {
    for (int L = 2; L <= 12; L += 2) {
      mri::ReconOptions o = corrected;
      o.offresonance.segmentation.segments = L;
      run("time-segmented L = " + std::to_string(L) + " (ls)", o);
    }
    mri::ReconOptions hanning = corrected;
    hanning.offresonance.segmentation.interpolator = mri::SegmentInterpolator::Hanning;
    hanning.offresonance.segmentation.max_segments = 128;
    hanning.offresonance.segmentation.tolerance = 1e-2; // Hanning's error falls only as 1/L^2
    run("time-segmented (hanning, 1e-2)", hanning);
    mri::ReconOptions direct = corrected;
    direct.solver.normal = mri::Normal::Direct;
    run("time-segmented (auto L, direct)", direct);
  }
  if (exact) {
    mri::ReconOptions o = corrected;
    o.method = mri::Method::Exact;
    shown.push_back(scaled(run("exact field-corrected sums", o).image, truth));
  }
  mri::Image map_image(grid);
  for (std::size_t i = 0; i < map_image.size(); ++i) map_image[i] = field->hz()[i] - field->min_hz();
  shown.push_back(map_image);
  std::vector<mri::PngPanel> panels;
  const float white = 0; // each panel its own maximum
  for (const mri::Image &im : shown) panels.push_back({&im, white});
  mri::write_png_montage(out, panels);
  std::printf("wrote %s (truth | uncorrected | time-segmented%s | field map)\n", out.c_str(), exact ? " | exact" : "");
  return example::exit_status(segmented.report);
}
