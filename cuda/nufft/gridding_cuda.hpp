#pragma once
// The CUDA gridding NUFFT (plain C++ header: the plugin, GPU tests and benchmarks include it). Float32.
//
//   plan:    upload the trajectory (host threads through a small pinned ring); per sample the
//            first window point j0, the kernel polynomial variable s per axis, and whether it
//            lies in the grid's k-space; a stable radix sort by oversampled-grid cell (z, y, x);
//            per sample in cell order its W kernel weights per axis; per-cell offsets
//            (histogram + scan). All on the device, stream-ordered: the constructor waits only
//            for the upload and the range check, and returns with the sort still running on the
//            plan's stream. Device buffers come from a process-wide stream-ordered pool and
//            cuFFT plans from a process-wide cache, so a second plan of the same shape
//            allocates and plans nothing (release_gridding_cache()).
//   adjoint: permute the samples into cell order; grid by
//              Gather (RGA): thread per work item (8 grid points along x in 3D, one in 2D); it
//                            walks the W (2D) or W^2 (3D) rows of cells whose samples' windows
//                            reach them - each row a contiguous run of the sorted samples, each
//                            sample read once for the item's points - and sums in that fixed
//                            order with the precomputed weights; items whose runs hold more than
//                            512 samples (a radial or koosh centre; classified on the plan's
//                            first gather) a block each, its threads' sums added by a fixed
//                            tree: no atomics, no zeroing, bitwise deterministic;
//              Scatter, ScatterMethod::Shared (SM, the default in 3D): a block per subproblem (at
//                            most 1024 of one tile's samples, taken from its cells' runs of
//                            the sorted order) spreads them into a padded shared-memory copy
//                            of the tile with shared atomics, then adds the padded tile's
//                            nonzero points into the grid (a dense tile's subproblems add into
//                            the same points);
//              Scatter, ScatterMethod::Global (GA, the default in 2D): thread per sample,
//                            atomicAdd (float2, sm_90) into its W^d window in the global grid;
//              ScatterFixed (SMF): SM with each run's partial sums rounded once to fixed point
//                            (the scale from max |value|) and added as two 32-bit integers into
//                            the tile, the tiles into a 64-bit integer grid, converted to float
//                            at the end: integer adds in any order, bitwise deterministic;
//            cuFFT C2C inverse; deapodize + crop.
//   forward: pad + deapodize, cuFFT forward, interpolation (thread per sample, gather).
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "mri/image.hpp"
#include "mri/nufft.hpp"
#include "mri/trajectory.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/tuning.hpp"

namespace mri::cuda::detail {

// What the host side chose (lib/nufft/nufft_setup.cpp): kernel, oversampled grid, deapodization.
using GriddingSetup = mri::detail::NufftSetup;
inline constexpr int kMaxDeviceWidth = mri::detail::kMaxDeviceNufftWidth;

// How Gridding::Scatter spreads (NufftDevicePlan::set_scatter_method): Auto = Shared in 3D,
// Global in 2D; Global = GA, thread per sample with global atomics; Shared = SM, shared-memory
// tiles. Both are non-deterministic in the last bits (float atomics). Gridding::ScatterFixed is
// SM's tiles summed in fixed point (integer atomics, any order the same bits): deterministic.
enum class ScatterMethod { Auto, Global, Shared };

// Frees what the gridding plans keep between plans, process-wide: idle cached cuFFT plans, the
// unused memory of the plans' device memory pool, and the pinned trajectory staging buffer.
// Live plans are unaffected (they hold their own cuFFT plan and buffers).
void release_gridding_cache();

// A trajectory's points in device memory, uploaded once through the plans' pinned staging ring
// (faster than a pageable copy for millions of points; the constructor returns once they are
// there), for plans made from device points.
class DevicePoints {
public:
  explicit DevicePoints(const Trajectory &trajectory);
  // A copy of `from` (on any device) on the current device, device to device (a peer copy from
  // another device: the trajectory crosses the host once for several devices' plans, as the coil
  // split's F^H D makes them). Returns once copied. Throws CudaError.
  static std::unique_ptr<DevicePoints> copy_here(const DevicePoints &from);
  ~DevicePoints();
  DevicePoints(const DevicePoints &) = delete;
  DevicePoints &operator=(const DevicePoints &) = delete;
  const KPoint *data() const { return data_; }
  std::size_t size() const { return size_; }
  int device() const { return device_; } // where data() lives

private:
  explicit DevicePoints(std::size_t size); // allocated on the current device, contents undefined
  KPoint *data_ = nullptr;
  std::size_t size_ = 0;
  int device_ = 0;
};

class NufftDevicePlan final : public mri::detail::DeviceNufft {
public:
  // Throws Unsupported for a width above kMaxDeviceWidth or grids beyond 2^31 points, CudaError
  // for CUDA/cuFFT failures. A sample outside the grid's k-space [-n/2, n/2) (checked on the
  // device: a host pass over millions of samples costs milliseconds) leaves samples_within_grid()
  // false and the plan unusable: the caller wraps the trajectory and plans again, or refuses it.
  // Returns with the plan's device setup still running on its stream: calls on the plan are
  // ordered after it.
  NufftDevicePlan(const Trajectory &trajectory, const GriddingSetup &setup);
  // The trajectory already in device memory (m KPoints at d_points, complete before the call:
  // the caller synchronises the stream that wrote them), each coordinate times scale[axis], e.g.
  // uploaded once and shared by several plans (reconstruct: F^H D with scale 1, Q on the doubled
  // grid with 2). Read during the constructor only. The range check runs on the device; a sample
  // outside the grid throws InvalidArgument (without its index: check_within on the host names it).
  NufftDevicePlan(const KPoint *d_points, std::size_t m, const GriddingSetup &setup, std::array<float, 3> scale);
  ~NufftDevicePlan() override;
  NufftDevicePlan(const NufftDevicePlan &) = delete;
  NufftDevicePlan &operator=(const NufftDevicePlan &) = delete;

