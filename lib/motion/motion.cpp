// mri::MotionEstimator: validation of options and frames (every bad input an InvalidArgument
// naming the argument and value), the choice of backend, and the pyramid's grids.
#include <cmath>
#include <sstream>
#include <string>

#include "../backend.hpp"
#include "cpu_stages.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/motion_backend.hpp"
#include "mri_backend/motion_driver.hpp"
#include "mri/error.hpp"

namespace mri {
namespace detail::motion {

std::vector<Grid> pyramid_grids(const Grid &grid, int levels) {
  std::vector<Grid> grids{grid};
  for (int l = 1; l < levels; ++l) {
    const Grid &g = grids.back();
    grids.emplace_back((g.nx() + 1) / 2, (g.ny() + 1) / 2, (g.nz() + 1) / 2);
  }
  return grids;
}

} // namespace detail::motion
namespace {

std::string extents(const Grid &g) {
  std::ostringstream os;
  os << g.nx() << "x" << g.ny() << "x" << g.nz();
  return os.str();
}

void check_weight(const char *name, double value) {
  if (!std::isfinite(value) || value < 0)
    detail::invalid_argument(name, value, "must be finite and >= 0");
}

void validate(const Grid &grid, const MotionOptions &o) {
  check_weight("options.alpha", o.alpha);
  check_weight("options.gamma", o.gamma);
  detail::motion::gaussian_taps(o.rho, "options.rho");
  detail::motion::gaussian_taps(o.sigma, "options.sigma");
  if (!(o.omega > 0 && o.omega < 2))
    detail::invalid_argument("options.omega", o.omega, "SOR needs 0 < omega < 2");
  if (o.iterations < 0)
    detail::invalid_argument("options.iterations", o.iterations, "must be >= 0");
  if (o.warps < 1)
    detail::invalid_argument("options.warps", o.warps, "must be >= 1");
  if (o.levels < 1)
    detail::invalid_argument("options.levels", o.levels, "must be >= 1");
  if (!(o.solver == MotionSolver::Jacobi || o.solver == MotionSolver::RedBlackSor ||
        o.solver == MotionSolver::Multigrid || o.solver == MotionSolver::Auto))
    detail::invalid_argument("options.solver", static_cast<int>(o.solver), "not a MotionSolver");
  if (!std::isfinite(o.tolerance) || o.tolerance < 0)
    detail::invalid_argument("options.tolerance", o.tolerance, "must be finite and >= 0");
  if (!(o.data_term == MotionDataTerm::Quadratic || o.data_term == MotionDataTerm::Charbonnier))
    detail::invalid_argument("options.data_term", static_cast<int>(o.data_term),
                             "not a MotionDataTerm");
  if (!std::isfinite(o.epsilon) || !(o.epsilon > 0))
    detail::invalid_argument("options.epsilon", o.epsilon, "must be finite and > 0");
  if (o.reweightings < 1)
    detail::invalid_argument("options.reweightings", o.reweightings, "must be >= 1");
  const MotionMultigridOptions &mg = o.multigrid;
  if (mg.max_cycles < 1)
    detail::invalid_argument("options.multigrid.max_cycles", mg.max_cycles, "must be >= 1");
  if (mg.pre_smoothing < 0)
    detail::invalid_argument("options.multigrid.pre_smoothing", mg.pre_smoothing, "must be >= 0");
  if (mg.post_smoothing < 0)
    detail::invalid_argument("options.multigrid.post_smoothing", mg.post_smoothing, "must be >= 0");
  if (mg.krylov && mg.pre_smoothing != mg.post_smoothing)
    detail::invalid_argument("options.multigrid.post_smoothing", mg.post_smoothing,
                             "must equal pre_smoothing (" + std::to_string(mg.pre_smoothing) +
                                 ") with krylov: conjugate gradients need a symmetric V-cycle");
  if (mg.pre_smoothing + mg.post_smoothing < 1)
    detail::invalid_argument("options.multigrid.post_smoothing", mg.post_smoothing,
                             "pre_smoothing + post_smoothing must be >= 1 (a V-cycle must smooth)");
  // A 2D grid (one slice, nz = 1) is exempt along z: the pyramid keeps its single slice.
  const Grid coarsest = detail::motion::pyramid_grids(grid, o.levels).back();
  for (int a = 0; a < (grid.nz() == 1 ? 2 : 3); ++a)
    if (coarsest.extent(a) < kMinLevelExtent)
      detail::invalid_argument("options.levels", o.levels,
                               "the coarsest level of a " + extents(grid) + " volume would be " +
                                   extents(coarsest) +
                                   "; every extent must be >= " + std::to_string(kMinLevelExtent));
}

void validate_frame(const char *name, const RealVolume &f, const Grid &grid) {
  if (!(f.grid() == grid))
    detail::invalid_argument(std::string(name) + ".grid()", extents(f.grid()),
                             "differs from the plan's " + extents(grid));
  const auto n = static_cast<std::int64_t>(f.size());
  bool finite = true; // a parallel scan (frames are ~2M voxels); the first bad voxel found serially
#pragma omp parallel for reduction(&& : finite) schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    finite = finite && std::isfinite(f[i]);
  if (finite)
    return;
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(f[i]))
      detail::invalid_argument(std::string(name) + "[" + std::to_string(i) + "]", f[i],
                               "voxels must be finite");
}

// Auto: the multigrid on every backend, the only solver that meets the residual tolerance at the
// defaults (docs/motion.md's measurements; cuda/motion/motion_multigrid.cu on the GPU).
MotionSolver resolve_solver(MotionSolver solver, Backend) {
  return solver == MotionSolver::Auto ? MotionSolver::Multigrid : solver;
}

std::unique_ptr<MotionBackend> make_backend(const Grid &grid, MotionOptions &o) {
  o.backend = detail::resolve_backend(o.backend, "MotionEstimator");
  o.solver = resolve_solver(o.solver, o.backend);
  if (o.backend == Backend::Cpu)
    return make_cpu_motion_backend(grid, o);
  if (o.precision == Precision::Float64)
    throw Unsupported("options.precision = float64: the CUDA motion backend computes in float32 "
                      "(use backend = cpu)");
  return detail::require_cuda("MotionEstimator").motion(grid, o);
}

} // namespace

