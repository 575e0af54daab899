#include "mri/reconstruct.hpp"

#include <chrono>

#include "backend.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/toeplitz.hpp"

namespace mri {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void validate(const ReconOptions &o) {
  if (o.iterations < 0) detail::invalid_argument("options.iterations", o.iterations, "must be >= 0");
  if (!(o.tolerance >= 0) || !std::isfinite(o.tolerance))
    detail::invalid_argument("options.tolerance", o.tolerance, "must be finite and >= 0");
  if (!(o.lambda >= 0) || !std::isfinite(o.lambda))
    detail::invalid_argument("options.lambda", o.lambda, "must be finite and >= 0");
}

// (F^H W F + lambda R^H R) as one callable for ConjugateGradient.
struct NormalOperator {
  const QOperator *q;
  Regularizer regularizer;
  double lambda;
  void operator()(const Image &in, Image &out) const {
    q->apply(in.data(), out.data());
    add_regularizer_normal(regularizer, lambda, in.grid(), in.data(), out.data());
  }
};

} // namespace

ReconResult reconstruct(const KSpaceData &data, const Grid &grid, const ReconOptions &options) {
  validate(options);
  const auto t_start = Clock::now();
  ReconReport report;
  const OperatorOptions op{detail::resolve_backend(options.backend, options.precision), options.precision,
                          options.policy};
  report.backend = op.backend;

  auto t = Clock::now();
  const FhDOperator fhd(data.trajectory(), grid, op);
  const Image rhs = fhd.apply(data);
  report.fhd_seconds = seconds_since(t);

  t = Clock::now();
  const QOperator q(data.trajectory(), data.weights(), grid, op);
  report.q_seconds = seconds_since(t);

  t = Clock::now();
  ConjugateGradient<NormalOperator, Image> cg(NormalOperator{&q, options.regularizer, options.lambda});
  cg.set_max_iterations(options.iterations).set_tolerance(options.tolerance);
  if (options.on_iteration) cg.set_callback(options.on_iteration);
  ReconResult result{cg.solve(rhs), {}};
  report.cg_seconds = seconds_since(t);

  report.iterations = cg.iterations();
  report.status = cg.info();
  report.residuals = cg.residual_history();
  report.total_seconds = seconds_since(t_start);
  result.report = std::move(report);
  return result;
}

} // namespace mri
