#pragma once
// The exact field-corrected normal operator on the device (plain C++ header): A^H W A by the field
// kernels' forward, the weights and the adjoint (field_fourier_cuda.hpp). The field term has no
// Toeplitz form (A^H W A is not a convolution), so this is the exact model's only normal, as on
// the host (lib/offresonance/recon_offresonance.cpp).
#include <memory>
#include <span>

#include "field_fourier_cuda.hpp"
#include "mri/regularizer.hpp"
#include "recon/device_image.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

namespace mri::cuda::detail {

class FieldDirectNormal : public SelfAdjointOnDevice<FieldDirectNormal> {
public:
  // plan: shared (e.g. with F^H D's); kernel: what both halves run (field_kernel()); weights: empty
  // (all ones) or one finite weight >= 0 per sample. Work runs on the plan's stream.
  FieldDirectNormal(std::shared_ptr<FieldFourierPlan> plan, FieldKernel kernel, std::span<const float> weights);
  ~FieldDirectNormal();
  FieldDirectNormal(FieldDirectNormal &&) noexcept;
  FieldDirectNormal &operator=(FieldDirectNormal &&) noexcept;
  const Grid &grid() const;
  // out = A^H W A in (+ lambda W^H W in); in and out distinct images of grid().
  void apply(const DeviceImage &in, DeviceImage &out) const;
  void apply_regularized(const DeviceImage &in, DeviceImage &out, Regularizer r, double lambda) const;
  DeviceImage domain_vector() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace mri::cuda::detail
