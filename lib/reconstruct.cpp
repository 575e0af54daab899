#include "mri/reconstruct.hpp"

#include <chrono>
#include <optional>

#include "backend.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/toeplitz.hpp"
#include "mri/toeplitz_cache.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/recon_report.hpp"

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

void validate(const KSpaceData &data, const Grid &grid, const ReconOptions &o) {
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

ReconResult reconstruct_cpu(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                            Clock::time_point t_start) {
  ReconReport report;
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

  // F^H (w .* D): the exact sum, or one adjoint NUFFT (whose plan the direct normal reuses).
  auto t = Clock::now();
  std::optional<NufftOperator> nufft_op;
  Image rhs(grid);
  if (nufft) {
    nufft_op.emplace(data.trajectory(), grid, nufft_options);
    nufft_op->adjoint(data.weighted_samples().data(), rhs.data());
  } else {
    rhs = FhDOperator(data.trajectory(), grid, op).apply(data);
  }
  report.fhd_seconds = seconds_since(t);
  // Only the direct normal reuses the F^H D plan: with Toeplitz it goes before Q's plan on the
  // doubled grid is made (the two never held at once: the process's peak memory).
  if (options.normal == Normal::Toeplitz) nufft_op.reset();

  // Q on the doubled grid: the exact sum, or one adjoint NUFFT there (or its spectrum from the cache).
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
  ConjugateGradient<CpuNormal, Image> cg(
      CpuNormal{q ? &*q : nullptr, direct ? &*direct : nullptr, options.regularizer, options.lambda});
  cg.set_max_iterations(options.iterations).set_tolerance(options.tolerance);
  if (options.on_iteration) cg.set_callback(options.on_iteration);
  Image image = cg.solve(rhs);
  report.cg_seconds = seconds_since(t);
  return detail::finish_recon(std::move(image), std::move(report), cg, t_start);
}

} // namespace

ReconResult reconstruct(const KSpaceData &data, const Grid &grid, const ReconOptions &options) {
  const auto t_start = Clock::now();
  validate(data, grid, options);
  // Samples on or beyond the grid's edge are their periodic images (Trajectory::check_range):
  // wrapped once here, so every operator below sees [-n/2, n/2) and nothing is copied otherwise.
  const std::size_t outside = data.trajectory().check_range(grid);
  std::optional<KSpaceData> wrapped;
  if (outside > 0) wrapped.emplace(data.trajectory().wrapped(grid), data.samples(), data.weights(), data.coils());
  const KSpaceData &inside = wrapped ? *wrapped : data;
  ReconResult r = recon_backend(options) == Backend::Cuda
                      ? detail::require_cuda("reconstruct").reconstruct(inside, grid, options, t_start)
                      : reconstruct_cpu(inside, grid, options, t_start);
  r.report.wrapped_samples = outside;
  return r;
}

} // namespace mri
