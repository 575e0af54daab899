// `mri recon`: mri::reconstruct on ISMRMRD or BART inputs, every ReconOptions field an option,
// outputs by extension, --report FILE.json. Multi-coil data: SENSE, with --sens maps or maps
// estimated per item (--coil-maps, --maps), optionally compressed (--virtual-coils).
#include <cmath>
#include <cstdio>
#include <set>
#include <thread>

#include "commands.hpp"
#include "outputs.hpp"
#include "batch.hpp"
#include "batch_mpi.hpp"
#include "field_inputs.hpp"
#include "process_clock.hpp"
#include "recon_dynamic.hpp"
#include "recon_inputs.hpp"
#include "report.hpp"

namespace mri::cli {
namespace {

struct ReconArgs {
  InputArgs input;
  std::vector<std::string> out;
  std::string report, sens, fieldmap;
  ReconOptions options;
  double device_memory_mib = 0;
  bool quiet = false, complex = false;
  BatchOptions batch;
  std::string regularizer = "none";   // --regularizer: an l2 regulariser or a sparse term's name
  std::vector<std::string> bart_terms; // -R, BART pics' syntax
  Wavelet wavelet = Wavelet::Daubechies2;
  DynamicArgs dynamic;                 // --bins, --frames-spokes, --motion-correct (recon_dynamic.hpp)
};

void add_solver_options(CLI::App &cmd, ReconArgs &a) {
  ReconOptions &o = a.options;
  cmd.add_option("--iterations", o.solver.iterations, "solver iterations (CG, or the proximal solver's)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--tolerance", o.solver.tolerance, "CG: stop at this relative residual; proximal: at this relative change of the image")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--lambda", o.solver.lambda, "regularisation weight of --regularizer; with BART inputs BART's (pics -r / -R, unitary F), else ours")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--regularizer", a.regularizer,
                 "l2: none | tikhonov (= l2) | finite-difference (tikhonov when --lambda > 0 and none given); "
                 "sparse: wavelet (l1-wavelet) | tv (isotropic total variation), by a proximal solver")
      ->check(CLI::IsMember(kRegularizerNames))->capture_default_str();
  cmd.add_option("-R", a.bart_terms, "a term in BART pics' syntax, repeatable: W:DIMS:0:L (l1-wavelet), T:DIMS:0:L "
                 "(total variation), I:DIMS:0:L (l1), Q:L (l2); DIMS a bit mask of x=1, y=2, z=4; with --bins or "
                 "--frames-spokes also T:1024:0:L (TV along the frames) and L:7:7:L (locally low rank)")->allow_extra_args(false);
  add_enum(cmd, "--solver", o.solver.proximal.algorithm, kProximalAlgorithms,
           "with sparse terms: auto (fista for one term, else admm) | fista | admm | primal-dual");
  add_enum(cmd, "--wavelet", a.wavelet, kWavelets, "the l1-wavelet terms' family (db2: BART's)");
  add_enum(cmd, "--scaling", o.solver.scaling, kDataScalings, "with sparse terms: scale the data as bart pics does (lambda in BART's sense) or not");
  cmd.add_option("--rho", o.solver.proximal.admm_rho, "ADMM's penalty parameter, relative to the normal operator's largest eigenvalue")->check(CLI::PositiveNumber)->capture_default_str();
  cmd.add_option("--admm-cg-iterations", o.solver.proximal.admm_cg_iterations, "CG iterations of each ADMM step")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd.add_option("--admm-cg-tolerance", o.solver.proximal.admm_cg_tolerance, "relative residual at which each ADMM step's CG stops")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--tv-prox-iterations", o.solver.proximal.tv_prox_iterations,
                 "FISTA with a TV term: inner TV-denoising iterations per step")->check(CLI::PositiveNumber)->capture_default_str();
  cmd.add_flag("!--no-cycle-spinning", o.solver.proximal.cycle_spinning, "wavelet terms: no random shifts");
  add_enum(cmd, "--method", o.method, kMethods,
           "F^H D and Q by the exact sums or the gridding NUFFT; auto: the NUFFT on the CPU, the faster of the two "
           "on the GPU (the report's method_note says why)");
  add_enum(cmd, "--normal", o.solver.normal, kNormals, "F^H W F by Toeplitz embedding or two direct sums per iteration");
  add_enum(cmd, "--backend", o.backend, kBackends, "where it runs (auto: CUDA when a GPU is usable)");
  add_enum(cmd, "--policy", o.gpu.policy, kPolicies, "CUDA F^H D kernel policy: one of the F^H D stages (Stone et al. 2008)");
  add_enum(cmd, "--precision", o.precision, kPrecisions, "precision of F^H D and Q");
  cmd.add_option("--nufft-tolerance", o.nufft.tolerance, "--method nufft or auto: relative error bound (1e-6 .. 1e-1; auto below the NUFFT's reach: exact)")->capture_default_str();
  add_enum(cmd, "--nufft-gridding", o.nufft.gridding, kGriddings, "the NUFFT: how the adjoint grids");
  cmd.add_option("--q-cache", o.q_cache_dir, "directory of the Toeplitz kernel cache (empty: none)");
  add_enum(cmd, "--coil-maps", o.coils.maps, {{"estimate", CoilMaps::Estimate}, {"require", CoilMaps::Require}},
           "multi-coil data without --sens: estimate the maps, or refuse");
  add_enum(cmd, "--maps", o.coils.estimation.method, {{"direct", MapEstimate::Direct}, {"espirit", MapEstimate::Espirit}},
           "how maps are estimated: direct (BART caldir's method) or ESPIRiT");
  cmd.add_option("--calibration", o.coils.estimation.calibration, "map estimate: width of the k-space centre used, cycles/FOV (0: 24, or the smallest extent when smaller)")
      ->capture_default_str();
  cmd.add_option("--virtual-coils", o.coils.virtual_coils, "compress the coils to this many virtual coils first (0: all)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--device-memory", a.device_memory_mib, "GPU memory the reconstruction may use, MiB (0: what is free)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--devices", o.gpu.devices, "CUDA devices the exact F^H D and Q are split over by voxel slabs, e.g. 0,1 "
                                             "(the first: the current device, where the rest runs; default: it alone)")
      ->delimiter(',');
}

