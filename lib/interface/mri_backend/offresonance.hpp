#pragma once
// The off-resonance model as a device backend would take it (issue 43's GPU half; cuda/ does not
// implement it yet, and CudaBackend has no factory for it: adding one bumps kCudaPluginAbi).
// lib/ keeps the model, the segmentation and the choice of operator (lib/offresonance/); a
// backend supplies the operators on its own vectors, as it does DeviceFourier and DeviceNufft:
//
//   exact      DeviceFieldFourier: the exact sums with the extra phase per (sample, voxel) pair,
//              (F x)_m = sum_x x(x) exp(-2 pi i (k_m . x / n + f(x) t_m)), F^H its adjoint. On the
//              GPU it is the F^H D stages with one more multiply-add before the trig (the per-voxel
//              2 pi f(x) in a register, t_m beside k_m in each sample's record); the separable and
//              angle-addition policies (SeparableGemm, Tuned) do not apply as they stand, since
//              the field term couples voxel and sample.
//   segmented  the tables of mri::TimeSegmentation (B: L x M per sample, E: L x N per voxel,
//              plain complex<float> arrays) uploaded once; the forward as L NUFFTs of E_l .* x
//              weighted by B_l, the adjoint as one batched adjoint NUFFT of the L conj(B_l) .* y
//              (DeviceNufft::adjoint_coils), the normal by the L(L+1)/2 kernel spectra of
//              SegmentedToeplitz (one batched adjoint NUFFT on the doubled grid) and 2L FFTs.
// The reconstruction's steps are those of lib/offresonance/recon_offresonance.cpp (FieldSteps) on
// device images, through the same driver (recon_driver.hpp) and SENSE (sense.hpp).
#include <span>

#include "mri/image.hpp"
#include "mri/offresonance.hpp"
#include "mri/options.hpp"

namespace mri::detail {

// The exact field-corrected F on a device: the host's FieldFourierOperator's contract
// (mri/offresonance.hpp) on device memory. Arguments as DeviceFourier's.
class DeviceFieldFourier {
public:
  virtual ~DeviceFieldFourier() = default;
  virtual void adjoint(KernelPolicy policy, const cfloat *samples, cfloat *image) = 0;
  virtual void forward(Precision precision, const cfloat *image, cfloat *samples) = 0;
};

// What a device needs to build either form: the trajectory (wrapped into the grid), the samples'
// times, the map on the grid, and, for the segmented form, the segmentation made on the host.
struct FieldModel {
  const Trajectory *trajectory = nullptr;
  std::span<const float> times;
  const FieldMap *field = nullptr;
  const TimeSegmentation *segmentation = nullptr; // null: the exact form
};

} // namespace mri::detail
