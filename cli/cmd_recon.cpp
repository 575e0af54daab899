// `mri recon`: mri::reconstruct on ISMRMRD or BART inputs, every ReconOptions field an option,
// outputs by extension, --report FILE.json. Multi-coil data: each coil reconstructed alone and
// combined by root-sum-of-squares until SENSE (issue 11) replaces it.
#include <cmath>

#include "commands.hpp"
#include "outputs.hpp"
#include "progress.hpp"
#include "recon_inputs.hpp"
#include "report.hpp"

namespace mri::cli {
namespace {

struct ReconArgs {
  InputArgs input;
  std::vector<std::string> out;
  std::string report, sens;
  ReconOptions options;
  double device_memory_mib = 0;
  bool quiet = false, complex = false;
};

void add_solver_options(CLI::App &cmd, ReconArgs &a) {
  ReconOptions &o = a.options;
  cmd.add_option("--iterations", o.iterations, "CG iterations")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--tolerance", o.tolerance, "CG stops at this relative residual")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--lambda", o.lambda, "regularisation weight; with BART inputs BART's (pics -r, unitary F), else ours")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  add_enum(cmd, "--regularizer", o.regularizer, kRegularizers, "none | tikhonov | finite-difference (tikhonov when --lambda > 0 and none given)");
  add_enum(cmd, "--method", o.method, kMethods, "exact sums or the gridding NUFFT for F^H D and Q");
  add_enum(cmd, "--normal", o.normal, kNormals, "F^H W F by Toeplitz embedding or two direct sums per iteration");
  add_enum(cmd, "--backend", o.backend, kBackends, "where it runs (auto: CUDA when a GPU is usable)");
  add_enum(cmd, "--policy", o.policy, kPolicies, "CUDA F^H D kernel policy (the seeds' stages)");
  add_enum(cmd, "--precision", o.precision, kPrecisions, "precision of F^H D and Q");
  cmd.add_option("--nufft-tolerance", o.nufft_tolerance, "--method nufft: relative error bound (1e-6 .. 1e-2)")->capture_default_str();
  add_enum(cmd, "--nufft-gridding", o.nufft_gridding, kGriddings, "--method nufft: how the adjoint grids");
  cmd.add_option("--q-cache", o.q_cache_dir, "directory of the Toeplitz kernel cache (empty: none)");
  cmd.add_option("--device-memory", a.device_memory_mib, "GPU memory the reconstruction may use, MiB (0: what is free)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
}

void add_io_options(CLI::App &cmd, ReconArgs &a) {
  cmd.add_option("--in", a.input.in, "ISMRMRD raw data (.h5)");
  cmd.add_option("--traj", a.input.traj, "BART trajectory [3, samples, ...] in cycles/FOV");
  cmd.add_option("--kspace", a.input.kspace, "BART k-space [1, samples, ..., coils]");
  cmd.add_option("--weights", a.input.weights, "BART density weights [1, samples, ...] (real part used)");
  cmd.add_option("--sens", a.sens, "BART coil maps (SENSE: issue 11, not yet)");
  cmd.add_option("--matrix", a.input.matrix, "image matrix nx,ny[,nz] (voxels; BART inputs)");
  cmd.add_option("--fov", a.input.fov, "BART inputs: field of view x,y[,z] in whole mm (NIfTI voxel size; default 1 mm voxels)");
  add_enum(cmd, "--traj-units", a.input.units, kTrajUnits, "ISMRMRD trajectory units: cycles/FOV, normalised [-0.5, 0.5], or detect");
  cmd.add_option("--out", a.out, "output(s): .nii/.nii.gz (NIfTI), .h5 (ISMRMRD images), .png (magnitude), no extension: BART .cfl/.hdr")
      ->required()->expected(1, 8);
  cmd.add_flag("!--no-prewhiten", a.input.prewhiten, "ISMRMRD: do not prewhiten with the noise scans' covariance");
  cmd.add_flag("--complex", a.complex, "NIfTI, ISMRMRD: complex values instead of float32 magnitude");
  cmd.add_option("--report", a.report, "write every report field as JSON to this file");
  cmd.add_flag("-q,--quiet", a.quiet, "no progress line and no notes on stderr (warnings and errors stay)");
}

// One coil (or single-coil data) through mri::reconstruct, with the progress line.
ReconResult reconstruct_one(const KSpaceData &data, const Grid &grid, ReconOptions options, Progress &progress,
                            long &done) {
  const long base = done;
  options.on_iteration = [&progress, &done, base](int it, const Image &, double residual) {
    done = base + it;
    progress.update(done, "residual " + std::to_string(residual));
  };
  ReconResult r = reconstruct(data, grid, options);
  done = base + options.iterations;
  return r;
}

// Coil c of coil-major data as its own single-coil problem.
KSpaceData coil(const KSpaceData &d, int c) {
  const std::size_t m = d.samples_per_coil();
  const auto first = d.samples().begin() + static_cast<std::ptrdiff_t>(c * m);
  return KSpaceData(d.trajectory(), std::vector<cfloat>(first, first + static_cast<std::ptrdiff_t>(m)), d.weights());
}

// sqrt(sum_c |x_c|^2) voxel by voxel (a real image).
void add_squares(Image &sum, const Image &x) {
  for (std::size_t i = 0; i < x.size(); ++i) sum[i] += std::norm(x[i]);
}

Image reconstruct_problem(const ReconProblem &p, const ReconInputs &in, const ReconOptions &o, Progress &progress,
                          long &done, nlohmann::json &reports) {
  if (p.data.coils() == 1) {
    ReconResult r = reconstruct_one(p.data, in.grid, o, progress, done);
    reports.push_back(to_json(r.report));
    return std::move(r.image);
  }
  Image rss(in.grid);
  for (int c = 0; c < p.data.coils(); ++c) {
    const ReconResult r = reconstruct_one(coil(p.data, c), in.grid, o, progress, done);
    reports.push_back(to_json(r.report));
    add_squares(rss, r.image);
  }
  for (cfloat &v : rss.values()) v = std::sqrt(v.real());
  return rss;
}

// BART's pics solves with the unitary F / sqrt(N): its image is sqrt(N) times ours.
void to_bart_units(Image &x) {
  const auto s = static_cast<float>(1.0 / bart::nufft_scale(x.grid()));
  for (cfloat &v : x.values()) v *= s;
}

ReconOptions effective_options(const ReconArgs &a, const ReconInputs &in, bool regularizer_given) {
  ReconOptions o = a.options;
  if (in.bart) o.lambda *= static_cast<double>(in.grid.voxels()); // BART's L = our lambda / voxels
  if (o.lambda > 0 && !regularizer_given) o.regularizer = Regularizer::Tikhonov;
  o.device_memory_limit = static_cast<std::size_t>(a.device_memory_mib * 1024.0 * 1024.0);
  return o;
}

int run_recon(const ReconArgs &a, bool regularizer_given) {
  if (!a.sens.empty()) throw Unsupported("--sens: SENSE with coil maps arrives with issue 11; not in this build");
  for (const std::string &path : a.out) check_output_path(path); // before any work
  const ReconInputs in = load_inputs(a.input, a.quiet);
  const ReconOptions o = effective_options(a, in, regularizer_given);
  std::size_t coils_total = 0;
  for (const auto &p : in.problems) coils_total += static_cast<std::size_t>(p.data.coils());
  if (coils_total > in.problems.size() && !a.quiet)
    say("recon", "multi-coil data: each coil reconstructed separately, combined by root-sum-of-squares (SENSE: issue 11)");
  Progress progress("recon: CG iteration", static_cast<long>(coils_total) * o.iterations, a.quiet);
  long done = 0;
  nlohmann::json reports = nlohmann::json::array();
  std::vector<Image> images;
  int failed = 0;
  for (const ReconProblem &p : in.problems) {
    try {
      Image x = reconstruct_problem(p, in, o, progress, done, reports);
      if (in.bart) to_bart_units(x);
      images.push_back(centre_crop(x, in.output));
    } catch (const Error &e) { // one item failing does not lose the others
      if (in.problems.size() == 1) throw;
      say("recon", p.label + ": " + e.what());
      reports.push_back({{"error", e.what()}, {"item", p.label}});
      images.emplace_back(in.output); // zeros keep the stack's order
      ++failed;
    }
  }
  OutputOptions out{a.complex, in.voxel_mm};
  for (const std::string &path : a.out) write_images(path, images, out);
  if (!a.report.empty()) write_json(a.report, {{"source", in.source}, {"reconstructions", reports}, {"failed_items", failed}});
  return failed > 0 ? kDataError : kOk;
}

} // namespace

Runner add_recon(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("recon", "iterative reconstruction (CG) of ISMRMRD or BART raw data");
  auto a = std::make_shared<ReconArgs>();
  add_io_options(*cmd, *a);
  add_solver_options(*cmd, *a);
  CLI::Option *regularizer = cmd->get_option("--regularizer");
  return [a, regularizer] { return run_recon(*a, regularizer->count() > 0); };
}

} // namespace mri::cli