const std::map<std::string, SegmentInterpolator> kSegmentInterpolators = {
    {"least-squares", SegmentInterpolator::LeastSquares}, {"hanning", SegmentInterpolator::Hanning}};

// Off-resonance correction (issue 43, docs/offresonance.md).
void add_field_options(CLI::App &cmd, ReconArgs &a) {
  SegmentationOptions &s = a.options.offresonance.segmentation;
  cmd.add_option("--fieldmap", a.fieldmap, "field map in Hz (BART .cfl or .nii/.nii.gz), on the reconstruction matrix "
                                           "(else resampled, with a warning); needs --readout-times");
  cmd.add_option("--readout-times", a.input.readout_times,
                 "BART .cfl of the samples' times in seconds from the echo, shaped like the k-space without coils; "
                 "or dwell:D[:T0]: sample i of each readout at T0 + i D seconds; with --in (ISMRMRD), ismrmrd[:T0]: "
                 "sample i of each acquisition at T0 + (i - center_sample) sample_time_us");
  cmd.add_option("--segments", s.segments, "time segments L of the field correction (0: the smallest L meeting --segment-tolerance)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  add_enum(cmd, "--segment-interpolator", s.interpolator, kSegmentInterpolators,
           "time segmentation's interpolator: least-squares over the field histogram (Fessler et al. 2005) or hanning");
  cmd.add_option("--segment-tolerance", s.tolerance, "the error bound the automatic L meets (RMS phase-factor error)")
      ->capture_default_str();
  cmd.add_option("--max-segments", s.max_segments, "refuse an automatic L beyond this")->check(CLI::PositiveNumber)->capture_default_str();
}

