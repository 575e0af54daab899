// Off-resonance behind the plugin interface (recon_field_cuda.hpp): the device's DeviceFieldFourier,
// and mri::reconstruct with a field map on the device.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "exact/fhd_plan.cuh"
#include "field_fourier_cuda.hpp"
#include "field_normal_cuda.hpp"
#include "mri/error.hpp"
#include "mri/linear_operator.hpp"
#include "mri_backend/normal_assembly.hpp"
#include "mri_backend/recon_driver.hpp"
#include "mri_backend/sense.hpp"
#include "nufft/gridding_cuda.hpp"
#include "nufft/gridding_resources.cuh"
#include "recon/device_image.hpp"
#include "recon_field_cuda.hpp"
#include "segmented_cuda.hpp"
#include "sense/sense_cuda.hpp"
#include "staged_upload.cuh"
#include "toeplitz/toeplitz_cuda.hpp" // reconstruct_device_bytes: the NUFFT plans' bytes
#include "mri_backend/offresonance.hpp"
#include "sparse/sparse_ops_cuda.hpp" // SparseOps<DeviceImage>: the proximal solvers on device images

namespace mri::cuda::detail {
namespace {

bool all_zero(std::span<const float> v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; });
}

// DeviceFieldFourier on its own stream (the operator may be called from any thread, one at a time).
class DeviceFieldFourierPlan final : public mri::detail::DeviceFieldFourier {
public:
  DeviceFieldFourierPlan(const Trajectory &trajectory, const Grid &grid, const FieldMap &field,
                         std::span<const float> times) {
    if (field.grid() != grid)
      mri::detail::invalid_argument("field.grid().voxels()", field.grid().voxels(),
                                    "must be on the operator's grid (" + std::to_string(grid.voxels()) + " voxels)");
    if (field.is_zero() || all_zero(times))
      plain_.emplace(trajectory, grid, grid);
    else
      field_.emplace(trajectory, grid, field.hz(), times, stream_.get());
  }
  void adjoint(KernelPolicy policy, const cfloat *samples, cfloat *image) override {
    if (plain_) return plain_->adjoint(policy, samples, image);
    // policy arrives resolved for the operator's precision (float64: SeparableGemm -> Double)
    field_->adjoint(field_kernel(policy, Precision::Float32), samples, image);
  }
  void forward(Precision precision, const cfloat *image, cfloat *samples) override {
    if (plain_) return plain_->forward(forward_path(precision), image, samples);
    field_->forward(precision == Precision::Float64 ? FieldKernel::Double : FieldKernel::SfuTrig, image, samples);
  }

private:
  Stream stream_; // before field_: destroyed after it
  std::optional<FhdPlan> plain_;
  std::optional<FieldFourierPlan> field_;
};

