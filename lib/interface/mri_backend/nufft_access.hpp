#pragma once
// The plan a NufftOperator runs, for the backends and their tests (not part of the public API):
// plan() on the CPU backend, device_plan() on Cuda (the other is null).
#include <memory>

#include "mri/nufft.hpp"

namespace mri::detail {

struct NufftAccess {
  static const std::shared_ptr<NufftPlan> &plan(const NufftOperator &op) { return op.plan_; }
  static const std::shared_ptr<DeviceNufft> &device_plan(const NufftOperator &op) { return op.device_plan_; }
};

} // namespace mri::detail