void add_io_options(CLI::App &cmd, ReconArgs &a) {
  cmd.add_option("--in", a.input.in, "ISMRMRD raw data (.h5)");
  cmd.add_option("--dataset", a.input.group, "ISMRMRD: the HDF5 group of the raw data")->capture_default_str();
  cmd.add_option("--traj", a.input.traj, "BART trajectory [3, samples, ...] in cycles/FOV");
  cmd.add_option("--kspace", a.input.kspace, "BART k-space [1, samples, ..., coils]");
  cmd.add_option("--weights", a.input.weights, "BART density weights [1, samples, ...] (real part used)");
  cmd.add_option("--sens", a.sens, "BART coil maps [x, y, z, coils] on the reconstruction matrix (default: estimated)");
  cmd.add_option("--matrix", a.input.matrix, "image matrix nx,ny[,nz] (voxels; BART inputs)");
  cmd.add_option("--fov", a.input.fov, "BART inputs: field of view x,y[,z] in mm (output voxel size; default 1 mm voxels)");
  add_enum(cmd, "--traj-units", a.input.units, kTrajUnits, "ISMRMRD trajectory units: cycles/FOV, normalised [-0.5, 0.5], or detect");
  cmd.add_option("--out", a.out, "output(s): .nii/.nii.gz (NIfTI), .h5 (ISMRMRD images), .png (magnitude), no extension: BART .cfl/.hdr")
      ->required()->expected(1, 8);
  cmd.add_flag("!--no-prewhiten", a.input.prewhiten, "ISMRMRD: do not prewhiten with the noise scans' covariance");
  cmd.add_flag("--complex", a.complex, "NIfTI, ISMRMRD: complex values instead of float32 magnitude");
  cmd.add_option("--report", a.report, "write every report field as JSON to this file");
  cmd.add_option("-j,--jobs", a.batch.jobs, "items (slices, repetitions ...) reconstructed at once: host threads, each an OpenMP "
                                      "team of cores/N (CPU) or its own CUDA stream (GPU); one Q per distinct trajectory")
      ->check(CLI::Range(1, 256))->capture_default_str();
  cmd.add_flag("!--no-q-share", a.batch.share_q,
               "batches: every item computes its own Q at once instead of waiting for the first item of its "
               "trajectory to store it (where Q is cheap: the GPU's NUFFT)");
  cmd.add_flag("-q,--quiet", a.quiet, "no progress line and no notes on stderr (warnings and errors stay)");
}

// --regularizer/--lambda and -R terms into the solver's options. With BART inputs lambda is
// BART's, whose F is unitary (ours is F_bart sqrt(N), N voxels): an l2 weight is ours / N, an l1
// weight ours / sqrt(N) (the same objective at x_ours = x_bart / sqrt(N)).
void apply_regularization(const ReconArgs &a, const ReconInputs &in, bool regularizer_given, SolverOptions &s) {
  const double voxels = static_cast<double>(in.grid.voxels());
  const double l2_unit = in.bart ? voxels : 1.0, l1_unit = in.bart ? std::sqrt(voxels) : 1.0;
  const auto sparse = [&](SparsePenalty penalty, double lambda) {
    SparseTerm t;
    t.penalty = penalty;
    t.lambda = lambda * l1_unit;
    t.wavelet = a.wavelet;
    s.terms.push_back(t);
  };
  if (a.regularizer == "wavelet")
    sparse(SparsePenalty::L1Wavelet, s.lambda);
  else if (a.regularizer == "tv")
    sparse(SparsePenalty::TotalVariation, s.lambda);
  else
    s.regularizer = kRegularizers.at(a.regularizer == "l2" ? "tikhonov" : a.regularizer);
  if (!s.terms.empty()) s.lambda = 0; // --lambda was the sparse term's
  for (const std::string &spec : a.bart_terms) {
    SparseTerm t = parse_bart_term(spec);
    if (t.penalty == SparsePenalty::L2) {
      if (s.lambda > 0) throw UsageError("-R " + spec + ": a second l2 weight (--lambda is one); give one of them");
      s.lambda = t.lambda;
      s.regularizer = Regularizer::Tikhonov;
      continue;
    }
    t.wavelet = a.wavelet;
    t.lambda *= l1_unit;
    s.terms.push_back(t);
  }
  s.lambda *= l2_unit;
  if (s.lambda > 0 && !regularizer_given && s.regularizer == Regularizer::None) s.regularizer = Regularizer::Tikhonov;
}