// f(), its wall time added to `seconds`.
template <class F> decltype(auto) timed(double &seconds, F &&f) {
  struct Add {
    double &seconds;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~Add() { seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  } add{seconds};
  return f();
}

// The gridding of the reconstruction's adjoints (as cuda/recon/recon_cuda.cu: Auto is the gather).
Gridding recon_gridding(Gridding asked) { return asked == Gridding::Auto ? Gridding::Gather : asked; }

void append(std::string &note, const std::string &clause) { note += (note.empty() ? "" : "; ") + clause; }

std::string mib(std::size_t bytes) { return std::to_string((bytes + (std::size_t{1} << 20) - 1) >> 20) + " MiB"; }

// One device NUFFT plan of m samples on `grid` with its adjoint's block of kCoilBlock vectors:
// cuda/recon's estimate of the uncorrected reconstruction's F^H D phase without maps, less its
// uploaded samples and image (m and n complex values), plus the block's sorted samples, oversampled
// grids and images (as that estimate adds them with coils).
std::size_t nufft_plan_bytes(const Grid &grid, std::size_t m, bool fixed_point) {
  const auto n = static_cast<std::size_t>(grid.voxels());
  const std::size_t plan = reconstruct_device_bytes(grid, m, true, false, true, 0, 1, fixed_point).fhd - (m + n) * sizeof(cfloat);
  return plan + static_cast<std::size_t>(NufftDevicePlan::kCoilBlock) *
                    (2 * m * sizeof(cfloat) + (std::size_t{1} << grid.dims()) * n * sizeof(cfloat) + n * sizeof(cfloat));
}

// The exact field sums' plan (field_fourier_cuda.hpp): 44 bytes a sample, 40 a voxel, and the splits'
// double partial sums, at most 256 MiB and at most a split per 256 terms of either sum.
std::size_t exact_plan_bytes(const Grid &grid, std::size_t m) {
  const auto n = static_cast<std::size_t>(grid.voxels());
  const std::size_t partial = 16 * std::max(n * (m / 256 + 1), m * (n / 256 + 1));
  return 44 * m + 40 * n + std::min(partial, std::size_t{256} << 20);
}

// One reconstruction with a field map on the device: FieldSteps (lib/offresonance/recon_offresonance.cpp)
// on device images. Each step ends synchronised.
class FieldGpuSteps {
public:
  using Vec = DeviceImage;

  FieldGpuSteps(const KSpaceData &data, std::span<const float> times, const Grid &grid, const ReconOptions &options,
                const CoilSensitivities *maps, ReconReport &report)
      : data_(data), times_(times), grid_(grid), options_(options), maps_(maps), report_(report),
        nufft_options_(mri::detail::recon_nufft_options(options, Backend::Cuda)),
        gridding_(recon_gridding(options.nufft.gridding)) {
    report_.backend = Backend::Cuda;
    int device = 0;
    MRI_CUDA_CHECK(cudaGetDevice(&device));
    report_.device_seconds.push_back({device, 0, 0, 0});
  }

  // The maps up; the exact plan or the segmentation (its L chosen here, on the host) and its tables
  // (on the device).
  void prepare(bool) {
    stream_ = default_stream();
    const OffResonanceOptions &o = options_.offresonance;
    // L and the interpolator's fit on the host (remembered across calls: fit_segmentation), then
    // the memory check before anything is allocated; the O(M L) and O(N L) tables are made on the
    // device from the fit
    std::optional<TimeSegmentation> s;
    if (options_.method != Method::Exact) s = fit_segmentation(*o.field_map, times_, o.segmentation);
    check_memory(s ? s->segments : 0);
    if (maps_)
      timed(report_.transfer_seconds,
            [&] { coils_.emplace(*maps_, options_.solver.regularizer, options_.solver.lambda, stream_); });
    if (options_.method == Method::Exact) {
      kernel_ = field_kernel(options_.gpu.policy, options_.precision);
      exact_ = std::make_shared<FieldFourierPlan>(data_.trajectory(), grid_, o.field_map->hz(), times_, stream_);
      report_.offresonance = "exact";
      append(report_.device_note, std::string("F^H D and normal: ") + to_string(kernel_));
      return;
    }
    report_.offresonance = "time-segmented";
    report_.segments = s->segments;
    report_.segment_interpolator = to_string(s->interpolator);
    report_.segment_error = s->error;
    report_.segment_max_error = s->max_error;
    timed(report_.transfer_seconds, [&] { points_.emplace(data_.trajectory()); });
    auto plan = make_device_nufft_plan(points_->data(), points_->size(), grid_, nufft_options_, {1, 1, 1});
    segmented_.emplace(*s, times_, std::span<const float>(o.field_map->hz()), std::move(plan), grid_, gridding_);
  }

  // sum_c conj(S_c) A^H (w .* D_c), or A^H (w .* D) of one coil without maps.
  DeviceImage rhs() {
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t m = data_.samples_per_coil();
    const std::vector<cfloat> weighted = data_.weighted_samples();
    if (segmented_) {
      DeviceImage rhs = segmented_rhs(weighted);
      report_.device_seconds.front().fhd_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return rhs;
    }
    DeviceImage rhs(grid_, stream_);
    std::optional<DeviceImage> scratch;
    if (coils_) scratch.emplace(grid_, stream_);
    DeviceBuffer<cfloat> samples(m);
    const int count = coils_ ? coils_->count() : 1;
    const auto op_stream = static_cast<cudaStream_t>(exact_ ? exact_->stream() : segmented_->stream());
    for (int c = 0; c < count; ++c) {
      // on the operator's stream, so that its adjoint is ordered after the copy (the copy counts
      // in F^H D's seconds: it overlaps nothing else)
      MRI_CUDA_CHECK(cudaMemcpyAsync(samples.get(), weighted.data() + static_cast<std::size_t>(c) * m,
                                     m * sizeof(cfloat), cudaMemcpyHostToDevice, op_stream));
      DeviceImage &target = coils_ ? *scratch : rhs;
      adjoint(samples.get(), target.data());
      synchronize_operator(); // samples and scratch are reused next
      if (coils_) {
        coils_->combine(c, target, rhs, c == 0);
        synchronize();
      }
    }
    report_.device_seconds.front().fhd_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rhs;
  }

  // The segmented right-hand side: every coil's samples up at once, then the coils batched through
  // SegmentedFieldDevice::adjoint_coils_device (the copy counts in F^H D's seconds: it overlaps
  // nothing else).
  DeviceImage segmented_rhs(const std::vector<cfloat> &weighted) {
    const int count = coils_ ? coils_->count() : 1;
    const auto op_stream = static_cast<cudaStream_t>(segmented_->stream());
    DeviceBuffer<cfloat> samples; // from the plans' pool, freed in stream order (no cudaFree's device sync)
    samples.allocate(weighted.size(), plan_pool(), op_stream);
    // through the pinned ring from 1 MB on, as the uncorrected F^H D uploads its coils
    upload_staged(samples.get(), weighted.data(), weighted.size() * sizeof(cfloat), op_stream);
    DeviceImage rhs(grid_, stream_);
    segmented_->adjoint_coils_device(samples.get(), count, coils_ ? coils_->maps() : nullptr, rhs.data());
    synchronize_operator(); // samples go on return
    return rhs;
  }

  void make_direct() {}

  // The segment Toeplitz kernels, unless there are more segments than the device product is built
  // for or they would pass the memory budget: then the CG applies the segmented NUFFTs.
  void compute_q() {
    const auto t0 = std::chrono::steady_clock::now();
    if (!toeplitz_fits_) {
      report_.normal = Normal::Direct;
      append(report_.offresonance_note, "normal: direct (" + toeplitz_refusal_ + ")");
      return;
    }
    toeplitz_.emplace(*segmented_, points_->data(), data_.weights(), nufft_options_, gridding_,
                      coils_ ? &*coils_ : nullptr, options_.solver.regularizer, options_.solver.lambda);
    append(report_.device_note, "normal: " + std::to_string(segmented_->segments()) + "-segment Toeplitz, " +
                                    std::to_string(toeplitz_->coil_batch()) + " coil(s) per batched transform");
    report_.q_method = "segment kernels by batched adjoint NUFFTs + fft";
    report_.device_seconds.front().q_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  // The driver asks for these only with a Q cache, which reconstruct turns off with a field map.
  void load_spectrum(std::span<const float>) { throw Error("reconstruct: no cached Toeplitz spectrum with a field map"); }
  std::vector<float> spectrum() const { return {}; }

  template <class F> ReconResult with_normal(const DeviceImage &like, F &&f) {
    if (toeplitz_) return f(mri::normal_equations(mri::ref(*toeplitz_)));
    if (segmented_) {
      segmented_normal_.emplace(*segmented_, data_.weights());
      return assemble(mri::ref(*segmented_normal_), like, f);
    }
    exact_normal_.emplace(exact_, kernel_, data_.weights());
    return assemble(mri::ref(*exact_normal_), like, f);
  }

  void synchronize() const { MRI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_))); }
  Image to_host(const DeviceImage &x) const { return x.to_host(); }

