#pragma once
// The normal operator F^H W F on the GPU, as plain C++ (no CUDA types): the Toeplitz form (Q on
// the 2x grid, its spectrum kept on the device, two cuFFT transforms per application) and the
// direct form (forward then adjoint through FhdPlan). Both apply to DeviceImages, model the operator
// core's LinearOperator (self-adjoint), and can add the regulariser lambda W^H W in the same pass
// (the definitions of mri/detail/regularizer_stencil.hpp).
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "recon/device_image.hpp"
#include "mri/grid.hpp"
#include "mri/nufft.hpp"
#include "mri/options.hpp"
#include "mri/regularizer.hpp"
#include "mri/trajectory.hpp"

namespace mri::cuda {

namespace detail {
class NufftDevicePlan; // gridding_cuda.hpp
}

// How the Toeplitz application runs its zero-pad, spectrum multiply and crop (chosen by
// bench_recon_gpu on RECON-3D, 128^3 -> 256^3: docs/history.md, "One CG iteration of RECON-3D").
enum class ToeplitzFft {
  Auto,      // Pruned for 3D padded grids of >= 2^21 voxels, else Unfused
  Unfused,   // pad kernel (into a buffer whose zeros are never rewritten), out-of-place 3D FFT,
             // multiply kernel, in-place inverse 3D FFT, crop kernel (+ regulariser)
  Pruned,    // as Unfused, but the FFTs skip what is known: the forward transforms the slabs
             // (xy planes in 3D, rows in 2D) only where the input is nonzero (half of them), then
             // the last axis; the inverse transforms the last axis, then only the slabs the crop
             // keeps. Same arithmetic per output, about 2/3 of the FFT work and traffic
  Callbacks, // cuFFT LTO callbacks: pad in the forward FFT's load, multiply in its store, crop
             // (+ regulariser) in the inverse FFT's store; no pass of their own. Falls back to
             // Unfused, saying why, when the plan cannot be made (no nvJitLink, JIT failure)
  PrunedCallback // Pruned, with the multiply as an LTO store callback of the forward last-axis
                 // transform (falls back to Pruned)
};
const char *to_string(ToeplitzFft);
// True when this build embeds the LTO callbacks (the Callbacks path can be attempted).
bool toeplitz_callbacks_built();

// Where the construction's time went (seconds; each phase ends with a synchronisation).
struct ToeplitzSetup {
  double q_seconds = 0;         // Q on the 2x grid (FhdPlan, half the offsets), incl. its uploads
  double fft_setup_seconds = 0; // cuFFT plans (JIT for callbacks), Hermitian completion, FFT(Q)
  double transfer_seconds = 0;  // a host spectrum's upload (from_spectrum)
};

// The operator core's form (mri/linear_operator.hpp) of a self-adjoint operator on device images:
// forward = adjoint = Op::apply, the range its domain (Op::domain_vector).
template <class Op> class SelfAdjointOnDevice {
public:
  using Domain = DeviceImage;
  using Range = DeviceImage;
  DeviceImage range_vector() const { return op().domain_vector(); }
  void forward(const DeviceImage &in, DeviceImage &out) const { op().apply(in, out); }
  void adjoint(const DeviceImage &in, DeviceImage &out) const { op().apply(in, out); }

private:
  const Op &op() const { return static_cast<const Op &>(*this); }
};

class QOperator : public SelfAdjointOnDevice<QOperator> {
public:
  // The spectrum of Q(d) = sum_m w_m exp(+i 2 pi k_m . d / n) on grid.doubled(). 3D grids under
  // KernelPolicy::Auto: computed directly as a sum of separable Dirichlet kernels on the tensor
  // cores (cuda/exact/dirichlet_spectrum.cuh; float32-class accuracy). Otherwise Q by the F^H D kernel
  // `policy`:
  // offsets with d_h <= 0 along the last axis h of extent > 1 are summed directly (one FhdPlan on
  // an (n_h + 1)-plane grid, coefficients modulated to shift its origin), the rest by Q(-d) =
  // conj(Q(d)); offsets d_a = -n_a never enter the crop and are zeroed. The spectrum
  // K = Re(FFT(Q)) / L stays on the device. weights: empty (all ones) or one per sample, finite
  // and >= 0. Throws InvalidArgument (bad input, like mri::QOperator), Unsupported (no device).
  QOperator(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
            KernelPolicy policy = KernelPolicy::Auto, ToeplitzFft fft = ToeplitzFft::Auto,
            StreamHandle stream = nullptr);
  // From a host spectrum (mri/toeplitz_cache.hpp), e.g. read from the cache.
  QOperator(const Grid &grid, std::span<const float> spectrum, ToeplitzFft fft = ToeplitzFft::Auto,
            StreamHandle stream = nullptr);
  // From Q itself on grid.doubled() in image order (offset d at index d + n per axis, mri::QOperator::
  // q()'s layout), e.g. computed by the NUFFT (method = Nufft); or from Q's half as the exact sum
  // makes it (offsets d_h <= 0 along the last axis h of extent > 1, on the (n_h + 1)-plane grid;
  // the rest completed here by Q(-d) = conj(Q(d)), as the trajectory constructor does), e.g. summed
  // by voxel slabs over devices (device_slabs.hpp). setup().q_seconds stays 0 (the caller computed
  // Q). Throws InvalidArgument if q is on neither grid.
  QOperator(const Grid &grid, const DeviceImage &q, ToeplitzFft fft = ToeplitzFft::Auto,
            StreamHandle stream = nullptr);
  // The spectrum of `source` (an operator on any device) on the current device, with its FFT
  // path: copied device to device (peer copy from another device), no host round trip; plans of
  // its own on `stream` (a stream of the current device). What several devices each need
  // (cuda/sense/coil_split.hpp).
  QOperator(const QOperator &source, StreamHandle stream);
  ~QOperator();
  QOperator(QOperator &&) noexcept;
  QOperator &operator=(QOperator &&) noexcept;

