#include "mri/reconstruct.hpp"

#include <chrono>
#include <optional>

#include "backend.hpp"
#include "coils/recon_coils.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/toeplitz.hpp"
#include "mri/toeplitz_cache.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/recon_report.hpp"
#include "mri_backend/sense.hpp"

namespace mri {

const char *to_string(Normal n) { return n == Normal::Toeplitz ? "toeplitz" : "direct"; }
const char *to_string(Method m) { return m == Method::Exact ? "exact" : "nufft"; }

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
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void validate(const KSpaceData &data, const ReconOptions &o) {
  if (o.iterations < 0) detail::invalid_argument("options.iterations", o.iterations, "must be >= 0");
  if (!(o.tolerance >= 0) || !std::isfinite(o.tolerance))
    detail::invalid_argument("options.tolerance", o.tolerance, "must be finite and >= 0");
  if (!(o.lambda >= 0) || !std::isfinite(o.lambda))
    detail::invalid_argument("options.lambda", o.lambda, "must be finite and >= 0");
  if (data.trajectory().empty()) detail::invalid_argument("data.trajectory().size()", 0, "needs at least one sample");
  if (o.method == Method::Nufft) {
    const double floor = o.precision == Precision::Float64 ? kNufftMinTolerance : kNufftFloat32MinTolerance;
    if (!(o.nufft_tolerance >= floor && o.nufft_tolerance <= kNufftMaxTolerance))
      detail::invalid_argument("options.nufft_tolerance", o.nufft_tolerance,
                               "must be in [" + std::to_string(floor) + ", " + std::to_string(kNufftMaxTolerance) +
                                   "] with precision = " + to_string(o.precision));
  }
}

// The GPU NUFFT is float32 only: method = Nufft with Float64 runs on the CPU (Auto) or is refused.
Backend recon_backend(const ReconOptions &o) {
  if (o.method == Method::Nufft && o.precision == Precision::Float64) {
    if (o.backend == Backend::Cuda)
      throw Unsupported("reconstruct: method = nufft with precision = float64 runs on the CPU only (the CUDA "
                        "NUFFT is float32); use backend = cpu or auto");
    return Backend::Cpu;
  }
  return detail::resolve_backend(o.backend, "reconstruct");
}

// F^H W F by F then F^H (normal = Direct) on the CPU: the exact sums, or the NUFFT pair.
class DirectNormal {
public:
  DirectNormal(const KSpaceData &data, const Grid &grid, Precision precision, const NufftOperator *nufft)
      : trajectory_(data.trajectory()), weights_(data.weights()), grid_(grid), precision_(precision),
        nufft_(nufft), samples_(data.trajectory().size()) {}