ReconOptions effective_options(const ReconArgs &a, const ReconInputs &in, bool regularizer_given) {
  ReconOptions o = a.options;
  if (!a.sens.empty()) {
    bart::CflArray maps = bart::read_cfl(cfl_base(a.sens));
    const std::size_t n = static_cast<std::size_t>(in.grid.voxels());
    if (maps.data.size() % n != 0)
      throw UsageError("--sens " + a.sens + ": " + std::to_string(maps.data.size()) +
                       " values are not whole maps of the reconstruction matrix (" + std::to_string(n) + " voxels)");
    o.coils.sensitivities = std::make_shared<const CoilSensitivities>(in.grid, static_cast<int>(maps.data.size() / n),
                                                                      std::move(maps.data));
  }
  if (!a.fieldmap.empty()) {
    if (a.input.readout_times.empty()) throw UsageError("--fieldmap needs --readout-times (the samples' times)");
    o.offresonance.field_map = read_field_map(a.fieldmap);
    const Grid &g = o.offresonance.field_map->grid();
    if (g != in.grid)
      std::fprintf(stderr, "mri recon: warning: --fieldmap %s is %lldx%lldx%lld, resampled to the matrix %lldx%lldx%lld "
                           "(linear, same field of view)\n",
                   a.fieldmap.c_str(), static_cast<long long>(g.nx()), static_cast<long long>(g.ny()),
                   static_cast<long long>(g.nz()), static_cast<long long>(in.grid.nx()),
                   static_cast<long long>(in.grid.ny()), static_cast<long long>(in.grid.nz()));
  }
  apply_regularization(a, in, regularizer_given, o.solver);
  o.gpu.memory_limit = static_cast<std::size_t>(a.device_memory_mib * 1024.0 * 1024.0);
  return o;
}

void check_recon(const ReconArgs &a) {
  for (const std::string &path : a.out) check_output_path(path);
  check_inputs(a.input);
  check_dynamic(a.dynamic);
}

// One line per distinct method_note of the items (method = auto: which method ran and why).
void say_methods(const nlohmann::json &reports) {
  std::set<std::string> said;
  for (const nlohmann::json &r : reports) {
    const std::string note = r.value("method_note", std::string());
    if (!note.empty() && said.insert(note).second) say("recon", note);
    if (r.value("offresonance", std::string("none")) == "time-segmented") {
      const std::string line = "field correction: time-segmented, L = " + std::to_string(r.value("segments", 0)) + ", " +
                               r.value("segment_interpolator", std::string()) + " interpolator, error bound " +
                               std::to_string(r.value("segment_error", 0.0)) + " (RMS phase-factor error)";
      if (said.insert(line).second) say("recon", line);
    } else if (r.value("offresonance", std::string("none")) == "exact" && said.insert("exact").second)
      say("recon", "field correction: exact field-corrected sums");
  }
}

// The CUDA plugin loaded (with cuFFT) and the driver started on a thread of their own while the
// file is read, rather than when the first item needs them.
std::jthread warm_up_cuda(Backend backend) {
  if (backend == Backend::Cpu) return {};
  return std::jthread([] { (void)cuda_available(); });
}

