// reconstruct_motion_corrected (mri/mcir.hpp): the motion-compensated SENSE normal equations
//   (sum_s W_s^H N_s W_s + lambda R^H R) x = sum_s W_s^H b_s
// assembled in the operator core (mri/linear_operator.hpp) from ImageWarp, each state's Toeplitz
// normal (QOperator, one per state: Q depends on the state's trajectory and weights) between the
// coil maps, and the regulariser's normal once outside the state sum; solved by the one
// ConjugateGradient. Backend Cuda: the same equations solved on the device (solve_on_device below,
// cuda/mcir/mcir_cuda.cu); Cpu: everything here.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "mri/conjugate_gradient.hpp"
#include "mri/detail/joint_device_memory.hpp"
#include "mri/fourier.hpp"
#include "mri/linear_operator.hpp"
#include "mri/mcir.hpp"
#include "mri/nufft.hpp"
#include "mri/proximal_solvers.hpp"
#include "mri/toeplitz.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/normal_assembly.hpp"
#include "mri_backend/recon_driver.hpp"
#include "mri_backend/recon_report.hpp"
#include "mcir_cache.hpp"
#include "sense/recon_coils.hpp"

namespace mri {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool absent(const DisplacementField &f) { return f.u.size() == 0 && f.v.size() == 0 && f.w.size() == 0; }

void validate_fields(const std::vector<KSpaceData> &states, const Grid &grid,
                     const std::vector<DisplacementField> &fields) {
  if (fields.size() != states.size())
    detail::invalid_argument("fields.size()", fields.size(),
                             "needs one field per state (states.size() = " + std::to_string(states.size()) +
                                 "; the reference's zero or absent)");
  for (std::size_t s = 0; s < fields.size(); ++s) {
    const DisplacementField &f = fields[s];
    if (absent(f))
      continue;
    const std::string name = "fields[" + std::to_string(s) + "]";
    for (const RealVolume *c : {&f.u, &f.v, &f.w})
      if (!(c->grid() == grid) || c->size() != static_cast<std::size_t>(grid.voxels()))
        detail::invalid_argument(name + ".grid()",
                                 std::to_string(c->grid().nx()) + "x" + std::to_string(c->grid().ny()) + "x" +
                                     std::to_string(c->grid().nz()),
                                 "differs from the reconstruction grid " + std::to_string(grid.nx()) + "x" +
                                     std::to_string(grid.ny()) + "x" + std::to_string(grid.nz()));
    const char *names[3] = {"u", "v", "w"};
    const RealVolume *c[3] = {&f.u, &f.v, &f.w};
    for (int a = 0; a < 3; ++a)
      for (std::size_t i = 0; i < c[a]->size(); ++i)
        if (!std::isfinite((*c[a])[i]))
          detail::invalid_argument(name + "." + names[a] + "[" + std::to_string(i) + "]", (*c[a])[i], "must be finite");
  }
}

void validate_states(const std::vector<KSpaceData> &states, const Grid &grid) {
  if (states.empty())
    detail::invalid_argument("states.size()", 0, "needs at least one state");
  for (std::size_t s = 0; s < states.size(); ++s) {
    const std::string name = "states[" + std::to_string(s) + "]";
    const KSpaceData &d = states[s];
    if (d.trajectory().empty())
      detail::invalid_argument(name + ".trajectory().size()", 0, "needs at least one sample");
    if (d.trajectory().dims() != grid.dims())
      detail::invalid_argument(name + ".trajectory().dims()", d.trajectory().dims(),
                               "differs from the grid's " + std::to_string(grid.dims()));
    if (d.coils() != states[0].coils())
      detail::invalid_argument(name + ".coils()", d.coils(),
                               "differs from states[0].coils() = " + std::to_string(states[0].coils()));
    if (d.has_weights() != states[0].has_weights())
      detail::invalid_argument(name + ".weights().size()", d.weights().size(),
                               "weights must be given for every state or for none");
  }
}

// The sparse terms of the one reference image (validate(term, grid): temporal terms and locally
// low rank need frames and are refused) and the proximal settings, before any work.
void validate_terms(const SolverOptions &s, const Grid &grid) {
  for (std::size_t i = 0; i < s.terms.size(); ++i)
    validate(s.terms[i], grid, "options.solver.terms[" + std::to_string(i) + "] (" + to_string(s.terms[i]) + ")");
  if (s.terms.empty()) return;
  resolve_proximal_algorithm(s.proximal.algorithm, s.terms);
  validate(s.proximal, "options.solver.proximal");
}

void validate_options(const ReconOptions &o, const Grid &grid) {
  const SolverOptions &s = o.solver;
  if (!o.gpu.devices.empty())
    throw Unsupported("reconstruct_motion_corrected: options.gpu.devices is not supported (one device: the current "
                      "one, leave devices empty)");
  validate_terms(s, grid);
  if (s.normal != Normal::Toeplitz)
    throw Unsupported("reconstruct_motion_corrected: solver.normal = direct is not supported (toeplitz only)");
  if (o.offresonance.field_map)
    throw Unsupported("reconstruct_motion_corrected: off-resonance correction is not supported");
  if (s.iterations < 0)
    detail::invalid_argument("options.solver.iterations", s.iterations, "must be >= 0");
  if (!(s.tolerance >= 0) || !std::isfinite(s.tolerance))
    detail::invalid_argument("options.solver.tolerance", s.tolerance, "must be finite and >= 0");
  if (!(s.lambda >= 0) || !std::isfinite(s.lambda))
    detail::invalid_argument("options.solver.lambda", s.lambda, "must be finite and >= 0");
  if (o.method == Method::Nufft) {
    const double floor = nufft_min_tolerance(o.precision);
    if (!(o.nufft.tolerance >= floor && o.nufft.tolerance <= kNufftMaxTolerance))
      detail::invalid_argument("options.nufft.tolerance", o.nufft.tolerance,
                               "must be in [" + std::to_string(floor) + ", " + std::to_string(kNufftMaxTolerance) +
                                   "] with precision = " + to_string(o.precision));
  }
  if (o.method == Method::Auto && !(o.nufft.tolerance > 0 && o.nufft.tolerance <= kNufftMaxTolerance))
    detail::invalid_argument("options.nufft.tolerance", o.nufft.tolerance,
                             "must be in (0, " + std::to_string(kNufftMaxTolerance) + "]");
}

// All states' samples as one acquisition (coil-major: coil c's samples of every state in state
// order), trajectories wrapped into [-n/2, n/2) (Trajectory::check_range): what the coil maps are
// estimated from and what the coils are compressed by, as reconstruct would do on it.
KSpaceData concatenate(const std::vector<KSpaceData> &states, const Grid &grid, std::size_t &wrapped) {
  const int coils = states[0].coils();
  std::vector<KPoint> points;
  std::vector<float> weights;
  std::size_t total = 0;
  for (const KSpaceData &d : states)
    total += d.samples_per_coil();
  points.reserve(total);
  for (const KSpaceData &d : states) {
    wrapped += d.trajectory().check_range(grid);
    const Trajectory inside = d.trajectory().wrapped(grid);
    points.insert(points.end(), inside.points().begin(), inside.points().end());
    weights.insert(weights.end(), d.weights().begin(), d.weights().end());
  }
  std::vector<cfloat> samples;
  samples.reserve(total * static_cast<std::size_t>(coils));
  for (int c = 0; c < coils; ++c)
    for (const KSpaceData &d : states) {
      const std::size_t m = d.samples_per_coil();
      const auto first = d.samples().begin() + static_cast<std::ptrdiff_t>(c * m);
      samples.insert(samples.end(), first, first + static_cast<std::ptrdiff_t>(m));
    }
  return KSpaceData(Trajectory(grid.dims(), std::move(points)), std::move(samples), std::move(weights), coils);
}

// State s's part of the (possibly coil-compressed) concatenation.
KSpaceData state_part(const KSpaceData &all, std::size_t offset, std::size_t m) {
  const std::size_t total = all.samples_per_coil();
  const auto &p = all.trajectory().points();
  std::vector<KPoint> points(p.begin() + static_cast<std::ptrdiff_t>(offset),
                             p.begin() + static_cast<std::ptrdiff_t>(offset + m));
  std::vector<float> weights;
  if (all.has_weights())
    weights.assign(all.weights().begin() + static_cast<std::ptrdiff_t>(offset),
                   all.weights().begin() + static_cast<std::ptrdiff_t>(offset + m));
  std::vector<cfloat> samples;
  samples.reserve(m * static_cast<std::size_t>(all.coils()));
  for (int c = 0; c < all.coils(); ++c) {
    const auto first = all.samples().begin() + static_cast<std::ptrdiff_t>(c * total + offset);
    samples.insert(samples.end(), first, first + static_cast<std::ptrdiff_t>(m));
  }
  return KSpaceData(Trajectory(all.trajectory().dims(), std::move(points)), std::move(samples), std::move(weights),
                    all.coils());
}

// N_s = sum_c S_c^H Q_s S_c (Q_s alone without maps): one state's SENSE normal, self-adjoint.
class SenseToeplitzNormal {
public:
  using Domain = Image;
  using Range = Image;
  SenseToeplitzNormal(std::shared_ptr<QOperator> q, const CoilSensitivities *maps, const Grid &grid)
      : q_(std::move(q)), maps_(maps), coil_in_(grid), coil_out_(grid) {
    if (maps_)
      coils_.emplace(*maps_, Regularizer::None, 0.0);
  }
  Image domain_vector() const { return Image(q_->grid()); }
  Image range_vector() const { return Image(q_->grid()); }
  void forward(const Image &x, Image &out) const {
    if (!coils_)
      return q_->forward(x, out);
    for (int c = 0; c < coils_->count(); ++c) {
      coils_->expand(c, x, coil_in_);
      q_->forward(coil_in_, coil_out_);
      coils_->combine(c, coil_out_, out, c == 0);
    }
  }
  void adjoint(const Image &x, Image &out) const { forward(x, out); }

private:
  std::shared_ptr<QOperator> q_;
  const CoilSensitivities *maps_;
  std::optional<detail::HostCoils> coils_;
  mutable Image coil_in_, coil_out_;
};

// ImageWarp that adds the seconds of its applications to a counter (the report's cg_warp_seconds).
class TimedWarp {
public:
  using Domain = Image;
  using Range = Image;
  TimedWarp(ImageWarp w, double *seconds) : w_(std::move(w)), seconds_(seconds) {}
  Image domain_vector() const { return w_.domain_vector(); }
  Image range_vector() const { return w_.range_vector(); }
  void forward(const Image &x, Image &y) const {
    timed([&] { w_.forward(x, y); });
  }
  void adjoint(const Image &y, Image &x) const {
    timed([&] { w_.adjoint(y, x); });
  }

private:
  template <class F> void timed(F &&f) const {
    const auto t = Clock::now();
    f();
    *seconds_ += seconds_since(t);
  }
  ImageWarp w_;
  double *seconds_;
};

// sum_s A_s for operators of one type on one space (the states' W_s^H N_s W_s).
template <LinearOperator A> class StateSum {
public:
  using Domain = typename A::Domain;
  using Range = typename A::Range;
  StateSum(std::vector<A> terms, const Grid &grid) : terms_(std::move(terms)), term_(grid) {}
  Domain domain_vector() const { return terms_.front().domain_vector(); }
  Range range_vector() const { return terms_.front().range_vector(); }
  void forward(const Domain &x, Range &out) const {
    terms_.front().forward(x, out);
    for (std::size_t s = 1; s < terms_.size(); ++s) {
      terms_[s].forward(x, term_);
      VectorOps<Image>::axpy(1.0, term_, out);
    }
  }
  void adjoint(const Range &y, Domain &x) const {
    terms_.front().adjoint(y, x);
    for (std::size_t s = 1; s < terms_.size(); ++s) {
      terms_[s].adjoint(y, term_);
      VectorOps<Image>::axpy(1.0, term_, x);
    }
  }

private:
  std::vector<A> terms_;
  mutable Image term_;
};

// One state's b_s = sum_c conj(S_c) F_s^H (w .* D_c) (F^H (w .* D) without maps).
Image state_rhs(const KSpaceData &d, const Grid &grid, const CoilSensitivities *maps, bool nufft,
                const NufftOptions &nufft_options, const OperatorOptions &op) {
  const std::vector<cfloat> weighted = d.weighted_samples();
  const std::size_t m = d.samples_per_coil(), n = static_cast<std::size_t>(grid.voxels());
  const int coils = maps ? d.coils() : 1;
  std::vector<cfloat> images(static_cast<std::size_t>(coils) * n);
  if (nufft) {
    const NufftOperator f(d.trajectory(), grid, nufft_options);
    f.adjoint_coils(weighted.data(), coils, images.data());
  } else {
    const FourierOperator f(d.trajectory(), grid, op);
    Image coil(grid);
    for (int c = 0; c < coils; ++c) {
      f.adjoint(std::span<const cfloat>(weighted.data() + static_cast<std::size_t>(c) * m, m), coil);
      std::copy(coil.values().begin(), coil.values().end(), images.begin() + static_cast<std::ptrdiff_t>(c * n));
    }
  }
  Image rhs(grid);
  if (!maps) {
    std::copy(images.begin(), images.begin() + static_cast<std::ptrdiff_t>(n), rhs.values().begin());
    return rhs;
  }
  const detail::HostCoils host(*maps, Regularizer::None, 0.0);
  for (int c = 0; c < coils; ++c)
    host.combine(c, images.data() + static_cast<std::size_t>(c) * n, rhs, c == 0);
  return rhs;
}

// The whole device solve's memory (every state's operators and warps, the maps, CG's images) against
// the device's free memory and gpu.memory_limit, before anything is allocated: Unsupported naming
// the bytes needed and available (mri/detail/joint_device_memory.hpp). The coils: the maps' after
// compression, as prepare_coils will make them (one coil without maps: none).
void check_device_memory(const std::vector<KSpaceData> &states, const KSpaceData &all, const Grid &grid,
                         const ReconOptions &o, const MotionCorrectionReport &mc, const ImageWarpOptions &warp,
                         ReconReport &report) {
  detail::JointDeviceSizes sizes;
  sizes.grid = grid;
  for (const KSpaceData &d : states) sizes.samples.push_back(d.samples_per_coil());
  const bool maps = o.coils.sensitivities || all.coils() > 1;
  sizes.coils = maps ? (o.coils.virtual_coils > 0 ? o.coils.virtual_coils : all.coils()) : 0;
  sizes.nufft = o.method == Method::Nufft;
  sizes.regularizer = o.solver.regularizer != Regularizer::None && o.solver.lambda > 0;
  const detail::JointDeviceBytes need =
      detail::mcir_device_bytes(sizes, mc.states - mc.reference_states, warp.jacobian_weighting);
  report.device_bytes = need.total();
  const std::size_t free = detail::require_cuda("reconstruct_motion_corrected").device_free_bytes();
  detail::check_joint_device_bytes(need, sizes, detail::joint_available_bytes(free, o.gpu.memory_limit), free,
                                   o.gpu.memory_limit, "reconstruct_motion_corrected");
}

// CG on the normal equations (sum_s W_s^H N_s W_s + lambda R^H R) x = b.
template <class Normal> Image solve_cg(Normal normal, const Image &rhs, const ReconOptions &o, ReconReport &report) {
  ConjugateGradient<Normal, Image> cg(std::move(normal));
  cg.set_max_iterations(o.solver.iterations).set_tolerance(o.solver.tolerance);
  if (o.on_iteration) cg.set_callback(o.on_iteration);
  Image x = detail::announced_phase(o, "CG", NAN, [&] { return cg.solve(rhs); });
  report.iterations = cg.iterations();
  report.status = cg.info();
  report.residuals = cg.residual_history();
  report.solver = "cg";
  return x;
}

// With sparse terms: min_x 0.5 ||E x - y||_W^2 + 0.5 lambda ||R x||^2 + sum_i lambda_i R_i(T_i x),
// E = [P_s F S_c W_s], by the one proximal solver (mri/proximal_solvers.hpp) on MCIR's normal
// operator, exactly as reconstruct's drive_proximal (mri_backend/recon_driver.hpp) on its own:
// the data scaled by solver.scaling (bart_data_scale of b = sum_s W_s^H b_s, MCIR's adjoint image),
// the objective's constant 0.5 s^2 ||W^(1/2) y||^2 (energy: 0.5 ||W^(1/2) y||^2 unscaled), the
// image scaled back. With zero fields this is reconstruct's problem on all the data (tests/mcir).
template <class Normal>
Image solve_sparse(Normal normal, const Image &rhs, double energy, const Grid &grid, const ReconOptions &o,
                   ReconReport &report) {
  const double scale = o.solver.scaling == DataScaling::Bart ? bart_data_scale(rhs.values()) : 1.0;
  report.data_scale = scale;
  Image b(grid), zero(grid);
  VectorOps<Image>::copy(rhs, b);
  VectorOps<Image>::xpay(zero, scale, b); // b = scale rhs, as 0 + scale rhs (the solver's rule)
  ProximalSolver<Normal, Image> solver(std::move(normal), grid, o.solver.terms, o.solver.proximal);
  solver.set_max_iterations(o.solver.iterations).set_tolerance(o.solver.tolerance);
  const auto unscaled = [&](const Image &x) {
    Image image = x;
    for (cfloat &v : image.values()) v /= static_cast<float>(scale);
    return image;
  };
  if (o.on_iteration)
    solver.set_callback([&](int k, const Image &x, double change) { o.on_iteration(k, unscaled(x), change); });
  report.solver = to_string(solver.algorithm());
  const Image x = detail::announced_phase(o, "CG", NAN, [&] { return solver.solve(b, scale * scale * energy); });
  detail::record_proximal(report, solver);
  return unscaled(x);
}

// The solve on the CUDA backend (CudaBackend::motion_corrected): every state's b_s and Q_s made on
// the device as mri::reconstruct's device path makes them (no host round trip), or the cache's
// from an earlier call; the warps, the Toeplitz normals, the state sum and CG there too.
Image solve_on_device(const std::vector<KSpaceData> &parts, const std::vector<ImageWarp> &warps, const Grid &grid,
                      const ReconOptions &resolved, const CoilSensitivities *maps, ReconReport &report,
                      MotionCorrectionReport &mc, detail::McirCache &cache) {
  const detail::CudaBackend &cuda = detail::require_cuda("reconstruct_motion_corrected");
  if (cache.device && cache.device->states() != parts.size())
    detail::invalid_argument("cache.device->states()", cache.device->states(), "was made for other states");
  std::vector<const ImageWarp *> state_warps;
  for (const ImageWarp &w : warps) state_warps.push_back(&w);
  Image image = detail::announced_phase(resolved, "F^H D, Q and CG", NAN, [&] {
    if (!cache.device) {
      std::vector<const KSpaceData *> data;
      double energy = 0;
      for (const KSpaceData &d : parts) {
        data.push_back(&d);
        energy += 2 * detail::weighted_data_energy(d); // ||W^(1/2) D||^2
      }
      cache.device = cuda.motion_corrected(data, grid, resolved, maps, report);
      cache.data_energy = energy; // set with the products (a throw above leaves the cache empty)
    }
    return cache.device->solve(state_warps, cache.data_energy, report, mc);
  });
  report.fhd_seconds += mc.rhs_seconds; // the device's warps of b added to its F^H D
  mc.note = std::string("cuda: F^H D and Q per state (") + to_string(resolved.method) +
            "), warps, Toeplitz normals and CG (CudaBackend::motion_corrected)";
  return image;
}

} // namespace