MotionEstimator::MotionEstimator(const Grid &grid, const MotionOptions &options)
    : grid_(grid), options_(options) {
  validate(grid_, options_);
  backend_ = make_backend(grid_, options_);
  report_.backend = options_.backend;
}

MotionEstimator::~MotionEstimator() = default;
MotionEstimator::MotionEstimator(MotionEstimator &&) noexcept = default;
MotionEstimator &MotionEstimator::operator=(MotionEstimator &&) noexcept = default;

DisplacementField MotionEstimator::estimate(const RealVolume &fixed, const RealVolume &moving) {
  validate_frame("fixed", fixed, grid_);
  validate_frame("moving", moving, grid_);
  return backend_->estimate(fixed, moving, report_);
}

std::vector<DisplacementField>
MotionEstimator::estimate_sequence(std::span<const RealVolume> frames) {
  if (frames.size() < 2)
    detail::invalid_argument("frames.size()", frames.size(), "a sequence needs >= 2 frames");
  for (std::size_t k = 0; k < frames.size(); ++k)
    validate_frame(("frames[" + std::to_string(k) + "]").c_str(), frames[k], grid_);
  return backend_->estimate_sequence(frames, report_);
}

std::vector<DisplacementField>
MotionEstimator::estimate_to_reference(std::span<const RealVolume> frames,
                                       const RealVolume &reference) {
  if (frames.empty())
    detail::invalid_argument("frames.size()", frames.size(), "needs >= 1 frame");
  validate_frame("reference", reference, grid_);
  for (std::size_t k = 0; k < frames.size(); ++k)
    validate_frame(("frames[" + std::to_string(k) + "]").c_str(), frames[k], grid_);
  return backend_->estimate_to_reference(frames, reference, report_, pair_reports_);
}

} // namespace mri