  const Grid &grid() const;
  ToeplitzFft fft() const;          // the path that runs (Auto resolved, fallbacks applied)
  const std::string &fft_note() const; // e.g. "cufft-callbacks" or "unfused (callbacks: <why not>)"
  const ToeplitzSetup &setup() const;
  // How the spectrum was made: "dirichlet-tensor-cores", "q-sum/<policy> + fft" (Q summed by
  // that F^H D kernel), "device q + fft" (from a device Q), "spectrum upload", "spectrum copy"
  // (from another operator).
  const std::string &q_path() const;
  StreamHandle stream() const;

  // out = F^H W F in, enqueued on the operator's stream (ordered after work on in's stream, and
  // before later work on out's). in and out: distinct images on grid().
  // Not re-entrant: one operator per host thread.
  void apply(const DeviceImage &in, DeviceImage &out) const;
  // out = (F^H W F + lambda W^H W) in, the regulariser's stencil added by the crop (or the crop
  // callback) in the same pass: what mri_backend/normal_assembly.hpp's regularized() builds from
  // this operator. Throws InvalidArgument if lambda < 0 or not finite.
  void apply_regularized(const DeviceImage &in, DeviceImage &out, Regularizer r, double lambda) const;
  // Images of grid() on the operator's stream (SelfAdjointOnDevice). F^H W F is the normal
  // operator of F: compose it as it is, not through normal_of.
  DeviceImage domain_vector() const;

  // The spectrum, downloaded (what the cache stores).
  std::vector<float> spectrum() const;
  // The spectrum on the device: grid().doubled().voxels() values, FFT order, scaled by 1 / L (what
  // apply() multiplies by; the coil-batched SENSE operator shares it).
  const float *device_spectrum() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

// F^H (w .* (F x)) by FhdPlan's forward then adjoint (F^H F as two sums, without Q): two
// launches of O(N*M) each per application; or by the gridding NUFFT's forward and adjoint.
class DirectNormalOperator : public SelfAdjointOnDevice<DirectNormalOperator> {
public:
  // F x by FhdPlan's fastest forward path of `precision`, F^H y by `policy`.
  DirectNormalOperator(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
                       KernelPolicy policy = KernelPolicy::Auto, Precision precision = Precision::Float32,
                       StreamHandle stream = nullptr);
  // F x and F^H y by a device NUFFT plan of `grid` (shared: e.g. the one that computed F^H D),
  // its adjoint gridding by `gridding`.
  DirectNormalOperator(std::shared_ptr<detail::NufftDevicePlan> nufft, Gridding gridding, std::span<const float> weights,
                       const Grid &grid, std::size_t samples);
  ~DirectNormalOperator();
  DirectNormalOperator(DirectNormalOperator &&) noexcept;
  DirectNormalOperator &operator=(DirectNormalOperator &&) noexcept;

  const Grid &grid() const;
  // As QOperator's: out = F^H W F in; apply_regularized adds lambda W^H W in by one kernel
  // after F^H (on the plan's stream); images of grid() on that stream.
  void apply(const DeviceImage &in, DeviceImage &out) const;
  void apply_regularized(const DeviceImage &in, DeviceImage &out, Regularizer r, double lambda) const;
  DeviceImage domain_vector() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

// Device memory (bytes) a GPU reconstruct of `grid` from `samples` samples needs at its peak,
// estimated from the buffers each phase holds (F^H D; Q and its spectrum; the CG iterations).
// F^H D plans count at their smallest (streamed) form: an exact-sum plan streams the samples
// when they do not fit (detail::FhdPlan), so the refusal is for problems that cannot run at all.
// SENSE (coils > 0): the maps stay on the device through every phase, F^H D adds a per-coil
// image and CG two (mri_backend/sense.hpp); coils' samples go up a block at a time: the NUFFT's
// gridding block, or `exact_block` coils for the exact sum (FhdPlan::coils_per_pass).
// fixed_point: the NUFFT's adjoints run Gridding::ScatterFixed (its plans hold an integer grid).
struct DeviceBytes {
  std::size_t fhd = 0, q = 0, cg = 0;
  std::size_t peak() const;
};
DeviceBytes reconstruct_device_bytes(const Grid &grid, std::size_t samples, bool direct, bool q_from_cache,
                                     bool nufft = false, int coils = 0, int exact_block = 1,
                                     bool fixed_point = false);

// Benchmark reference: one forward plus one inverse plain C2C cuFFT transform of `grid` (in place,
// no callbacks), event-timed, median of `repeats` after a warm-up. Milliseconds.
double time_cufft_pair_ms(const Grid &grid, int repeats = 9);

// Frees the cached cuFFT plans (the Toeplitz plans are kept between operators of one padded
// grid, so a second reconstruction pays no planning or JIT).
void release_toeplitz_plans();

} // namespace mri::cuda
