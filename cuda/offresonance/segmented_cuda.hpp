#pragma once
// Time segmentation on the device (plain C++ header): mri::TimeSegmentation's tables (made on the
// device from fit_segmentation's fit, or segment_field's uploaded), and the segmented model's
// operators on device vectors, as lib/offresonance/segmented_operator.cpp has them on the host:
//   forward   A x   = sum_l B_l .* F(E_l .* x)                      L forward NUFFTs
//   adjoint   A^H y = sum_l conj(E_l) .* F^H(conj(B_l) .* y)         one batched adjoint NUFFT (L as coils)
//   normal    A^H W A by the L(L+1)/2 kernel spectra K_ll' on the doubled grid (SegmentedToeplitzDevice),
//             or as the forward, the weights and the adjoint (SegmentedDirectNormal).
// F is the gridding NUFFT (cuda/nufft/), B = TimeSegmentation::sample_coefficients (L x M),
// E = TimeSegmentation::voxel_phases (L x N).
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "mri/nufft.hpp"
#include "mri/offresonance.hpp"
#include "mri/regularizer.hpp"
#include "recon/device_image.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

namespace mri::cuda::detail {

class NufftDevicePlan; // nufft/gridding_cuda.hpp
class DeviceCoils;     // sense/sense_cuda.hpp

// The segmented F and F^H on one NUFFT plan. Calls enqueue on the plan's stream and return at once;
// they use the object's scratch: one call at a time.
class SegmentedFieldDevice {
public:
  // s: a segmentation of `samples` samples on `grid`; nufft: the plan of the trajectory on `grid`
  // (shared, e.g. with F^H D's), its adjoints by `gridding`. Throws InvalidArgument when the
  // tables' sizes differ from L x samples and L x grid.voxels().
  SegmentedFieldDevice(const TimeSegmentation &s, std::shared_ptr<NufftDevicePlan> nufft, const Grid &grid,
                       std::size_t samples, Gridding gridding);
  // The tables made on the device from fit's fit (mri::fit_segmentation: fit_hz, projector, centres,
  // reference_hz; tables it holds are not read) for `times` (M values) and the map's `field_hz`
  // (grid.voxels() values): make_segment_tables' entries in double, each rounded to float once, so
  // they equal the host's to float32 rounding. O(M L J + N L) on the device instead of the host's
  // O(M L) and O(N L) tables and their upload. Throws InvalidArgument for a fit without its
  // projector or sizes that differ.
  SegmentedFieldDevice(const TimeSegmentation &fit, std::span<const float> times, std::span<const float> field_hz,
                       std::shared_ptr<NufftDevicePlan> nufft, const Grid &grid, Gridding gridding);
  ~SegmentedFieldDevice();
  SegmentedFieldDevice(SegmentedFieldDevice &&) noexcept;
  SegmentedFieldDevice &operator=(SegmentedFieldDevice &&) noexcept;

