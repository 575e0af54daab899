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
//   segmented  mri::TimeSegmentation's fit (fit_segmentation, on the host), its tables made on the
//              device from it; the forward as L NUFFTs of E_l .* x weighted by B_l, the adjoint as
//              one batched adjoint NUFFT of the L conj(B_l) .* y (SENSE's coils batched too), the normal by the L(L+1)/2 kernel spectra on the doubled
//              grid with SENSE's coils batched, or directly (cuda/offresonance/segmented_cuda.hpp).
// mri::reconstruct with a field map and backend = Cuda calls CudaBackend::reconstruct_offresonance,
// whose steps are those of lib/offresonance/recon_offresonance.cpp (FieldSteps) on device images,
// through the same driver (recon_driver.hpp) and SENSE (sense.hpp).
#include <algorithm>
#include <cstddef>

#include "mri/grid.hpp"
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

// ---- Device memory of a reconstruction with a field map (the off-resonance helper's block) ----
// What FieldGpuSteps (cuda/offresonance/recon_field_cuda.cu) holds, by phase, so that reconstruct
// refuses before it allocates (as cuda/recon's reconstruct_device_bytes for the uncorrected one).
// Plain arithmetic on the sizes, the device's plans given in bytes by the backend; tested on the
// CPU (tests/offresonance/test_offresonance_memory.cpp).
struct FieldDeviceSizes {
  Grid grid;
  std::size_t samples = 0;      // M, one coil's
  int coils = 0;                // the maps' coils; 0: one coil without maps
  int segments = 0;             // L of time segmentation; 0: the exact field sums
  int adjoint_coils = 1;        // segmented: coils per pass of the batched adjoint (L vectors and images each)
  bool toeplitz = false;        // segmented: the segment Toeplitz kernels (else the direct normal)
  std::size_t toeplitz_bytes = 0; // their spectra, padded grids and work area (SegmentedToeplitzDevice::bytes)
  std::size_t nufft_plan = 0;   // segmented: one NUFFT plan of the trajectory on `grid`, its adjoint's coil block included
  std::size_t q_plan = 0;       // segmented with toeplitz: the kernels' plan on grid.doubled(), likewise
  std::size_t exact_plan = 0;   // exact: the field sums' plan (field_fourier_cuda.hpp)
};

struct FieldDeviceBytes {
  std::size_t fhd = 0, q = 0, cg = 0; // each phase's peak, what every phase holds included
  // The largest, with 5% and 128 MiB for library modules and slack (DeviceBytes::peak's margin).
  std::size_t peak() const {
    const std::size_t most = std::max({fhd, q, cg});
    return most + most / 20 + (std::size_t{128} << 20);
  }
};

// Held throughout: the maps (and the coil images' scratch), the plan, the segmentation's tables
// (L (M + N) complex values), the adjoint's sample vectors and images (adjoint_coils L (M + N)) and
// the forward's image and sample vector. F^H D: the right-hand side, a coil image, and the samples
// (segmented: every coil's, uploaded at once; exact: one coil's). Q: the kernels' plan and the
// Toeplitz operator. CG: five images (x, r, p, Ap, rhs), two more with SENSE, and the normal: the
// Toeplitz operator, or the direct normal's samples and weights (M (8 + 4) bytes).
inline FieldDeviceBytes field_reconstruct_device_bytes(const FieldDeviceSizes &s) {
  const std::size_t n = static_cast<std::size_t>(s.grid.voxels()), m = s.samples, c8 = sizeof(cfloat);
  const auto L = static_cast<std::size_t>(s.segments);
  const auto coils = static_cast<std::size_t>(std::max(1, s.coils));
  std::size_t held = s.coils > 0 ? coils * n * c8 + n * c8 : 0;
  held += s.segments > 0 ? s.nufft_plan + (1 + static_cast<std::size_t>(s.adjoint_coils)) * L * (m + n) * c8 + (n + m) * c8
                         : s.exact_plan;
  FieldDeviceBytes b;
  b.fhd = held + n * c8 + (s.coils > 0 ? n * c8 : 0) + (s.segments > 0 ? coils : 1) * m * c8;
  b.q = s.segments > 0 && s.toeplitz ? held + n * c8 + s.q_plan + s.toeplitz_bytes : 0;
  const std::size_t iterates = 5 * n * c8 + (s.coils > 0 ? 2 * n * c8 : 0);
  b.cg = held + iterates + (s.segments > 0 && s.toeplitz ? s.toeplitz_bytes : m * (c8 + sizeof(float)));
  return b;
}

} // namespace mri::detail