  void apply(const Image &in, Image &out) const {
    if (nufft_) {
      nufft_->apply(in.data(), samples_.data());
      weigh();
      nufft_->adjoint(samples_.data(), out.data());
      return;
    }
    if (precision_ == Precision::Float64)
      detail::forward_sum_f64(trajectory_, in, samples_.data());
    else
      detail::forward_sum_f32(trajectory_, in, samples_.data());
    weigh();
    if (precision_ == Precision::Float64)
      detail::adjoint_sum_f64(trajectory_, samples_, grid_, grid_, out.data());
    else
      detail::adjoint_sum_f32(trajectory_, samples_, grid_, grid_, out.data());
  }

private:
  void weigh() const {
    for (std::size_t m = 0; m < weights_.size(); ++m) samples_[m] *= weights_[m];
  }
  const Trajectory &trajectory_;
  const std::vector<float> &weights_;
  Grid grid_;
  Precision precision_;
  const NufftOperator *nufft_;
  mutable std::vector<cfloat> samples_;
};

// (F^H W F + lambda R^H R) as one callable for ConjugateGradient.
struct CpuNormal {
  const QOperator *q;
  const DirectNormal *direct;
  Regularizer regularizer;
  double lambda;
  void operator()(const Image &in, Image &out) const {
    if (q)
      q->apply(in.data(), out.data());
    else
      direct->apply(in, out);
    add_regularizer_normal(regularizer, lambda, in.grid(), in.data(), out.data());
  }
};

// The right-hand side: F^H (w .* D) for one coil, or sum_c conj(S_c) .* F^H (w .* D_c) (SENSE);
// exact sums or one adjoint NUFFT per coil.
Image cpu_rhs(const KSpaceData &data, const Grid &grid, const OperatorOptions &op, const NufftOperator *nufft,
              const detail::HostCoils *coils) {
  const std::vector<cfloat> weighted = data.weighted_samples();
  const std::size_t m = data.samples_per_coil();
  std::optional<FhDOperator> exact;
  if (!nufft) exact.emplace(data.trajectory(), grid, op);
  const auto coil_fhd = [&](int c, Image &out) {
    const std::span<const cfloat> y(weighted.data() + static_cast<std::size_t>(c) * m, m);
    if (nufft)
      nufft->adjoint(y.data(), out.data());
    else
      out = exact->fourier().adjoint(y);
  };
  Image rhs(grid);
  if (!coils) {
    coil_fhd(0, rhs);
    return rhs;
  }
  Image scratch(grid);
  detail::sense_rhs(*coils, 1, [&](int c, int) { coil_fhd(c, scratch); }, [&](int) -> const Image & { return scratch; },
                    rhs);
  return rhs;
}

template <class Normal> Image solve_cg(ConjugateGradient<Normal, Image> &cg, const ReconOptions &o, const Image &rhs) {
  cg.set_max_iterations(o.iterations).set_tolerance(o.tolerance);
  if (o.on_iteration) cg.set_callback(o.on_iteration);
  return cg.solve(rhs);
}

ReconResult reconstruct_cpu(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                            const CoilSensitivities *maps, ReconReport report, Clock::time_point t_start) {
  report.backend = Backend::Cpu;
  if (options.backend == Backend::Auto)
    report.backend_note = options.method == Method::Nufft && options.precision == Precision::Float64
                              ? "auto: cpu (the CUDA NUFFT is float32)"
                              : "auto: cpu (" + cuda_unavailable_reason() + ")";
  report.normal = options.normal;
  report.method = options.method;
  const OperatorOptions op{Backend::Cpu, options.precision, options.policy};
  const bool nufft = options.method == Method::Nufft;
  const NufftOptions nufft_options = detail::recon_nufft_options(options, Backend::Cpu);
  std::optional<detail::HostCoils> coils;
  if (maps) coils.emplace(*maps, options.regularizer, options.lambda);

  // F^H (w .* D) per coil: the exact sum, or one adjoint NUFFT (whose plan the direct normal reuses).
  auto t = Clock::now();
  std::optional<NufftOperator> nufft_op;
  if (nufft) nufft_op.emplace(data.trajectory(), grid, nufft_options);
  const Image rhs = cpu_rhs(data, grid, op, nufft_op ? &*nufft_op : nullptr, coils ? &*coils : nullptr);
  report.fhd_seconds = seconds_since(t);
  // Only the direct normal reuses the F^H D plan: with Toeplitz it goes before Q's plan on the
  // doubled grid is made (the two never held at once: the process's peak memory).
  if (options.normal == Normal::Toeplitz) nufft_op.reset();

  // Q on the doubled grid: the exact sum, or one adjoint NUFFT there (or its spectrum from the
  // cache). It does not depend on the coil: one Q for all.
  std::optional<QOperator> q;
  std::optional<DirectNormal> direct;
  const auto compute_q = [&] {
    const auto tq = Clock::now();
    q.emplace(nufft ? QOperator::from_q(grid, nufft_q(data.trajectory(), data.weights(), grid, nufft_options))
                    : QOperator(data.trajectory(), data.weights(), grid, op));
    report.q_seconds += seconds_since(tq);
  };
  if (options.normal == Normal::Direct) {
    direct.emplace(data, grid, options.precision, nufft ? &*nufft_op : nullptr);
  } else if (!options.q_cache_dir.empty()) {
    t = Clock::now();
    const ToeplitzCacheKey key = toeplitz_cache_key(data.trajectory(), data.weights(), grid, options.precision,
                                                    nufft ? options.nufft_tolerance : 0);
    report.q_cache_file = toeplitz_cache_file(options.q_cache_dir, key);
    report.setup_seconds += seconds_since(t);
    detail::toeplitz_through_cache(
        report, key, grid, std::filesystem::exists(report.q_cache_file),
        [&](std::span<const float> spectrum) {
          const auto tf = Clock::now();
          q.emplace(QOperator::from_spectrum(grid, spectrum));
          report.fft_setup_seconds = seconds_since(tf);
        },
        compute_q, [&] { return q->spectrum(); });
  } else {
    compute_q();
  }

  t = Clock::now();
  const QOperator *q_ptr = q ? &*q : nullptr;
  const DirectNormal *direct_ptr = direct ? &*direct : nullptr;
  if (coils) {
    // SENSE: the one-coil normal without its regulariser inside, the regulariser once outside.
    using Sense = detail::SenseNormal<Image, detail::HostCoils, CpuNormal>;
    ConjugateGradient<Sense, Image> cg(Sense(*coils, CpuNormal{q_ptr, direct_ptr, Regularizer::None, 0.0}, rhs));
    Image image = solve_cg(cg, options, rhs);
    report.cg_seconds = seconds_since(t);
    return detail::finish_recon(std::move(image), std::move(report), cg, t_start);
  }
  ConjugateGradient<CpuNormal, Image> cg(CpuNormal{q_ptr, direct_ptr, options.regularizer, options.lambda});
  Image image = solve_cg(cg, options, rhs);
  report.cg_seconds = seconds_since(t);
  return detail::finish_recon(std::move(image), std::move(report), cg, t_start);
}

} // namespace

ReconResult reconstruct(const KSpaceData &data, const Grid &grid, const ReconOptions &options) {
  const auto t_start = Clock::now();
  validate(data, options);
  // Samples on or beyond the grid's edge are their periodic images (Trajectory::check_range):
  // wrapped once here, so every operator below sees [-n/2, n/2) and nothing is copied otherwise.
  const std::size_t outside = data.trajectory().check_range(grid);
  std::optional<KSpaceData> wrapped;
  if (outside > 0) wrapped.emplace(data.trajectory().wrapped(grid), data.samples(), data.weights(), data.coils());
  const KSpaceData &inside = wrapped ? *wrapped : data;
  ReconReport report;
  const Backend backend = recon_backend(options);
  const detail::ReconCoils coils = detail::prepare_coils(inside, grid, options, backend, report);
  const KSpaceData &used = coils.compressed ? *coils.compressed : inside;
  const CoilSensitivities *maps = coils.maps.get();
  ReconResult r = backend == Backend::Cuda
                      ? detail::require_cuda("reconstruct").reconstruct(used, grid, options, maps, std::move(report), t_start)
                      : reconstruct_cpu(used, grid, options, maps, std::move(report), t_start);
  r.report.wrapped_samples = outside;
  return r;
}

} // namespace mri
