#pragma once
// The plan a NufftOperator runs, and F and F^H on raw buffers, for the backends, the benchmarks
// and the tests (not part of the public API): plan() on the CPU backend, device_plan() on Cuda
// (the other is null).
#include <memory>

#include "mri/nufft.hpp"

namespace mri::detail {

struct NufftAccess {
  static const std::shared_ptr<NufftPlan> &plan(const NufftOperator &op) { return op.plan_; }
  static const std::shared_ptr<DeviceNufft> &device_plan(const NufftOperator &op) { return op.device_plan_; }
  // F x and F^H y as the operator's forward and adjoint, on buffers of grid().voxels() image
  // values and trajectory().size() samples, nothing checked: for loops over images stacked in
  // one array (a coil's image at c * voxels), where an Image per slice would be a copy.
  static void forward(const NufftOperator &op, const cfloat *image, cfloat *samples);
  static void adjoint(const NufftOperator &op, const cfloat *samples, cfloat *image);
};

} // namespace mri::detail