  // Host pointers: copy in, run, copy out, synchronise.
  void adjoint(const cfloat *samples, cfloat *image, Gridding gridding) override;
  void forward(const cfloat *image, cfloat *samples) override;
  // adjoint_coils_device from host arrays, kCoilBlock coils at a time through device buffers of
  // their own (the samples staged through the pinned ring).
  void adjoint_coils(const cfloat *samples, int coils, cfloat *images, Gridding gridding) override;
  // The caller's device arrays (caller_memory.cuh's rule): adjoint_device / forward_device, waited for.
  void forward_on_device(const cfloat *image, cfloat *samples) override;
  void adjoint_on_device(const cfloat *samples, cfloat *image, Gridding gridding) override;
  // Device pointers, enqueued on the plan's stream (synchronize() to wait).
  void adjoint_device(const cfloat *d_samples, cfloat *d_image, Gridding gridding);
  // The adjoint of `coils` coils (coil c's M samples at d_samples + c M, its image at d_images +
  // c N) from the one sorted plan: Gather grids kCoilBlock coils per pass, reading each sample's
  // cells and weights once for all of them (the same sums, in the same order, as adjoint_device
  // per coil: bitwise equal); Scatter and ScatterFixed run adjoint_device per coil. Uses kCoilBlock oversampled
  // grids and kCoilBlock M sorted samples more during the call (from the plan's pool).
  // Per pass: one permute launch, the gather, kCoilBlock inverse transforms (or one batched
  // execution, set_batched_fft) and one crop launch.
  void adjoint_coils_device(const cfloat *d_samples, int coils, cfloat *d_images, Gridding gridding);
  static constexpr int kCoilBlock = mri::detail::tuning::Gpu::coil_block;
  // Whether adjoint_coils_device (Gather) runs a pass's inverse transforms as one batched cuFFT
  // execution (2D; default off). cuFFT does not promise that a batched plan's transforms round as
  // the single plan's, so on, each vector is within float rounding of adjoint_device's, not
  // bitwise (off keeps the bitwise promise above). No more device memory either way: the batched
  // plan borrows the plan's work area or its single grid, and runs unbatched where its work
  // area needs more than both (MRI_GRIDDING_TRACE=1 prints the sizes and the choice).
  void set_batched_fft(bool on);
  // The transforms per cuFFT execution adjoint_coils_device (Gather) runs for a pass of `vectors`
  // (clamped to 1 .. kCoilBlock): that count where batched, else 1. Plans the batched
  // transform if not yet done.
  int fft_batch(int vectors);
  void forward_device(const cfloat *d_image, cfloat *d_samples);
  void synchronize();

  // Whether every sample lies in [-n_a/2, n_a/2) on each axis (checked on the device; always
  // true for a plan from device points, whose constructor throws otherwise).
  bool samples_within_grid() const;
  // How many of Gather's work items hold so many samples that a block sums each (a radial or
  // koosh centre); classifies them if no gather ran yet (waits for it).
  unsigned dense_gather_items();
  // Gridding::Scatter's kernel (default Auto); scatter_method() gives the resolved one.
  void set_scatter_method(ScatterMethod method);
  ScatterMethod scatter_method() const;
  void *stream() const; // the plan's stream (cudaStream_t) its device-pointer calls are ordered on

  // Benchmarks: the plan's own device buffers, and event-timed executions on them (median of
  // `repetitions`, after one untimed warm-up), in milliseconds.
  void upload_samples(const cfloat *samples);
  void upload_image(const cfloat *image);
  void download_image(cfloat *image);
  void download_samples(cfloat *samples);
  double time_adjoint_ms(Gridding gridding, int repetitions);
  // adjoint_coils_device of kCoilBlock coils (each the uploaded samples) on buffers of the plan.
  double time_adjoint_coils_ms(Gridding gridding, int repetitions);
  double time_forward_ms(int repetitions);
  // Event time of the plan's device work (point setup, sort, weights, offsets), the trajectory
  // upload and cuFFT planning excluded (waits for that work to finish).
  double setup_ms() const;

private:
  NufftDevicePlan(const GriddingSetup &setup, std::size_t samples); // everything but the samples
  // Point: KPoint, or float2 (kx, ky) for a 2D plan's host trajectory, packed as it was uploaded.
  template <class Point> void set_points(const Point *d_points, std::array<float, 3> scale);
  struct State;
  std::unique_ptr<State> s_;
};

// The plan behind a NufftOperator whose backend is Cuda (GPU tests, benchmarks); InvalidArgument
// for one on the CPU.
NufftDevicePlan &device_plan_of(const NufftOperator &op);

// A NufftOperator's CUDA plan without the operator (which keeps a copy of the trajectory: ms for
// millions of samples), for reconstruct. options: validated (mri::detail::validated_nufft_options).
// Throws as the NufftOperator constructor.
std::shared_ptr<NufftDevicePlan> make_device_nufft_plan(const Trajectory &trajectory, const Grid &grid,
                                                        const NufftOptions &options);
// The same from m points already in device memory, each coordinate times scale[axis] (see
// NufftDevicePlan): reconstruct uploads the trajectory once for F^H D and Q's doubled grid.
std::shared_ptr<NufftDevicePlan> make_device_nufft_plan(const KPoint *d_points, std::size_t m, const Grid &grid,
                                                        const NufftOptions &options, std::array<float, 3> scale);

} // namespace mri::cuda::detail
