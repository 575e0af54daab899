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
#include "recon/device_image.hpp"
#include "recon_field_cuda.hpp"
#include "segmented_cuda.hpp"
#include "sense/sense_cuda.hpp"
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

  // The maps up; the exact plan or the segmentation (its L chosen here, on the host) and its tables.
  void prepare(bool) {
    stream_ = default_stream();
    if (maps_)
      timed(report_.transfer_seconds,
            [&] { coils_.emplace(*maps_, options_.solver.regularizer, options_.solver.lambda, stream_); });
    const OffResonanceOptions &o = options_.offresonance;
    if (options_.method == Method::Exact) {
      kernel_ = field_kernel(options_.gpu.policy, options_.precision);
      exact_ = std::make_shared<FieldFourierPlan>(data_.trajectory(), grid_, o.field_map->hz(), times_, stream_);
      report_.offresonance = "exact";
      append(report_.device_note, std::string("F^H D and normal: ") + to_string(kernel_));
      return;
    }
    const TimeSegmentation s = segment_field(*o.field_map, times_, o.segmentation);
    report_.offresonance = "time-segmented";
    report_.segments = s.segments;
    report_.segment_interpolator = to_string(s.interpolator);
    report_.segment_error = s.error;
    report_.segment_max_error = s.max_error;
    timed(report_.transfer_seconds, [&] { points_.emplace(data_.trajectory()); });
    auto plan = make_device_nufft_plan(points_->data(), points_->size(), grid_, nufft_options_, {1, 1, 1});
    segmented_.emplace(s, std::move(plan), grid_, data_.samples_per_coil(), gridding_);
  }

  // sum_c conj(S_c) A^H (w .* D_c), or A^H (w .* D) of one coil without maps.
  DeviceImage rhs() {
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t m = data_.samples_per_coil();
    const std::vector<cfloat> weighted = data_.weighted_samples();
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

  void make_direct() {}

  // The segment Toeplitz kernels, unless there are more segments than the device product is built
  // for or they would pass the memory budget: then the CG applies the segmented NUFFTs.
  void compute_q() {
    const auto t0 = std::chrono::steady_clock::now();
    const int segments = segmented_->segments();
    const int coils = coils_ ? coils_->count() : 1;
    const int batch = SegmentedToeplitzDevice::coil_batch_for(grid_, segments, coils);
    const std::size_t bytes = SegmentedToeplitzDevice::bytes(grid_, segments, batch);
    const std::size_t budget = toeplitz_budget();
    if (segments > SegmentedToeplitzDevice::kMaxSegments || bytes > budget) {
      report_.normal = Normal::Direct;
      append(report_.offresonance_note,
             "normal: direct (the " + std::to_string(segments) + "-segment Toeplitz kernels " +
                 (segments > SegmentedToeplitzDevice::kMaxSegments
                      ? "run on the device up to " + std::to_string(SegmentedToeplitzDevice::kMaxSegments) + " segments"
                      : "would take " + std::to_string(bytes >> 20) + " MiB of a " + std::to_string(budget >> 20) +
                            " MiB budget") +
                 ")");
      return;
    }
    toeplitz_.emplace(*segmented_, points_->data(), data_.weights(), nufft_options_, gridding_,
                      coils_ ? &*coils_ : nullptr, options_.solver.regularizer, options_.solver.lambda);
    append(report_.device_note, "normal: " + std::to_string(segments) + "-segment Toeplitz, " +
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

  // Half the free device memory, or less by options.gpu.memory_limit.
  std::size_t toeplitz_budget() const {
    std::size_t budget = device_memory().free / 2;
    if (options_.gpu.memory_limit > 0) budget = std::min(budget, options_.gpu.memory_limit);
    return budget;
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
