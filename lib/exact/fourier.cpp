#include "mri/fourier.hpp"

#include <string>

#include "backend.hpp"
#include "mri/error.hpp"
#include "mri/linear_operator.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "operator_checks.hpp"
#include "mri_backend/direct_sums.hpp"

namespace mri {

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

void FourierOperator::forward(const Image &image, std::span<cfloat> samples) const {
  check_image_grid(image, grid_);
  check_sample_count(samples.size(), trajectory_.size());
  if (device_plan_)
    device_plan_->forward(options_.precision, image.data(), samples.data());
  else if (options_.precision == Precision::Float64)
    detail::forward_sum_f64(trajectory_, image, samples.data());
  else
    detail::forward_sum_f32(trajectory_, image, samples.data());
}

void FourierOperator::adjoint(std::span<const cfloat> samples, Image &image) const {
  check_image_grid(image, grid_);
  check_sample_count(samples.size(), trajectory_.size());
  if (device_plan_)
    device_plan_->adjoint(options_.policy, samples.data(), image.data());
  else if (options_.precision == Precision::Float64)
    detail::adjoint_sum_f64(trajectory_, samples, grid_, grid_, image.data());
  else
    detail::adjoint_sum_f32(trajectory_, samples, grid_, grid_, image.data());
}

void FourierOperator::forward(std::span<const cdouble> image, std::span<cdouble> samples) const {
  detail::check_voxel_count(image.size(), grid_);
  detail::check_sample_count(samples.size(), trajectory_.size());
  if (device_plan_)
    device_plan_->forward_f64(image.data(), samples.data());
  else
    detail::forward_sum_f64(trajectory_, grid_, image.data(), samples.data());
}

void FourierOperator::adjoint(std::span<const cdouble> samples, std::span<cdouble> image) const {
  detail::check_voxel_count(image.size(), grid_);
  detail::check_sample_count(samples.size(), trajectory_.size());
  if (device_plan_)
    device_plan_->adjoint_f64(samples.data(), image.data());
  else
    detail::adjoint_sum_f64(trajectory_, samples, grid_, grid_, image.data());
}

void FourierOperator::forward_device(const cfloat *image, cfloat *samples) const {
  detail::require_device_plan(device_plan_ != nullptr, "FourierOperator::forward_device");
  device_plan_->forward_on_device(options_.precision, image, samples);
}

void FourierOperator::adjoint_device(const cfloat *samples, cfloat *image) const {
  detail::require_device_plan(device_plan_ != nullptr, "FourierOperator::adjoint_device");
  device_plan_->adjoint_on_device(options_.policy, samples, image);
}

FhDOperator::FhDOperator(Trajectory trajectory, Grid grid, OperatorOptions options)
    : fourier_(std::move(trajectory), grid, options) {}

Image FhDOperator::apply(const KSpaceData &data) const {
  if (data.samples_per_coil() != fourier_.trajectory().size())
    detail::invalid_argument("data.trajectory().size()", data.samples_per_coil(),
                             "must equal the operator's trajectory size " +
                                 std::to_string(fourier_.trajectory().size()));
  if (data.coils() != 1) detail::invalid_argument("data.coils()", data.coils(), "multi-coil F^H D is not implemented yet");
  return mri::adjoint(fourier_, data.weighted_samples()); // refuses NaN/Inf
}

} // namespace mri
