#include "mri/fourier.hpp"

#include <cmath>
#include <string>

#include "backend.hpp"
#include "mri/error.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "operator_checks.hpp"
#include "mri_backend/direct_sums.hpp"

namespace mri {
namespace {

void check_finite(std::span<const cfloat> v, const char *name) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i].real()) || !std::isfinite(v[i].imag()))
      detail::invalid_argument(std::string(name) + "[" + std::to_string(i) + "]", v[i], "must be finite");
}

} // namespace

FourierOperator::FourierOperator(Trajectory trajectory, Grid grid, OperatorOptions options)
    : trajectory_(std::move(trajectory).wrapped(grid)), grid_(grid), options_(options) {
  if (trajectory_.empty()) detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  options_.backend = detail::resolve_backend(options_.backend, "FourierOperator");
  if (options_.backend == Backend::Cuda) {
    const detail::CudaBackend &cuda = *detail::cuda_plugin().backend; // resolve_backend checked it
    options_.policy = cuda.resolve_policy(options_.policy, options_.precision);
    device_plan_ = cuda.fourier(trajectory_, grid_, grid_);
  }
}

using detail::check_image_grid;
using detail::check_sample_count;

std::vector<cfloat> FourierOperator::apply(const Image &image) const {
  check_image_grid(image, grid_);
  check_finite({image.data(), image.size()}, "image");
  std::vector<cfloat> out(trajectory_.size());
  forward(image, out);
  return out;
}

Image FourierOperator::adjoint(std::span<const cfloat> samples) const {
  check_sample_count(samples.size(), trajectory_.size());
  check_finite(samples, "samples");
  Image out(grid_);
  run_adjoint(samples, out);
  return out;
}

void FourierOperator::forward(const Image &image, std::vector<cfloat> &samples) const {
  check_image_grid(image, grid_);
  check_sample_count(samples.size(), trajectory_.size());
  if (device_plan_)
    device_plan_->forward(options_.precision, image.data(), samples.data());
  else if (options_.precision == Precision::Float64)
    detail::forward_sum_f64(trajectory_, image, samples.data());
  else
    detail::forward_sum_f32(trajectory_, image, samples.data());
}

void FourierOperator::adjoint(const std::vector<cfloat> &samples, Image &image) const {
  check_image_grid(image, grid_);
  check_sample_count(samples.size(), trajectory_.size());
  run_adjoint(samples, image);
}

void FourierOperator::run_adjoint(std::span<const cfloat> samples, Image &image) const {
  if (device_plan_)
    device_plan_->adjoint(options_.policy, samples.data(), image.data());
  else if (options_.precision == Precision::Float64)
    detail::adjoint_sum_f64(trajectory_, samples, grid_, grid_, image.data());
  else
    detail::adjoint_sum_f32(trajectory_, samples, grid_, grid_, image.data());
}

FhDOperator::FhDOperator(Trajectory trajectory, Grid grid, OperatorOptions options)
    : fourier_(std::move(trajectory), grid, options) {}

Image FhDOperator::apply(const KSpaceData &data) const {
  if (data.samples_per_coil() != fourier_.trajectory().size())
    detail::invalid_argument("data.trajectory().size()", data.samples_per_coil(),
                             "must equal the operator's trajectory size " +
                                 std::to_string(fourier_.trajectory().size()));
  if (data.coils() != 1) detail::invalid_argument("data.coils()", data.coils(), "multi-coil F^H D is not implemented yet");
  return fourier_.adjoint(data.weighted_samples());
}

} // namespace mri
