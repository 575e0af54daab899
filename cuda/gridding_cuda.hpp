#pragma once
// The CUDA gridding NUFFT (plain C++ header: lib/ and the benchmarks include it). Float32.
//
//   plan:    upload the trajectory; per sample the first window point j0 and the kernel
//            polynomial variable s per axis; a stable radix sort by oversampled-grid cell
//            (z, y, x); per-cell offsets (histogram + scan). All on the device.
//   adjoint: permute the samples into cell order; grid by
//              Gather (RGA): thread per grid point; it walks the W (2D) or W^2 (3D) rows of
//                            cells whose samples' windows cover it - each row a contiguous run
//                            of the sorted samples - and sums in that fixed order: no atomics,
//                            no zeroing, bitwise deterministic;
//              Scatter (GA): thread per sample, atomicAdd (float2, sm_90) into its W^d window;
//            cuFFT C2C inverse; deapodize + crop.
//   forward: pad + deapodize, cuFFT forward, interpolation (thread per sample, gather).
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "mri/image.hpp"
#include "mri/nufft.hpp"
#include "mri/trajectory.hpp"

namespace mri::cuda::detail {

// What the host side chose (lib/nufft.cpp): kernel, oversampled grid, deapodization.
struct GriddingSetup {
  int dims = 2;
  int width = 4;
  int degree = 0;
  std::array<std::int64_t, 3> n{1, 1, 1};  // image grid
  std::array<std::int64_t, 3> g{1, 1, 1};  // oversampled grid
  std::vector<float> coef;                 // (degree + 1) x width kernel polynomial in s
  std::array<std::vector<float>, 3> deapod; // 1 / Phi per axis, n_a values
};

// The widest kernel the device kernels are compiled for (tolerances down to 1e-7 need 8).
inline constexpr int kMaxDeviceWidth = 8;

class NufftDevicePlan {
public:
  // Throws Unsupported for a width above kMaxDeviceWidth or grids beyond 2^31 points, CudaError
  // for CUDA/cuFFT failures.
  NufftDevicePlan(const Trajectory &trajectory, const GriddingSetup &setup);
  ~NufftDevicePlan();
  NufftDevicePlan(const NufftDevicePlan &) = delete;
  NufftDevicePlan &operator=(const NufftDevicePlan &) = delete;

  // Host pointers: copy in, run, copy out, synchronise.
  void adjoint(const cfloat *samples, cfloat *image, Gridding gridding);
  void forward(const cfloat *image, cfloat *samples);
  // Device pointers, enqueued on the plan's stream (synchronize() to wait).
  void adjoint_device(const cfloat *d_samples, cfloat *d_image, Gridding gridding);
  void forward_device(const cfloat *d_image, cfloat *d_samples);
  void synchronize();

  // Benchmarks: the plan's own device buffers, and event-timed executions on them (median of
  // `repetitions`, after one untimed warm-up), in milliseconds.
  void upload_samples(const cfloat *samples);
  void upload_image(const cfloat *image);
  void download_image(cfloat *image);
  void download_samples(cfloat *samples);
  double time_adjoint_ms(Gridding gridding, int repetitions);
  double time_forward_ms(int repetitions);
  // Event time of the plan's device work (point setup, sort, offsets), cuFFT planning excluded.
  double setup_ms() const;

private:
  struct State;
  std::unique_ptr<State> s_;
};

} // namespace mri::cuda::detail
