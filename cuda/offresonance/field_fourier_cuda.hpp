#pragma once
// The exact field-corrected F and F^H on the device (plain C++ header: the plugin, the GPU tests
// and the benchmark include it). The model of mri/offresonance.hpp (docs/conventions.md):
//   adjoint  s(x) = sum_m c_m exp(+2 pi i (k_m . x / n + f(x) t_m))
//   forward  y_m  = sum_x v(x) exp(-2 pi i (k_m . x / n + f(x) t_m))
// with x the centred voxel coordinates of `grid` and k the trajectory wrapped into [-n/2, n/2).
//
// Why not the uncorrected kernels with one more term: Tuned and SeparableGemm never form a
// sine and cosine per (sample, voxel) pair. Tuned evaluates one per sample and 16-voxel row
// segment and reaches the others by angle addition along x (the phase is linear in x); SeparableGemm
// factors the phase per axis into a matrix product. The field term f(x) t_m is neither linear in
// x nor separable, so every pair needs its own sine and cosine: the field kernels are the F^H D
// stages' per-pair form (Stone et al. 2008) with the phase
//   turns = k_x x / n_x + k_y y / n_y + k_z z / n_z + (f(x) - f0) t_m
// (the k part as the SfuTrig stage forms it, the field part one more multiply-add), f0 the map's
// mid-range: exp(2 pi i f0 t_m) is a per-sample factor, applied exactly (in double) to the
// coefficients (adjoint) or the results (forward), so the per-pair field phase spans only
// (max - min) / 2 * t. Which kernel runs for each KernelPolicy: field_kernel().
//
// Summation (deterministic): a thread sums a staged tile of kFieldStage samples (adjoint) or
// voxels (forward) in the kernel's type, then adds the tile into double accumulators; the samples
// (voxels) are split over blockIdx.y so that small problems fill the GPU, the splits' partial
// sums (double) added in a fixed order by a last pass.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace mri::cuda::detail {

// The kernels of the field-corrected sums.
enum class FieldKernel {
  SfuTrig,  // float32: __sincosf per pair on the special-function unit, the phase reduced in turns first
  Accurate, // float32: sincospif per pair (accurate trig on the FP32 pipe)
  Double    // float64: phase, sincospi and sums in double (inputs and outputs float32)
};
const char *to_string(FieldKernel kernel);

// The kernel that runs for `policy` at `precision` (the stated fallback of each policy):
//   float32: Auto, Tuned, SfuTrig, ConstantChunked -> SfuTrig (Tuned's angle addition and tensor
//            cores need a phase linear in x, the field term is not: the fastest per-pair form runs);
//            Register, Gather, ScatterAtomic -> Accurate (the stages with accurate trig);
//            SeparableGemm -> Double (the one float32 policy that sums in double; the field term is
//            not separable, so no GEMM).
//   float64: Auto and SeparableGemm -> Double; the float32 policies throw Unsupported, as the
//            uncorrected operators do (resolve_policy).
// InvalidArgument for a value outside the enums.
FieldKernel field_kernel(KernelPolicy policy, Precision precision);

// One trajectory's field-corrected sums on one grid. Uploads the trajectory, the times and the map
// once; every call enqueues on the plan's stream (the device-pointer forms return at once, the host
// forms wait). Not thread-safe: one plan per host thread. Memory: 44 bytes per sample (float and
// double records, coefficients staged), 40 per voxel, and the split partial sums (at most 256 MiB).
class FieldFourierPlan {
public:
  // trajectory: within [-n/2, n/2) of `grid` (Trajectory::wrapped); hz: grid.voxels() values in Hz;
  // times: trajectory.size() values in seconds. stream: a cudaStream_t (nullptr: the calling thread's
  // reconstruction stream, mri::cuda::default_stream()). Throws InvalidArgument for an empty
  // trajectory, one outside the grid, or sizes that differ; Unsupported beyond 2^31 samples or voxels
  // or without a usable device.
  FieldFourierPlan(const Trajectory &trajectory, const Grid &grid, std::span<const float> hz,
                   std::span<const float> times, void *stream = nullptr);
  ~FieldFourierPlan();
  FieldFourierPlan(FieldFourierPlan &&) noexcept;
  FieldFourierPlan &operator=(FieldFourierPlan &&) noexcept;
  FieldFourierPlan(const FieldFourierPlan &) = delete;
  FieldFourierPlan &operator=(const FieldFourierPlan &) = delete;

  std::size_t samples() const;
  const Grid &grid() const;
  double reference_hz() const; // f0, (min + max) / 2 of the map
  void *stream() const;        // the cudaStream_t every call is ordered on

  // Device pointers (any device allocation; input and output must not alias): enqueued, no wait.
  // samples: M values, image: grid.voxels() values, every output value written.
  void adjoint_device(FieldKernel kernel, const cfloat *samples, cfloat *image);
  void forward_device(FieldKernel kernel, const cfloat *image, cfloat *samples);
  // Host arrays: copy up, run, copy back, wait.
  void adjoint(FieldKernel kernel, const cfloat *samples, cfloat *image);
  void forward(FieldKernel kernel, const cfloat *image, cfloat *samples);
  void synchronize();

  // Benchmarks: one adjoint (forward) on the plan's own buffers, CUDA-event timed on its stream,
  // the median of `repetitions` after one untimed warm-up, in milliseconds (inputs: whatever the
  // buffers hold; upload_samples / upload_image fill them).
  void upload_samples(const cfloat *host);
  void upload_image(const cfloat *host);
  double time_adjoint_ms(FieldKernel kernel, int repetitions);
  double time_forward_ms(FieldKernel kernel, int repetitions);

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace mri::cuda::detail
