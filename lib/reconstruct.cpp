#include "mri/reconstruct.hpp"

#include <chrono>
#include <optional>

#include "backend.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/toeplitz.hpp"
#include "mri/toeplitz_cache.hpp"
#include "recon_report.hpp"
#ifdef MRI_HAVE_CUDA
#include "recon_cuda.hpp"
#endif

namespace mri {

const char *to_string(Normal n) { return n == Normal::Toeplitz ? "toeplitz" : "direct"; }

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
  data.trajectory().check_within(grid);
}

// F^H W F by the two direct sums (normal = Direct) on the CPU.
class DirectNormal {
public:
  DirectNormal(const KSpaceData &data, const Grid &grid, Precision precision)
      : trajectory_(data.trajectory()), weights_(data.weights()), grid_(grid), precision_(precision),
        samples_(data.trajectory().size()) {}

  void apply(const Image &in, Image &out) const {
    if (precision_ == Precision::Float64)
      detail::forward_sum_f64(trajectory_, in, samples_.data());
    else
      detail::forward_sum_f32(trajectory_, in, samples_.data());
    for (std::size_t m = 0; m < weights_.size(); ++m) samples_[m] *= weights_[m];
    if (precision_ == Precision::Float64)
      detail::adjoint_sum_f64(trajectory_, samples_, grid_, grid_, out.data());
    else
      detail::adjoint_sum_f32(trajectory_, samples_, grid_, grid_, out.data());
  }

private:
  const Trajectory &trajectory_;
  const std::vector<float> &weights_;
  Grid grid_;
  Precision precision_;
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
  report.normal = options.normal;
  const OperatorOptions op{Backend::Cpu, options.precision, options.policy};

  auto t = Clock::now();
  const FhDOperator fhd(data.trajectory(), grid, op);
  const Image rhs = fhd.apply(data);
  report.fhd_seconds = seconds_since(t);

  std::optional<QOperator> q;
  std::optional<DirectNormal> direct;
  if (options.normal == Normal::Direct) {
    direct.emplace(data, grid, options.precision);
  } else if (!options.q_cache_dir.empty()) {
    t = Clock::now();
    const ToeplitzCacheKey key = toeplitz_cache_key(data.trajectory(), data.weights(), grid, options.precision);
    report.q_cache_file = toeplitz_cache_file(options.q_cache_dir, key);
    report.setup_seconds += seconds_since(t);
    t = Clock::now();
    if (std::filesystem::exists(report.q_cache_file)) {
      try {
        const std::vector<float> spectrum = load_toeplitz_spectrum(report.q_cache_file, key, grid);
        report.q_seconds = seconds_since(t);
        t = Clock::now();
        q.emplace(QOperator::from_spectrum(grid, spectrum));
        report.fft_setup_seconds = seconds_since(t);
        report.q_cache = QCacheStatus::Hit;
      } catch (const IoError &e) {
        report.q_cache = QCacheStatus::Rejected;
        report.q_cache_message = e.what();
      }
    } else {
      report.q_cache = QCacheStatus::Miss;
    }
    if (!q) {
      t = Clock::now();
      q.emplace(data.trajectory(), data.weights(), grid, op);
      report.q_seconds = seconds_since(t);
      detail::store_q_spectrum(report, key, grid, [&] { return q->spectrum(); });
    }
  } else {
    t = Clock::now();
    q.emplace(data.trajectory(), data.weights(), grid, op);
    report.q_seconds = seconds_since(t);
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
  const Backend backend = detail::resolve_backend(options.backend, options.precision);
#ifdef MRI_HAVE_CUDA
  if (backend == Backend::Cuda) return cuda::detail::reconstruct_cuda(data, grid, options);
#endif
  (void)backend;
  return reconstruct_cpu(data, grid, options, t_start);
}

} // namespace mri
