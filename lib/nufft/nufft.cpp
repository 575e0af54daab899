// mri::NufftOperator (the CPU plan in nufft_plan.cpp, the device plan through the CUDA plugin)
// and nufft_q (see nufft.hpp for the maths and conventions).
#include "mri/nufft.hpp"

#include <algorithm>
#include <optional>

#include "mri/error.hpp"
#include "mri/kspace.hpp"
#include "mri/linear_operator.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/nufft_access.hpp"
#include "nufft_plan.hpp"
#include "operator_checks.hpp"
#include "trajectory/trajectory_range.hpp"
#include "mri_backend/q_trajectory.hpp"

namespace mri {

NufftOperator::NufftOperator(Trajectory trajectory, Grid grid, NufftOptions options)
    : grid_(grid), options_(detail::validated_nufft_options(options, grid.dims())) {
  if (options_.backend == Backend::Cuda) {
    // The device checks the samples' range as it plans (a host pass costs milliseconds at 2^21
    // samples); only a trajectory that reaches n/2 or beyond pays the wrap and a second plan.
    const detail::CudaBackend &cuda = detail::require_cuda("NufftOperator");
    device_plan_ = cuda.nufft(trajectory, grid_, options_);
    if (!device_plan_) {
      trajectory = std::move(trajectory).wrapped(grid_);
      device_plan_ = cuda.nufft(trajectory, grid_, options_);
      if (!device_plan_) throw Unsupported("NufftOperator: the device still finds a sample outside the grid's "
                                           "k-space after wrapping (a float rounding disagreement)");
    }
    trajectory_ = std::move(trajectory);
    const std::shared_ptr<const detail::NufftSetup> c = detail::nufft_setup(grid_, options_); // kept: no second fit
    kernel_ = c->kernel;
    oversampled_ = Grid(c->g[0], c->g[1], c->g[2]);
    return;
  }
  trajectory_ = std::move(trajectory).wrapped(grid);
  plan_ = std::make_shared<detail::NufftPlan>(trajectory_, grid_, options_);
  kernel_ = plan_->kernel();
  oversampled_ = plan_->oversampled();
}

void NufftOperator::forward(const Image &image, std::span<cfloat> samples) const {
  detail::check_image_grid(image, grid_);
  detail::check_sample_count(samples.size(), trajectory_.size());
  detail::NufftAccess::forward(*this, image.data(), samples.data());
}

void NufftOperator::adjoint(std::span<const cfloat> samples, Image &image) const {
  detail::check_image_grid(image, grid_);
  detail::check_sample_count(samples.size(), trajectory_.size());
  detail::NufftAccess::adjoint(*this, samples.data(), image.data());
}

void detail::NufftAccess::forward(const NufftOperator &op, const cfloat *image, cfloat *samples) {
  if (op.device_plan_) return op.device_plan_->forward(image, samples);
  op.plan_->forward(image, samples);
}
void detail::NufftAccess::adjoint(const NufftOperator &op, const cfloat *samples, cfloat *image) {
  if (op.device_plan_) return op.device_plan_->adjoint(samples, image, op.options_.gridding);
  op.plan_->adjoint(samples, image, op.options_.gridding);
}

void NufftOperator::adjoint_coils(const cfloat *samples, int coils, cfloat *images) const {
  if (coils <= 0) detail::invalid_argument("coils", coils, "must be at least 1");
  if (!samples) detail::invalid_argument("samples", "null", "needs coils * trajectory.size() values");
  if (!images) detail::invalid_argument("images", "null", "needs coils * grid.voxels() values");
  if (device_plan_) return device_plan_->adjoint_coils(samples, coils, images, options_.gridding);
  plan_->adjoint_coils(samples, coils, images, options_.gridding);
}

void NufftOperator::forward_device(const cfloat *image, cfloat *samples) const {
  detail::require_device_plan(device_plan_ != nullptr, "NufftOperator::forward_device");
  device_plan_->forward_on_device(image, samples);
}

void NufftOperator::adjoint_device(const cfloat *samples, cfloat *image) const {
  detail::require_device_plan(device_plan_ != nullptr, "NufftOperator::adjoint_device");
  device_plan_->adjoint_on_device(samples, image, options_.gridding);
}

Image nufft_q(const Trajectory &any_trajectory, std::span<const float> weights, const Grid &grid,
              const NufftOptions &options) {
  if (any_trajectory.empty()) detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  std::optional<Trajectory> storage;
  const Trajectory &trajectory = detail::inside_grid(any_trajectory, grid, storage);
  detail::check_weights(weights, trajectory.size());
  std::vector<cfloat> w(trajectory.size(), cfloat(1.0f));
  std::copy(weights.begin(), weights.end(), w.begin());
  const NufftOperator op(detail::q_trajectory(trajectory, grid), grid.doubled(), options);
  return mri::adjoint(op, w);
}

Trajectory detail::q_trajectory(const Trajectory &trajectory, const Grid &grid) {
  // exp(i 2 pi k d / n) = exp(i 2 pi (2k) d / (2n)): the adjoint on the doubled grid with
  // 2k. An axis of extent 1 (not doubled) has coordinate 0 only: its k is irrelevant.
  std::vector<KPoint> scaled(trajectory.points());
  for (KPoint &k : scaled) {
    k.kx = grid.nx() > 1 ? 2 * k.kx : 0;
    k.ky = grid.ny() > 1 ? 2 * k.ky : 0;
    k.kz = grid.nz() > 1 ? 2 * k.kz : 0;
  }
  return Trajectory(trajectory.dims(), std::move(scaled));
}

} // namespace mri
