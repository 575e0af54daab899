#pragma once
// The off-resonance model as the device backend takes it (issue 43's GPU half; cuda/offresonance/).
// lib/ keeps the model, the validation and the choice of form (lib/offresonance/); the backend
// supplies the operators on its own vectors, as it does DeviceFourier and DeviceNufft:
//
//   exact      DeviceFieldFourier (CudaBackend::field_fourier): the exact sums with the extra phase
//              per (sample, voxel) pair, (F x)_m = sum_x x(x) exp(-2 pi i (k_m . x / n + f(x) t_m)),
//              F^H its adjoint. On the GPU the F^H D stages' per-pair form with one more multiply-add
//              before the trig (cuda/offresonance/field_fourier_cuda.hpp says why Tuned's angle
//              addition and SeparableGemm's factorisation do not take the field term, and which
//              kernel each KernelPolicy runs).
//   segmented  the tables of mri::TimeSegmentation (segment_field, on the host) uploaded once; the
//              forward as L NUFFTs of E_l .* x weighted by B_l, the adjoint as one batched adjoint
//              NUFFT of the L conj(B_l) .* y, the normal by the L(L+1)/2 kernel spectra on the doubled
//              grid with SENSE's coils batched, or directly (cuda/offresonance/segmented_cuda.hpp).
// mri::reconstruct with a field map and backend = Cuda calls CudaBackend::reconstruct_offresonance,
// whose steps are those of lib/offresonance/recon_offresonance.cpp (FieldSteps) on device images,
// through the same driver (recon_driver.hpp) and SENSE (sense.hpp).
#include "mri/image.hpp"
#include "mri/options.hpp"

namespace mri::detail {

// The exact field-corrected F on a device: the host's FieldFourierOperator's contract
// (mri/offresonance.hpp) on host arrays; calls block. Arguments as DeviceFourier's: the adjoint's
// kernel follows `policy` (resolved for the operator's precision), the forward's `precision`.
// Not thread-safe: one call at a time.
class DeviceFieldFourier {
public:
  virtual ~DeviceFieldFourier() = default;
  virtual void adjoint(KernelPolicy policy, const cfloat *samples, cfloat *image) = 0;
  virtual void forward(Precision precision, const cfloat *image, cfloat *samples) = 0;
};

} // namespace mri::detail