private:
  template <class N, class F> ReconResult assemble(N data_normal, const DeviceImage &like, F &f) {
    return mri::detail::with_reconstruction_normal(coils_, std::move(data_normal), options_.solver.regularizer,
                                                   options_.solver.lambda, grid_, like, f);
  }

  void adjoint(const cfloat *samples, cfloat *image) {
    if (exact_)
      exact_->adjoint_device(kernel_, samples, image);
    else
      segmented_->adjoint_device(samples, image);
  }
  void synchronize_operator() const {
    const StreamHandle s = exact_ ? exact_->stream() : segmented_->stream();
    MRI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
  }

  // Whether the segment Toeplitz kernels run (toeplitz_fits_; else toeplitz_refusal_ says why): at
  // most kMaxSegments segments, and their bytes within half the free device memory, or less by
  // options.gpu.memory_limit. Then the whole reconstruction's estimate
  // (mri_backend/offresonance.hpp) against the free memory and the limit: Unsupported, naming the
  // sizes and each phase's bytes, before anything is allocated. segments: 0 for the exact sums.
  void check_memory(int segments) {
    const DeviceMemory memory = device_memory();
    std::size_t available = memory.free;
    if (options_.gpu.memory_limit > 0) available = std::min(available, options_.gpu.memory_limit);
    mri::detail::FieldDeviceSizes z;
    z.grid = grid_;
    z.samples = data_.samples_per_coil();
    z.coils = maps_ ? maps_->coils() : 0;
    z.segments = segments;
    const bool fixed = gridding_ == Gridding::ScatterFixed;
    if (segments > 0) {
      z.adjoint_coils = SegmentedFieldDevice::adjoint_batch(grid_, z.samples, segments, std::max(1, z.coils));
      const int batch = SegmentedToeplitzDevice::coil_batch_for(grid_, segments, std::max(1, z.coils));
      z.toeplitz_bytes = SegmentedToeplitzDevice::bytes(grid_, segments, batch);
      z.nufft_plan = nufft_plan_bytes(grid_, z.samples, fixed);
      // the kernels' plan and a batch of pairs' coefficients (M each)
      z.q_plan = nufft_plan_bytes(grid_.doubled(), z.samples, fixed) +
                 static_cast<std::size_t>(SegmentedToeplitzDevice::pair_chunk(grid_, segments)) * z.samples * sizeof(cfloat);
      const std::size_t budget = std::min(memory.free / 2, available);
      if (segments > SegmentedToeplitzDevice::kMaxSegments)
        toeplitz_refusal_ = "the " + std::to_string(segments) + "-segment Toeplitz kernels run on the device up to " +
                            std::to_string(SegmentedToeplitzDevice::kMaxSegments) + " segments";
      else if (z.toeplitz_bytes > budget)
        toeplitz_refusal_ = "the " + std::to_string(segments) + "-segment Toeplitz kernels would take " +
                            mib(z.toeplitz_bytes) + " of a " + mib(budget) + " budget";
      toeplitz_fits_ = toeplitz_refusal_.empty();
      z.toeplitz = toeplitz_fits_ && options_.solver.normal == Normal::Toeplitz;
    } else {
      z.exact_plan = exact_plan_bytes(grid_, z.samples);
    }
    const mri::detail::FieldDeviceBytes need = mri::detail::field_reconstruct_device_bytes(z);
    report_.device_bytes = need.peak();
    if (need.peak() > available)
      throw Unsupported("reconstruct with a field map on the GPU: grid " + std::to_string(grid_.nx()) + "x" +
                        std::to_string(grid_.ny()) + "x" + std::to_string(grid_.nz()) + ", M = " + std::to_string(z.samples) +
                        (z.coils > 0 ? ", " + std::to_string(z.coils) + " coils" : std::string()) +
                        (segments > 0 ? ", " + std::to_string(segments) + " segments, " +
                                            (z.toeplitz ? "Toeplitz" : "direct") + " normal"
                                      : std::string(", the exact field sums")) +
                        " needs about " + mib(need.peak()) + " of device memory (F^H D phase " + mib(need.fhd) +
                        ", Q phase " + mib(need.q) + ", CG phase " + mib(need.cg) + "); available: " + mib(available) +
                        " (free " + mib(memory.free) + " of " + mib(memory.total) +
                        (options_.gpu.memory_limit > 0 ? ", gpu.memory_limit " + mib(options_.gpu.memory_limit) : "") + ")");
  }

  const KSpaceData &data_;
  std::span<const float> times_;
  const Grid grid_;
  const ReconOptions &options_;
  const CoilSensitivities *maps_;
  ReconReport &report_;
  const NufftOptions nufft_options_;
  const Gridding gridding_;
  StreamHandle stream_ = nullptr;
  std::optional<DeviceCoils> coils_;
  FieldKernel kernel_ = FieldKernel::SfuTrig;
  std::shared_ptr<FieldFourierPlan> exact_;
  std::optional<FieldDirectNormal> exact_normal_;
  std::optional<DevicePoints> points_;
  std::optional<SegmentedFieldDevice> segmented_;
  std::optional<SegmentedToeplitzDevice> toeplitz_;
  std::optional<SegmentedDirectNormal> segmented_normal_;
  bool toeplitz_fits_ = false;
  std::string toeplitz_refusal_;
};

} // namespace

std::unique_ptr<mri::detail::DeviceFieldFourier> make_device_field_fourier(const Trajectory &trajectory, const Grid &grid,
                                                                         const FieldMap &field,
                                                                         std::span<const float> times) {
  return std::make_unique<DeviceFieldFourierPlan>(trajectory, grid, field, times);
}

ReconResult reconstruct_offresonance_cuda(const KSpaceData &data, std::span<const float> times, const Grid &grid,
                                          const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                          std::chrono::steady_clock::time_point t_start) {
  if (options.gpu.devices.size() > 1)
    throw Unsupported("reconstruct: off-resonance correction runs on one device; options.gpu.devices lists " +
                      std::to_string(options.gpu.devices.size()));
  if (!options.gpu.devices.empty()) {
    int current = 0;
    MRI_CUDA_CHECK(cudaGetDevice(&current));
    if (options.gpu.devices.front() != current)
      mri::detail::invalid_argument("options.gpu.devices[0]", options.gpu.devices.front(),
                                    "must be the current device (" + std::to_string(current) + ")");
  }
  FieldGpuSteps steps(data, times, grid, options, maps, report);
  return mri::detail::drive_reconstruction(steps, data, grid, options, report, t_start);
}

} // namespace mri::cuda::detail
