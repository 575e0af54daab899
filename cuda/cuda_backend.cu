// The plugin's side of the seam (lib/interface/mri_backend/cuda_backend.hpp): the CudaBackend
// that libmri loads, made of the plans in this folder, and the two exported C entry points.
#include "mri_backend/nufft_access.hpp"
#include "caller_memory.cuh"
#include "device.cuh"
#include "exact/fhd_backend.hpp"
#include "mcir/mcir_cuda.hpp"
#include "nufft/gridding_cuda.hpp"
#include "offresonance/recon_field_cuda.hpp"
#include "mri/error.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/motion_backend.hpp"
#include "recon/device_image.hpp"
#include "recon/recon_cuda.hpp"

namespace mri {
std::unique_ptr<MotionBackend> make_cuda_motion_backend(const Grid &grid, const MotionOptions &options); // motion_backend.cu
}

namespace mri::cuda::detail {

std::shared_ptr<NufftDevicePlan> make_device_nufft_plan(const Trajectory &trajectory, const Grid &grid,
                                                        const NufftOptions &options) {
  if (trajectory.empty()) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  if (trajectory.dims() != grid.dims()) trajectory.check_within(grid); // throws: dims differ
  // The plan checks the samples' range on the device (the host loop cost milliseconds); a sample
  // outside is named by check_within's InvalidArgument.
  auto plan = std::make_shared<NufftDevicePlan>(
      trajectory, *mri::detail::nufft_setup(grid, mri::detail::validated_nufft_options(options, grid.dims())));
  if (!plan->samples_within_grid()) {
    trajectory.check_within(grid);
    mri::detail::invalid_argument("trajectory", "host points", "a sample lies outside [-n/2, n/2) of the grid");
  }
  return plan;
}

std::shared_ptr<NufftDevicePlan> make_device_nufft_plan(const KPoint *d_points, std::size_t m, const Grid &grid,
                                                        const NufftOptions &options, std::array<float, 3> scale) {
  return std::make_shared<NufftDevicePlan>(
      d_points, m, *mri::detail::nufft_setup(grid, mri::detail::validated_nufft_options(options, grid.dims())), scale);
}

NufftDevicePlan &device_plan_of(const NufftOperator &op) {
  auto *plan = dynamic_cast<NufftDevicePlan *>(mri::detail::NufftAccess::device_plan(op).get());
  if (!plan) mri::detail::invalid_argument("op.options().backend", to_string(op.options().backend), "has no CUDA plan");
  return *plan;
}

namespace {

class DeviceFourierPlan final : public mri::detail::DeviceFourier {
public:
  DeviceFourierPlan(const Trajectory &trajectory, const Grid &out, const Grid &period) : plan_(trajectory, out, period) {}
  void adjoint(KernelPolicy policy, const cfloat *coefficients, cfloat *result) override {
    plan_.adjoint(policy, coefficients, result);
  }
  void forward(Precision precision, const cfloat *image, cfloat *samples) override {
    plan_.forward(forward_path(precision), image, samples);
  }
  void adjoint_f64(const cdouble *coefficients, cdouble *result) override { plan_.adjoint_f64(coefficients, result); }
  void forward_f64(const cdouble *image, cdouble *samples) override { plan_.forward_f64(image, samples); }
  void adjoint_on_device(KernelPolicy policy, const cfloat *coefficients, cfloat *result) override {
    run_on_caller_memory(static_cast<cudaStream_t>(plan_.stream()), {{coefficients, "samples"}, {result, "image"}},
                         [&] { plan_.adjoint_device(policy, coefficients, result); });
  }
  void forward_on_device(Precision precision, const cfloat *image, cfloat *samples) override {
    run_on_caller_memory(static_cast<cudaStream_t>(plan_.stream()), {{image, "image"}, {samples, "samples"}},
                         [&] { plan_.forward_device(forward_path(precision), image, samples); });
  }

private:
  FhdPlan plan_;
};

class Backend final : public mri::detail::CudaBackend {
public:
  bool device_present() const override { return detail::device_present(); }
  KernelPolicy resolve_policy(KernelPolicy policy, Precision precision) const override {
    return detail::resolve_policy(policy, precision);
  }
  std::unique_ptr<mri::detail::DeviceFourier> fourier(const Trajectory &trajectory, const Grid &out,
                                                      const Grid &period) const override {
    return std::make_unique<DeviceFourierPlan>(trajectory, out, period);
  }
  std::unique_ptr<mri::detail::DeviceNufft> nufft(const Trajectory &trajectory, const Grid &grid,
                                                  const NufftOptions &validated) const override {
    if (trajectory.empty()) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
    if (trajectory.dims() != grid.dims()) trajectory.check_within(grid); // throws: dims differ
    auto plan = std::make_unique<NufftDevicePlan>(trajectory, *mri::detail::nufft_setup(grid, validated));
    if (!plan->samples_within_grid()) return nullptr; // the interface's "wrap and plan again"
    return plan;
  }
  std::unique_ptr<mri::detail::DeviceFieldFourier> field_fourier(const Trajectory &trajectory, const Grid &grid,
                                                                const FieldMap &field,
                                                                std::span<const float> times) const override {
    return make_device_field_fourier(trajectory, grid, field, times);
  }
  ReconResult reconstruct_offresonance(const KSpaceData &data, std::span<const float> times, const Grid &grid,
                                       const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                       std::chrono::steady_clock::time_point t_start) const override {
    return reconstruct_offresonance_cuda(data, times, grid, options, maps, std::move(report), t_start);
  }
  std::unique_ptr<MotionBackend> motion(const Grid &grid, const MotionOptions &options) const override {
    return make_cuda_motion_backend(grid, options);
  }
  ReconResult reconstruct(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                          const CoilSensitivities *maps, ReconReport report,
                          std::chrono::steady_clock::time_point t_start) const override {
    return reconstruct_cuda(data, grid, options, maps, std::move(report), t_start);
  }
  FramesResult reconstruct_frames(const std::vector<KSpaceData> &frames, const Grid &grid, const ReconOptions &options,
                                  const CoilSensitivities *maps, ReconReport report,
                                  std::chrono::steady_clock::time_point t_start) const override {
    return reconstruct_frames_cuda(frames, grid, options, maps, std::move(report), t_start);
  }
  std::unique_ptr<mri::detail::DeviceMcir> motion_corrected(const std::vector<const KSpaceData *> &states,
                                                            const Grid &grid, const ReconOptions &options,
                                                            const CoilSensitivities *maps,
                                                            ReconReport &report) const override {
    return motion_corrected_cuda(states, grid, options, maps, report);
  }
  std::size_t device_free_bytes() const override { return device_memory().free; }
};

} // namespace
} // namespace mri::cuda::detail

extern "C" __attribute__((visibility("default"))) const char *mri_cuda_plugin_version() {
  static const std::string v = std::to_string(mri::detail::kCudaPluginAbi) + " " + MRI_VERSION_STRING;
  return v.c_str();
}

extern "C" __attribute__((visibility("default"))) const mri::detail::CudaBackend *mri_cuda_plugin_backend() {
  static const mri::cuda::detail::Backend backend;
  return &backend;
}