  int segments() const;
  const Grid &grid() const;
  std::size_t samples() const;
  StreamHandle stream() const;                      // the NUFFT plan's
  const cfloat *device_sample_coefficients() const; // B, L x M
  const cfloat *device_voxel_phases() const;        // E, L x N
  // The tables copied to the host (tests), after the work queued on stream() so far.
  std::vector<cfloat> sample_coefficients() const;
  std::vector<cfloat> voxel_phases() const;
  // Device pointers (M samples, grid.voxels() image values), input and output distinct.
  void adjoint_device(const cfloat *samples, cfloat *image) const;
  void forward_device(const cfloat *image, cfloat *samples) const;
  // sum_c conj(S_c) .* A^H y_c (SENSE's right-hand side) of `coils` coils' samples (coils x M device
  // values, coil-major); maps: coils x N device values (null: one coil without a map). The coils go
  // adjoint_batch() at a time through one kernel, one adjoint NUFFT of coils x L vectors (the plan
  // grids them as coils) and one kernel combining segments and coils, instead of a pass per coil.
  // image: N device values, written.
  void adjoint_coils_device(const cfloat *samples, int coils, const cfloat *maps, cfloat *image) const;
  // The coils per pass of adjoint_coils_device: as many as 256 MiB of sample vectors and images
  // (L (M + N) complex values a coil) hold, at least 1.
  static int adjoint_batch(const Grid &grid, std::size_t samples, int segments, int coils);

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

// A^H W A of the segmented model as its forward, the weights and its adjoint (2L NUFFT halves an
// application): the normal where the Toeplitz kernels would not fit. apply_regularized adds
// lambda W^H W (the regulariser's stencil) after the adjoint.
class SegmentedDirectNormal : public SelfAdjointOnDevice<SegmentedDirectNormal> {
public:
  // op must outlive the operator. weights: empty (all ones) or one finite weight >= 0 per sample.
  SegmentedDirectNormal(const SegmentedFieldDevice &op, std::span<const float> weights);
  ~SegmentedDirectNormal();
  SegmentedDirectNormal(SegmentedDirectNormal &&) noexcept;
  SegmentedDirectNormal &operator=(SegmentedDirectNormal &&) noexcept;
  const Grid &grid() const;
  void apply(const DeviceImage &in, DeviceImage &out) const;
  void apply_regularized(const DeviceImage &in, DeviceImage &out, Regularizer r, double lambda) const;
  DeviceImage domain_vector() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

// How SegmentedToeplitzDevice runs an application's transforms and its L x L product (tests and
// bench_offresonance_gpu compare them; Auto is what reconstruct runs).
//   fft: Whole   batched cuFFT plans of whole padded grids, the grids one after another (every
//                padded voxel written by the pad, every pass over the whole grid);
//        Pruned  2D only: the pass's grids stored row-interleaved ([py][grid][px]), so that each
//                axis is one batched 1D plan: the forward's x pass runs on the ny rows the pad
//                fills (the others are zero), the inverse's x pass on the ny rows the crop reads,
//                and the pad writes into a buffer whose other rows stay zero (the y pass reads it
//                out of place): 8.75 passes of the pass's grids instead of 11.25 (docs/offresonance.md);
//        PrunedInPlace  Pruned's layout and plans with one set of grids: the pad writes every
//                row (the zeros too) into the transforms' buffer: 9.25 passes, half the memory of
//                Pruned, and a smaller working set (for grids that nearly fit the L2 cache);
//        Auto    Pruned for 2D grids (nx, ny > 1, nz = 1), else Whole.
//   coil_batch: the coils per pass (0: coil_batch_for's, as many as kBatchBytes hold; more than
//            the coils: all), e.g. to run a remainder pass in tests;
//   product: PerCoil  a thread per (frequency, coil): the kernel pairs read once per coil;
//            Fused    a thread per frequency for all the pass's coils: the pairs read once (held in
//                     registers, up to kRegisterPairs pairs: L <= 8; beyond, it runs as PerCoil);
//            Auto     Fused.
// Every path computes each coil's products in the same order (bitwise the same products); Pruned
// and Whole differ in the transforms' rounding only.
enum class SegmentedFft { Auto, Whole, Pruned, PrunedInPlace };
enum class SegmentedProduct { Auto, PerCoil, Fused };
struct SegmentedToeplitzPaths {
  SegmentedFft fft = SegmentedFft::Auto;
  SegmentedProduct product = SegmentedProduct::Auto;
  int coil_batch = 0;
};

// CUDA-event milliseconds of one application's stages, summed over its coil passes (benchmarks).
struct SegmentedStageTimes {
  double pad = 0, forward = 0, product = 0, inverse = 0, crop = 0;
  double total() const { return pad + forward + product + inverse + crop; }
};

// The segmented normal by Toeplitz embedding, with SENSE's coils batched (the device form of
// mri::SegmentedToeplitz around mri_backend/sense.hpp's coil sum):
//   out = sum_c conj(S_c) .* sum_l conj(E_l) .* crop(IFFT(sum_l' K_ll' FFT(pad(E_l' .* S_c .* x))))
//         + lambda R^H R x
// K_ll'(d) = sum_m w_m conj(b_l(t_m)) b_l'(t_m) exp(+2 pi i k_m . d / n) on the doubled grid, centred
// and scaled by 1 / (its voxels) as the host's kernels; only the L(L+1)/2 pairs l <= l' are made (by
// batched adjoint NUFFTs of the trajectory doubled, pair_chunk() pairs per batch) and stored: K_l'l's
// spectrum is conj(K_ll')'s at the same frequency, which the product reads instead. An application
// pads `coil_batch()` coils x L segments, one batched cuFFT forward (per axis with Pruned), the L x L
// product per frequency, one batched inverse, one crop-and-combine kernel (SegmentedToeplitzPaths).
// Its buffers come from the gridding plans' stream-ordered pool (no cudaMalloc or cudaFree per
// reconstruction) and its pruned cuFFT plans from a process-wide cache.
class SegmentedToeplitzDevice : public SelfAdjointOnDevice<SegmentedToeplitzDevice> {
public:
  // The most segments the per-frequency product is compiled for; more: SegmentedDirectNormal.
  static constexpr int kMaxSegments = 16;
  // The Fused product holds a frequency's kernel pairs in registers up to this many (L <= 8);
  // beyond, it runs as PerCoil (holding them for a loop over coils would spill registers).
  static constexpr int kRegisterPairs = 36;
  // op (and coils) must outlive the operator. points: the trajectory's M points on the device (as
  // given to op's NUFFT plan); nufft: validated options (their tolerance and kernel make the
  // kernels' adjoint NUFFT on the doubled grid); coils: the maps (null: one coil without maps);
  // r, lambda: the regulariser every application adds; paths: see SegmentedToeplitzPaths (the
  // pruned paths on a grid that is not 2D run Whole). Throws InvalidArgument (weights, lambda,
  // paths.coil_batch < 0), Unsupported for op.segments() > kMaxSegments.
  SegmentedToeplitzDevice(const SegmentedFieldDevice &op, const KPoint *points, std::span<const float> weights,
                          const NufftOptions &nufft, Gridding gridding, const DeviceCoils *coils, Regularizer r,
                          double lambda, SegmentedToeplitzPaths paths = {});
  ~SegmentedToeplitzDevice();
  SegmentedToeplitzDevice(SegmentedToeplitzDevice &&) noexcept;
  SegmentedToeplitzDevice &operator=(SegmentedToeplitzDevice &&) noexcept;

