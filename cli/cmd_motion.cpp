// `mri motion`: mri::MotionEstimator (CLG optical flow, docs/motion.md) on a NIfTI series
// (x, y, z, t): displacement fields out as NIfTI with intent displacement vector, dims
// (x, y, z, pairs, 3), frame to frame or to a reference frame; --report FILE.json.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include "commands.hpp"
#include "outputs.hpp"
#include "progress.hpp"
#include "report.hpp"

namespace mri::cli {
namespace {

struct MotionArgs {
  std::vector<std::string> in;
  std::string out, report;
  MotionOptions options;
  int reference = -1; // -1: frame to frame
  DisplacementUnits units = DisplacementUnits::Millimetres;
  bool quiet = false;
};

// The frames of the input files, magnitude, scaled by the series' maximum (the options assume
// intensities of order 1; one scale keeps intensity changes between frames).
struct Series {
  std::vector<RealVolume> frames;
  std::array<double, 3> voxel_mm{1, 1, 1};
  NiftiAffine affine{}; // of the first file: the fields lie on its grid
};

std::string extents(const std::array<std::int64_t, 4> &d) {
  return std::to_string(d[0]) + " x " + std::to_string(d[1]) + " x " + std::to_string(d[2]);
}

// Frame t of v as a real volume; a non-finite voxel is an error naming file, frame and voxel.
RealVolume frame(const std::string &file, const NiftiVolume &v, std::int64_t t) {
  const Grid g(v.dims[0], v.dims[1], v.dims[2]);
  RealVolume out(g);
  const auto n = static_cast<std::size_t>(g.voxels());
  for (std::size_t i = 0; i < n; ++i) {
    const float m = std::abs(v.data[static_cast<std::size_t>(t) * n + i]);
    if (!std::isfinite(m))
      throw InvalidArgument(file + ": frame " + std::to_string(t) + " voxel " + std::to_string(i % g.nx()) + "," +
                            std::to_string(i / g.nx() % g.ny()) + "," + std::to_string(i / g.nx() / g.ny()) +
                            " = " + std::to_string(m) + ": not finite");
    out[i] = m;
  }
  return out;
}

Series read_series(const std::vector<std::string> &files) {
  Series s;
  std::array<std::int64_t, 4> dims{};
  for (std::size_t f = 0; f < files.size(); ++f) {
    const NiftiVolume v = read_nifti(files[f]);
    if (f == 0) dims = v.dims, s.voxel_mm = v.voxel_mm, s.affine = v.qform;
    if (!std::equal(dims.begin(), dims.begin() + 3, v.dims.begin()))
      throw InvalidArgument(files[f] + ": frames of " + extents(v.dims) + " voxels, but " + files[0] + "'s are " +
                            extents(dims));
    for (std::int64_t t = 0; t < v.dims[3]; ++t) s.frames.push_back(frame(files[f], v, t));
  }
  if (s.frames.size() < 2)
    throw InvalidArgument(files[0] + ": one frame of " + extents(dims) +
                          " voxels: motion needs a 4D series (x, y, z, t >= 2) or several files");
  float peak = 0;
  for (const RealVolume &f : s.frames) peak = std::max(peak, *std::max_element(f.values().begin(), f.values().end()));
  if (peak > 0)
    for (RealVolume &f : s.frames)
      for (float &x : f.values()) x /= peak;
  return s;
}

// (fixed, moving) frame pairs: t -> t+1, or the reference to every other frame.
std::vector<std::pair<int, int>> frame_pairs(int frames, int reference) {
  if (reference >= frames)
    throw UsageError("--reference " + std::to_string(reference) + ": the series has frames 0 to " + std::to_string(frames - 1));
  std::vector<std::pair<int, int>> pairs;
  for (int t = 0; t < frames; ++t) {
    if (reference < 0 && t + 1 < frames) pairs.emplace_back(t, t + 1);
    if (reference >= 0 && t != reference) pairs.emplace_back(reference, t);
  }
  return pairs;
}

const std::map<std::string, DisplacementUnits> kUnits{{"mm", DisplacementUnits::Millimetres},
                                                       {"voxels", DisplacementUnits::Voxels},
                                                       {"ras", DisplacementUnits::RasMillimetres}};
std::string units_name(DisplacementUnits u) {
  for (const auto &[name, value] : kUnits)
    if (value == u) return name;
  return "";
}

nlohmann::json stages(const MotionReport &r) {
  return {{"transfer_ms", r.transfer_ms}, {"pyramid_ms", r.pyramid_ms}, {"gradients_ms", r.gradients_ms},
          {"warp_ms", r.warp_ms},         {"tensor_ms", r.tensor_ms},   {"gaussian_ms", r.gaussian_ms},
          {"solver_ms", r.solver_ms},     {"total_ms", r.total_ms},     {"solver_sweeps", r.solver_sweeps},
          {"solver_cycles", r.solver_cycles}, {"solver_residual", r.solver_residual},
          {"solver_switches", r.solver_switches}, {"solver_nonfinite", r.solver_nonfinite},
          {"backend", to_string(r.backend)}};
}

nlohmann::json pair_json(const std::pair<int, int> &p, const MotionReport &r, const DisplacementField &w) {
  const JacobianStats j = jacobian_stats(w);
  return {{"fixed", p.first}, {"moving", p.second}, {"stages", stages(r)},
          {"jacobian", {{"fraction_nonpositive", j.fraction_nonpositive}, {"std_log_det", j.std_log_det},
                        {"mean_det", j.mean_det}}}};
}

int run_motion(const MotionArgs &a) {
  const std::string &out = a.out;
  if (!(out.ends_with(".nii") || out.ends_with(".nii.gz")))
    throw UsageError("--out " + out + ": displacement fields are written as NIfTI (.nii or .nii.gz)");
  check_output_path(out);
  const auto start = std::chrono::steady_clock::now();
  const Series s = read_series(a.in);
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto pairs = frame_pairs(static_cast<int>(s.frames.size()), a.reference);
  MotionEstimator estimator(s.frames[0].grid(), a.options);
  Progress progress("motion: pair", static_cast<long>(pairs.size()), a.quiet);
  std::vector<DisplacementField> fields;
  nlohmann::json per_pair = nlohmann::json::array();
  for (const auto &p : pairs) {
    fields.push_back(estimator.estimate(s.frames[static_cast<std::size_t>(p.first)], s.frames[static_cast<std::size_t>(p.second)]));
    per_pair.push_back(pair_json(p, estimator.report(), fields.back()));
    progress.advance(1, "frames " + std::to_string(p.first) + " -> " + std::to_string(p.second));
  }
  write_nifti_displacements(out, fields, s.voxel_mm, a.units, s.affine);
  if (!a.report.empty())
    write_json(a.report, {{"inputs", a.in}, {"frames", s.frames.size()}, {"voxel_mm", s.voxel_mm},
                          {"units", units_name(a.units)},
                          {"read_seconds", read_s}, {"pairs", per_pair},
                          {"total_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()}});
  return kOk;
}

void add_estimator_options(CLI::App &cmd, MotionOptions &o) {
  cmd.add_option("--alpha", o.alpha, "smoothness weight (frames scaled to [0, 1]), >= 0")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--gamma", o.gamma, "volume-conserving (divergence) weight, >= 0 (0.3: nearly incompressible tissue)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_option("--rho", o.rho, "std of the motion tensor's Gaussian, voxels (<= 7/3)")->capture_default_str();
  cmd.add_option("--sigma", o.sigma, "std of the frames' pre-smoothing, voxels (<= 7/3)")->capture_default_str();
  cmd.add_option("--iterations", o.iterations, "solver iterations per warp")->capture_default_str();
  cmd.add_option("--warps", o.warps, "linearisations (warps of the moving frame) per pyramid level")->capture_default_str();
  cmd.add_option("--levels", o.levels, "pyramid levels, each halving the grid (1: none)")->capture_default_str();
  cmd.add_option("--omega", o.omega, "SOR over-relaxation in (0, 2) (Jacobi ignores it)")->capture_default_str();
  add_enum(cmd, "--solver", o.solver,
           {{"auto", MotionSolver::Auto}, {"multigrid", MotionSolver::Multigrid}, {"jacobi", MotionSolver::Jacobi},
            {"sor", MotionSolver::RedBlackSor}},
           "auto (multigrid) | multigrid (full multigrid + V-cycles, CG when they stall; CPU and GPU) | Jacobi (the GPU motion paper's) | multicolour SOR");
  cmd.add_option("--tolerance", o.tolerance, "multigrid: relative Euler-Lagrange residual at which a warp's solve stops")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  add_enum(cmd, "--data-term", o.data_term,
           {{"quadratic", MotionDataTerm::Quadratic}, {"charbonnier", MotionDataTerm::Charbonnier}},
           "quadratic (the seed's CLG) | charbonnier (robust, by lagged diffusivity; docs/motion.md)");
  cmd.add_option("--epsilon", o.epsilon, "charbonnier: the residual scale (intensities of frames scaled to [0, 1]), > 0")
      ->capture_default_str();
  cmd.add_option("--reweightings", o.reweightings, "charbonnier: weighted linear solves per warp, >= 1")
      ->capture_default_str();
  add_enum(cmd, "--memory", o.memory, {{"cached", MotionMemory::Cached}, {"shared-tiles", MotionMemory::SharedTiles}},
           "CUDA stencil kernels: plain cached loads or shared-memory tiles (the CPU ignores it)");
  add_enum(cmd, "--derivative", o.derivative, {{"central", MotionDerivative::Central}, {"forward", MotionDerivative::Forward}},
           "spatial derivatives: central (second order) or forward (the GPU motion paper's)");
  add_enum(cmd, "--backend", o.backend, kBackends, "where it runs (auto: CUDA when a GPU is usable)");
  add_enum(cmd, "--precision", o.precision, kPrecisions, "float64: the CPU reference");
}

} // namespace

Runner add_motion(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("motion", "motion estimation (3D CLG optical flow) of a NIfTI series: displacement fields");
  auto a = std::make_shared<MotionArgs>();
  a->options.backend = Backend::Auto;
  cmd->add_option("--in", a->in, "the series: one 4D NIfTI (x, y, z, t), or several files whose frames follow each other")
      ->required()->expected(1, 1024);
  cmd->add_option("--out", a->out, "displacement fields: NIfTI (x, y, z, pairs, 3), intent displacement vector")->required();
  cmd->add_option("--reference", a->reference, "fields from this frame to every other (default: frame t to t+1)")
      ->check(CLI::NonNegativeNumber);
  add_enum(*cmd, "--units", a->units, kUnits,
           "displacements along the voxel axes i, j, k in mm (voxels times the input's voxel sizes) or voxels, "
           "or in mm along the scanner's R, A, S axes (ras: rotated by the input's qform)");
  add_estimator_options(*cmd, a->options);
  cmd->add_option("--report", a->report, "per pair: stage times (ms) and Jacobian metrics, as JSON to this file");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress line on stderr");
  return [a] { return run_motion(*a); };
}

} // namespace mri::cli
