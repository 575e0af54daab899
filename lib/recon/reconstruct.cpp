#include "mri/reconstruct.hpp"

#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "backend.hpp"
#include "sense/recon_coils.hpp"
#include "mri/error.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/recon_report.hpp"
#include "method_choice.hpp"
#include "offresonance/recon_offresonance.hpp"
#include "recon_cpu.hpp"
#include "recon_validation.hpp"

namespace mri {

const char *to_string(Normal n) { return n == Normal::Toeplitz ? "toeplitz" : "direct"; }
const char *to_string(Method m) {
  switch (m) {
  case Method::Exact: return "exact";
  case Method::Nufft: return "nufft";
  case Method::Auto: return "auto";
  }
  return "?";
}

const char *to_string(QCacheStatus s) {
  switch (s) {
  case QCacheStatus::Off: return "off";
  case QCacheStatus::Hit: return "hit";
  case QCacheStatus::Miss: return "miss";
  case QCacheStatus::Rejected: return "rejected";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

// The sparse terms and the proximal settings, before any work: a bad term fails here, not after
// F^H D and Q. frames = 0: a single image (reconstruct), else a stack (reconstruct_frames).
void validate_terms(const Grid &grid, const SolverOptions &s, int frames) {
  for (std::size_t i = 0; i < s.terms.size(); ++i) {
    const std::string name = "options.solver.terms[" + std::to_string(i) + "] (" + to_string(s.terms[i]) + ")";
    if (frames == 0)
      validate(s.terms[i], grid, name);
    else
      validate(s.terms[i], grid, frames, name);
  }
  if (s.terms.empty()) return;
  resolve_proximal_algorithm(s.proximal.algorithm, s.terms);
  validate(s.proximal, "options.solver.proximal");
}

// A field map needs the samples' times: refuse rather than return an uncorrected image.
void validate_offresonance(const KSpaceData &data, const ReconOptions &o) {
  if (!o.offresonance.field_map) return;
  if (!data.has_sample_times())
    detail::invalid_argument("data.sample_times().size()", 0,
                             "options.offresonance.field_map needs the samples' times (KSpaceData's sample_times)");
}

} // namespace

namespace detail {

void validate_recon(const KSpaceData &data, const Grid &grid, const ReconOptions &o, int frames) {
  const SolverOptions &s = o.solver;
  validate_offresonance(data, o);
  validate_terms(grid, s, frames);
  if (s.iterations < 0) detail::invalid_argument("options.solver.iterations", s.iterations, "must be >= 0");
  if (!(s.tolerance >= 0) || !std::isfinite(s.tolerance))
    detail::invalid_argument("options.solver.tolerance", s.tolerance, "must be finite and >= 0");
  if (!(s.lambda >= 0) || !std::isfinite(s.lambda))
    detail::invalid_argument("options.solver.lambda", s.lambda, "must be finite and >= 0");
  if (data.trajectory().empty()) detail::invalid_argument("data.trajectory().size()", 0, "needs at least one sample");
  if (!o.gpu.devices.empty() && o.backend == Backend::Cpu)
    detail::invalid_argument("options.gpu.devices", o.gpu.devices.size(),
                             "entries need the CUDA backend, but backend = cpu (leave devices empty for the CPU)");
  if (o.method == Method::Auto && !(o.nufft.tolerance > 0 && o.nufft.tolerance <= kNufftMaxTolerance))
    detail::invalid_argument("options.nufft.tolerance", o.nufft.tolerance,
                             "must be in (0, " + std::to_string(kNufftMaxTolerance) +
                                 "] (method = auto: below the NUFFT's reach it runs the exact sums)");
  if (o.method == Method::Nufft) {
    const double floor = nufft_min_tolerance(o.precision);
    if (!(o.nufft.tolerance >= floor && o.nufft.tolerance <= kNufftMaxTolerance))
      detail::invalid_argument("options.nufft.tolerance", o.nufft.tolerance,
                               "must be in [" + std::to_string(floor) + ", " + std::to_string(kNufftMaxTolerance) +
                                   "] with precision = " + to_string(o.precision));
  }
}

// The GPU NUFFT is float32 only: method = Nufft with Float64 runs on the CPU (Auto) or is refused.
// options.gpu.devices asks for GPUs: Auto then runs on them or says why it cannot, as backend = cuda.
// method = Auto takes the backend as it resolves and then picks the method for it.
Backend recon_backend(const ReconOptions &o) {
  const Backend requested = o.gpu.devices.empty() ? o.backend : Backend::Cuda;
  if (o.method == Method::Nufft && o.precision == Precision::Float64) {
    if (requested == Backend::Cuda)
      throw Unsupported("reconstruct: method = nufft with precision = float64 runs on the CPU only (the CUDA "
                        "NUFFT is float32); use backend = cpu or auto, without devices");
    return Backend::Cpu;
  }
  return detail::resolve_backend(requested, "reconstruct");
}

MethodChoice resolve_method(const KSpaceData &data, const Grid &grid, const ReconOptions &o, Backend backend) {
  if (o.method != Method::Auto) return {o.method, {}};
  const ReconSize size{grid.dims(), static_cast<double>(grid.voxels()), static_cast<double>(data.samples_per_coil()),
                       o.coils.virtual_coils > 0 ? o.coils.virtual_coils : data.coils(),
                       o.solver.normal == Normal::Direct ? o.solver.iterations : 0};
  return choose_method(size, backend, o.precision, o.nufft.tolerance);
}

} // namespace detail

ReconResult reconstruct(const KSpaceData &data, const Grid &grid, const ReconOptions &options) {
  const auto t_start = Clock::now();
  detail::validate_recon(data, grid, options, 0);
  // Samples on or beyond the grid's edge are their periodic images (Trajectory::check_range):
  // wrapped once here, so every operator below sees [-n/2, n/2) and nothing is copied otherwise.
  const std::size_t outside = data.trajectory().check_range(grid);
  std::optional<KSpaceData> wrapped;
  if (outside > 0) wrapped.emplace(data.trajectory().wrapped(grid), data.samples(), data.weights(), data.coils());
  const KSpaceData &inside = wrapped ? *wrapped : data;
  ReconReport report;
  const bool field_correction = options.offresonance.field_map != nullptr;
  const Backend backend = detail::recon_backend(options);
  // With a field map on the GPU, Auto runs time segmentation as on the CPU: the cost model weighs
  // the uncorrected sums, and the exact field-corrected normal has no Toeplitz form.
  MethodChoice method = field_correction && options.method == Method::Auto && backend == Backend::Cuda &&
                                options.precision == Precision::Float32
                            ? MethodChoice{Method::Nufft, "auto: nufft (time segmentation; the exact field-corrected "
                                                          "normal has no Toeplitz form)"}
                            : detail::resolve_method(inside, grid, options, backend);
  ReconOptions resolved = options; // the backends see Exact or Nufft, never Auto
  resolved.method = method.method;
  report.method_note = std::move(method.note);
  if (backend == Backend::Cpu && options.backend == Backend::Auto && options.method == Method::Nufft &&
      options.precision == Precision::Float64)
    report.backend_note = "auto: cpu (the CUDA NUFFT is float32)";
  const detail::ReconCoils coils = detail::announced_phase(resolved, "coil maps", NAN, [&] {
    return detail::prepare_coils(inside, grid, resolved, backend, report);
  });
  const KSpaceData &used = coils.compressed ? *coils.compressed : inside;
  const CoilSensitivities *maps = coils.maps.get();
  if (field_correction) {
    const FieldMap &given = *options.offresonance.field_map;
    if (given.grid() != grid) {
      resolved.offresonance.field_map = std::make_shared<const FieldMap>(given.resampled(grid));
      report.offresonance_note = "field map resampled from " + std::to_string(given.grid().nx()) + "x" +
                                 std::to_string(given.grid().ny()) + "x" + std::to_string(given.grid().nz()) + " to " +
                                 std::to_string(grid.nx()) + "x" + std::to_string(grid.ny()) + "x" +
                                 std::to_string(grid.nz()) + " (linear, same field of view)";
    }
    if (!resolved.offresonance.field_map->is_zero()) {
      ReconResult r = detail::reconstruct_offresonance(used, data.sample_times(), grid, resolved, maps,
                                                       std::move(report), t_start, backend);
      r.report.wrapped_samples = outside;
      return r;
    }
    report.offresonance_note += std::string(report.offresonance_note.empty() ? "" : "; ") +
                                "field map zero everywhere: the uncorrected model is exact";
  }
  ReconResult r = backend == Backend::Cuda
                      ? detail::require_cuda("reconstruct").reconstruct(used, grid, resolved, maps, std::move(report), t_start)
                      : detail::reconstruct_cpu(used, grid, resolved, maps, std::move(report), t_start);
  r.report.wrapped_samples = outside;
  return r;
}

} // namespace mri