int run_recon(const ReconArgs &a, bool regularizer_given) {
  // The report's "process": seconds since exec at each stage (the rest, to the exit, is what the
  // caller's wall clock adds: freeing, the CUDA driver's teardown).
  nlohmann::json process = {{"recon_started_s", seconds_since_process_start()}};
  const Ranks ranks; // MPI ranks under mpirun (docs/scaling.md), else this process alone
  if (ranks.size() > 1) process["ranks_started_s"] = seconds_since_process_start(); // MPI_Init's end
  const std::jthread warm_up = warm_up_cuda(a.options.backend);
  const bool quiet = a.quiet || ranks.rank() != 0; // notes and the progress line: rank 0's
  ReconInputs in;
  OutputOptions out;
  ReconOptions o;
  if (a.dynamic.requested()) {
    if (ranks.size() > 1) throw UsageError("--bins/--frames-spokes run in one process (not under mpirun)");
    in = load_inputs(a.input, quiet);
    out = {a.complex, in.voxel_mm, scanner_geometry(in)};
    o = effective_options(a, in, regularizer_given);
    return run_dynamic(a.dynamic, in, o, a.out, out, a.report, quiet);
  }
  if (const int code = ranks.all_or_none([&] {
        in = load_inputs(a.input, quiet);
        out = {a.complex, in.voxel_mm, scanner_geometry(in)};
        for (const std::string &path : a.out) check_output_placement(path, in.output, in.problems.size(), out);
        o = effective_options(a, in, regularizer_given);
      });
      code != kOk)
    return code;
  process["headers_read_s"] = seconds_since_process_start();
  Progress progress("recon: CG iteration", static_cast<long>(in.problems.size()) * o.solver.iterations, quiet);
  std::optional<std::vector<ItemOutcome>> gathered = ranks.reconstruct(in, o, a.batch, progress);
  if (!gathered) return kOk; // a rank other than 0: rank 0 reports and writes
  std::vector<ItemOutcome> outcomes = std::move(*gathered);
  process["batch_done_s"] = seconds_since_process_start();
  nlohmann::json reports = nlohmann::json::array();
  std::vector<Image> images;
  int failed = 0;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    images.push_back(std::move(outcomes[i].image));
    for (auto &r : outcomes[i].reports) reports.push_back(std::move(r));
    if (!outcomes[i].error) continue;
    ++failed;
    // Every item failed (one item, or e.g. --backend cuda without a GPU): the error is the run's.
    if (failed == static_cast<int>(outcomes.size())) std::rethrow_exception(outcomes[0].error);
    try {
      std::rethrow_exception(outcomes[i].error);
    } catch (const std::exception &e) {
      say("recon", in.problems[i].label + ": " + e.what());
      reports.push_back({{"error", e.what()}, {"item", in.problems[i].label}});
    }
  }
  if (!quiet) say_methods(reports);
  for (const std::string &path : a.out) write_images(path, images, out);
  process["outputs_written_s"] = seconds_since_process_start();
  if (!a.report.empty())
    write_json(a.report, {{"source", in.source}, {"reconstructions", reports}, {"failed_items", failed}, {"process", process}});
  return failed > 0 ? kDataError : kOk;
}

} // namespace

Runner add_recon(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("recon", "iterative reconstruction (CG; proximal solvers with sparse terms) of ISMRMRD or BART raw data");
  auto a = std::make_shared<ReconArgs>();
  add_io_options(*cmd, *a);
  add_solver_options(*cmd, *a);
  add_field_options(*cmd, *a);
  add_dynamic_options(*cmd, a->dynamic);
  CLI::Option *regularizer = cmd->get_option("--regularizer");
  cmd->final_callback([a] { check_recon(*a); });
  return [a, regularizer] { return run_recon(*a, regularizer->count() > 0); };
}

} // namespace mri::cli