MotionCorrectedResult reconstruct_motion_corrected(const std::vector<KSpaceData> &states, const Grid &grid,
                                                   const std::vector<DisplacementField> &fields,
                                                   const ReconOptions &options, const MotionCorrectionOptions &motion) {
  return detail::reconstruct_motion_corrected_cached(states, grid, fields, options, motion, nullptr);
}

namespace detail {

MotionCorrectedResult reconstruct_motion_corrected_cached(const std::vector<KSpaceData> &states, const Grid &grid,
                                                          const std::vector<DisplacementField> &fields,
                                                          const ReconOptions &options,
                                                          const MotionCorrectionOptions &motion, McirCache *cache) {
  const auto t_start = Clock::now();
  validate_options(options, grid);
  validate_states(states, grid);
  validate_fields(states, grid, fields);

  MotionCorrectedResult result;
  ReconReport &report = result.report;
  MotionCorrectionReport &mc = result.motion;
  mc.states = static_cast<int>(states.size());
  // The backend: Cuda where asked and usable (the NUFFT in float64 is CPU only): the maps'
  // calibration images on the device, every state's F^H D and Q and the solve (CG, or the proximal
  // solver with sparse terms) by CudaBackend::solve_motion_corrected; Cpu: all on the host, the
  // public operators' CPU paths (MotionCorrectionReport::note).
  const bool float64_nufft = options.method == Method::Nufft && options.precision == Precision::Float64;
  const bool sparse = !options.solver.terms.empty();
  if (float64_nufft && options.backend == Backend::Cuda)
    throw Unsupported("reconstruct_motion_corrected: method = nufft with precision = float64 runs on the CPU only");
  const Backend backend =
      float64_nufft ? Backend::Cpu : detail::resolve_backend(options.backend, "reconstruct_motion_corrected");
  report.backend = backend;
  if (options.backend == Backend::Auto)
    report.backend_note = backend == Backend::Cuda ? "auto: cuda (the whole solve on the device)"
                          : float64_nufft          ? "auto: cpu (method = nufft in float64 runs on the CPU only)"
                                                   : "auto: cpu (" + cuda_unavailable_reason() + ")";

  // The warps: fields checked above; the Jacobian weights made here.
  auto t = Clock::now();
  std::vector<ImageWarp> warps;
  warps.reserve(states.size());
  for (const DisplacementField &f : fields) {
    warps.push_back(absent(f) ? ImageWarp::identity(grid) : ImageWarp(f, motion.warp));
    mc.reference_states += warps.back().is_identity() ? 1 : 0;
  }
  mc.warp_seconds = seconds_since(t);

  // All states as one acquisition: the method as reconstruct resolves it for that, the maps
  // estimated (or checked) and the coils compressed once.
  std::size_t wrapped = 0;
  const KSpaceData all = concatenate(states, grid, wrapped);
  report.wrapped_samples = wrapped;
  ReconOptions resolved = options;
  if (options.method == Method::Auto) {
    const ReconSize size{grid.dims(), static_cast<double>(grid.voxels()), static_cast<double>(all.samples_per_coil()),
                         options.coils.virtual_coils > 0 ? options.coils.virtual_coils : all.coils(), 0};
    MethodChoice choice = choose_method(size, backend, options.precision, options.nufft.tolerance);
    resolved.method = choice.method;
    report.method_note = std::move(choice.note);
  }
  report.method = resolved.method;
  report.normal = Normal::Toeplitz;
  McirCache local;
  McirCache &kept = cache ? *cache : local;
  if ((backend == Backend::Cuda && !kept.rhs.empty()) || (backend == Backend::Cpu && kept.device))
    detail::invalid_argument("cache", kept.device ? "the device's" : "the host's",
                             std::string("holds another backend's products than ") + to_string(backend) + "'s");
  // The memory check before the device's products are made (a cache's are already there).
  if (backend == Backend::Cuda && !kept.device)
    check_device_memory(states, all, grid, resolved, mc, motion.warp, report);
  const detail::ReconCoils coils = detail::announced_phase(
      resolved, "coil maps", NAN, [&] { return detail::prepare_coils(all, grid, resolved, backend, report); });
  const KSpaceData &used = coils.compressed ? *coils.compressed : all;
  const CoilSensitivities *maps = coils.maps.get();

  const bool nufft = resolved.method == Method::Nufft;
  const NufftOptions nufft_options = detail::recon_nufft_options(resolved, backend);
  const OperatorOptions op{backend, resolved.precision, resolved.gpu.policy};
  std::vector<KSpaceData> parts;
  std::size_t offset = 0;
  for (const KSpaceData &d : states) {
    mc.samples.push_back(d.samples_per_coil());
    parts.push_back(state_part(used, offset, d.samples_per_coil()));
    offset += d.samples_per_coil();
  }

  if (backend == Backend::Cuda) {
    result.image = solve_on_device(parts, warps, grid, resolved, maps, report, mc, kept);
    report.total_seconds = seconds_since(t_start);
    return result;
  }

  // Each state's b_s and Q_s: made here, or the cache's from an earlier call on the same states.
  const bool cached = !kept.rhs.empty();
  if (cached && kept.rhs.size() != parts.size())
    detail::invalid_argument("cache.rhs.size()", kept.rhs.size(), "was made for other states");
  t = Clock::now();
  if (!cached)
    detail::announced_phase(resolved, "F^H D", NAN, [&] {
      for (const KSpaceData &d : parts) {
        kept.rhs.push_back(state_rhs(d, grid, maps, nufft, nufft_options, op));
        kept.data_energy += 2 * detail::weighted_data_energy(d); // ||W^(1/2) D||^2
      }
      return 0;
    });
  // b = sum_s W_s^H b_s.
  Image rhs(grid);
  {
    Image warped(grid);
    for (std::size_t s = 0; s < parts.size(); ++s) {
      warps[s].adjoint(kept.rhs[s], warped);
      VectorOps<Image>::axpy(1.0, warped, rhs);
    }
  }
  report.fhd_seconds = mc.rhs_seconds = seconds_since(t);

  // Q_s per state, and the normal operator sum_s W_s^H N_s W_s (+ lambda R^H R).
  t = Clock::now();
  if (!cached)
    detail::announced_phase(resolved, "Q", NAN, [&] {
      for (const KSpaceData &d : parts)
        kept.q.push_back(std::make_shared<QOperator>(
            nufft ? QOperator::from_q(grid, nufft_q(d.trajectory(), d.weights(), grid, nufft_options))
                  : QOperator(d.trajectory(), d.weights(), grid, op)));
      return 0;
    });
  kept.maps = maps;
  double cg_warp_seconds = 0;
  using StateNormal = Chain<AdjointOf<TimedWarp>, Chain<SenseToeplitzNormal, TimedWarp>>;
  std::vector<StateNormal> terms;
  for (std::size_t s = 0; s < parts.size(); ++s) {
    const TimedWarp w(warps[s], &cg_warp_seconds);
    terms.push_back(chain(adjoint_of(w), chain(SenseToeplitzNormal(kept.q[s], maps, grid), w)));
  }
  report.q_seconds = seconds_since(t);
  const auto normal = detail::regularized(StateSum<StateNormal>(std::move(terms), grid), options.solver.regularizer,
                                          options.solver.lambda, grid);

  t = Clock::now();
  if (sparse)
    result.image = solve_sparse(normal_equations(normal), rhs, 0.5 * kept.data_energy, grid, resolved, report);
  else
    result.image = solve_cg(normal_equations(normal), rhs, resolved, report);
  report.cg_seconds = seconds_since(t);
  mc.cg_warp_seconds = cg_warp_seconds;
  mc.note = std::string(to_string(backend)) + ": coil maps, F^H D and Q per state (" + to_string(resolved.method) +
            "); cpu: warps, Toeplitz normals and " + (sparse ? report.solver : std::string("CG"));
  report.total_seconds = seconds_since(t_start);
  return result;
}

void validate_motion_fields(const std::vector<KSpaceData> &states, const Grid &grid,
                            const std::vector<DisplacementField> &fields) {
  validate_fields(states, grid, fields);
}

double mcir_data_residual(const McirCache &cache, const std::vector<DisplacementField> &fields,
                          const ImageWarpOptions &warp, const Image &x) {
  const Grid &grid = x.grid();
  double fit = cache.data_energy;
  if (cache.device) fit += cache.device->data_fit(x);
  Image state(grid), normal_state(grid);
  for (std::size_t s = 0; s < cache.rhs.size(); ++s) { // the host's states (none with a device's)
    const bool moved = s < fields.size() && !absent(fields[s]);
    if (moved) ImageWarp(fields[s], warp).forward(x, state);
    const Image &p = moved ? state : x;
    SenseToeplitzNormal(cache.q[s], cache.maps, grid).forward(p, normal_state);
    fit += VectorOps<Image>::dot(p, normal_state).real() - 2 * VectorOps<Image>::dot(p, cache.rhs[s]).real();
  }
  return cache.data_energy > 0 ? std::sqrt(std::max(0.0, fit) / cache.data_energy) : 0.0;
}

Image refine_state(const McirCache &cache, std::size_t s, const Image &start, int iterations, double &residual) {
  // x_s = start + d, d from CG on N_s d = b_s - N_s start (the state's normal equations from start).
  if (cache.device) return cache.device->refine(s, start, iterations, residual);
  const Grid &grid = start.grid();
  const SenseToeplitzNormal normal(cache.q.at(s), cache.maps, grid);
  Image r(grid);
  normal.forward(start, r);
  VectorOps<Image>::xpay(cache.rhs[s], -1.0, r); // r = b_s - N_s start
  ConjugateGradient<decltype(normal_equations(normal)), Image> cg(normal_equations(normal));
  cg.set_max_iterations(iterations).set_tolerance(0);
  Image x = cg.solve(r);
  residual = cg.error();
  VectorOps<Image>::axpy(1.0, start, x);
  return x;
}

} // namespace detail
} // namespace mri
