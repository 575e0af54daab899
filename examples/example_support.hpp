#pragma once
// What the examples share: the --backend option, the noisy phantom data they reconstruct, the
// error panel of their pictures, and the exit status of a reconstruction.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <mri/mri.hpp>

namespace example {

// --backend auto | cpu | cuda, parsed into `backend`.
inline CLI::Option *add_backend_option(CLI::App &app, mri::Backend &backend, const std::string &help) {
  const std::map<std::string, mri::Backend> backends{
      {"auto", mri::Backend::Auto}, {"cpu", mri::Backend::Cpu}, {"cuda", mri::Backend::Cuda}};
  return app.add_option("--backend", backend, help)->transform(CLI::CheckedTransformer(backends));
}

// --method auto | exact | nufft (default: auto, as ReconOptions) and --nufft-tolerance, parsed into
// the reconstruction options.
inline void add_method_options(CLI::App &app, mri::ReconOptions &options) {
  const std::map<std::string, mri::Method> methods{
      {"auto", mri::Method::Auto}, {"exact", mri::Method::Exact}, {"nufft", mri::Method::Nufft}};
  app.add_option("--method", options.method,
                 "auto | exact | nufft: F^H D and Q by the exact sums or the gridding NUFFT; auto: the NUFFT on the "
                 "CPU, the faster of the two on the GPU")
      ->transform(CLI::CheckedTransformer(methods))
      ->default_str("auto");
  app.add_option("--nufft-tolerance", options.nufft.tolerance, "the NUFFT's relative error bound (1e-6 .. 1e-2)");
}

// The phantom's analytic k-space along `trajectory` plus noise at `snr`; the seed is fixed so
// that every run of an example shows the same picture.
inline std::vector<mri::cfloat> noisy_kspace(const mri::Phantom &phantom, const mri::Trajectory &trajectory,
                                             const mri::Grid &grid, double snr) {
  auto samples = phantom.kspace(trajectory, grid);
  mri::add_noise(samples, snr, 2026);
  return samples;
}

// image - truth, voxel by voxel.
inline mri::Image error_image(const mri::Image &image, const mri::Image &truth) {
  mri::Image error(truth.grid());
  for (std::size_t i = 0; i < error.size(); ++i) error[i] = image[i] - truth[i];
  return error;
}

// main's status after a reconstruction: 1 when CG stopped on a non-finite value, else 0.
inline int exit_status(const mri::ReconReport &report) { return report.status == mri::CgStatus::NonFinite ? 1 : 0; }

} // namespace example