  // Device bytes of the kernels (L(L+1)/2 spectra), of `coil_batch` x L padded grids with their
  // cuFFT work area (about as much again; Pruned, Auto's path for 2D grids, holds a second set:
  // the pad's), and of the kernels' construction, on `grid`'s doubled grid.
  static std::size_t bytes(const Grid &grid, int segments, int coil_batch);
  // The coils per pass for `coils` coils (1 without maps): as many as kBatchBytes of padded grids
  // hold (Pruned counts both sets).
  static int coil_batch_for(const Grid &grid, int segments, int coils);
  // The kernel pairs per batched adjoint NUFFT and FFT while the spectra are made: all L(L+1)/2 where
  // their doubled-grid Q take at most 256 MiB (each also takes M complex coefficients).
  static int pair_chunk(const Grid &grid, int segments);
  // What `paths` resolves to on `grid` (Auto -> Pruned for 2D, Fused).
  static SegmentedToeplitzPaths resolve(SegmentedToeplitzPaths paths, const Grid &grid);
  int coil_batch() const;
  SegmentedToeplitzPaths paths() const; // resolved
  double kernel_seconds() const; // the kernels' construction (NUFFTs and FFTs), wall time
  const Grid &grid() const;
  // out = the normal of x (+ the regulariser), on op's stream; x and out distinct images of grid().
  void apply(const DeviceImage &x, DeviceImage &out) const;
  // apply() with CUDA events between its stages; waits for it.
  SegmentedStageTimes apply_timed(const DeviceImage &x, DeviceImage &out) const;
  DeviceImage domain_vector() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace mri::cuda::detail
