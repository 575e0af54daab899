// The direct normal operator on the GPU (toeplitz_cuda.hpp): F^H (w .* (F x)) by FhdPlan's
// forward and adjoint, or by a device NUFFT pair.
#include <memory>
#include <optional>

#include "exact/fhd_plan.cuh"
#include "nufft/gridding_cuda.hpp"
#include "normal_common.cuh"

namespace mri::cuda {

struct DirectNormalOperator::Impl {
  Grid grid;
  Dims dims{};
  KernelPolicy policy = KernelPolicy::Auto;
  detail::ForwardPath forward{};
  std::optional<detail::FhdPlan> plan;             // the exact sums, or
  std::shared_ptr<detail::NufftDevicePlan> nufft;  // the NUFFT pair
  Gridding gridding = Gridding::Gather;
  DeviceBuffer<float2> nufft_samples;                  // F x between the two NUFFT halves
  DeviceBuffer<float> weights;
  bool weighted = false;
  cudaEvent_t event = nullptr;

  Impl(const Grid &g, const std::vector<float> &w) : grid(g), dims(dims_of(g, g)), weights(w.size()), weighted(!w.empty()) {
    event = make_event();
    if (weighted)
      MRI_CUDA_CHECK(cudaMemcpy(weights.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~Impl() {
    if (event) cudaEventDestroy(event);
  }
  cudaStream_t plan_stream() const { return as_stream(nufft ? nufft->stream() : plan->stream()); }
  int samples() const { return static_cast<int>(nufft ? nufft_samples.size() : plan->samples()); }
};

DirectNormalOperator::DirectNormalOperator(const Trajectory &trajectory, std::span<const float> weights,
                                           const Grid &grid, KernelPolicy policy, Precision precision,
                                           StreamHandle) {
  if (trajectory.empty()) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  impl_ = std::make_unique<Impl>(grid, checked_weights(weights, trajectory.size()));
  impl_->policy = detail::resolve_policy(policy, precision);
  impl_->forward = detail::forward_path(precision);
  impl_->plan.emplace(trajectory, grid, grid);
}

DirectNormalOperator::DirectNormalOperator(std::shared_ptr<detail::NufftDevicePlan> nufft, Gridding gridding,
                                           std::span<const float> weights, const Grid &grid, std::size_t samples) {
  if (!nufft) mri::detail::invalid_argument("nufft", "null", "needs a device NUFFT plan");
  impl_ = std::make_unique<Impl>(grid, checked_weights(weights, samples));
  impl_->nufft = std::move(nufft);
  impl_->gridding = gridding;
  impl_->nufft_samples = DeviceBuffer<float2>(samples);
}

DirectNormalOperator::~DirectNormalOperator() = default;
DirectNormalOperator::DirectNormalOperator(DirectNormalOperator &&) noexcept = default;
DirectNormalOperator &DirectNormalOperator::operator=(DirectNormalOperator &&) noexcept = default;

const Grid &DirectNormalOperator::grid() const { return impl_->grid; }

DeviceImage DirectNormalOperator::domain_vector() const {
  return DeviceImage(impl_->grid, static_cast<StreamHandle>(impl_->plan_stream()));
}

void DirectNormalOperator::apply(const DeviceImage &in, DeviceImage &out) const { apply_regularized(in, out, Regularizer::None, 0); }

void DirectNormalOperator::apply_regularized(const DeviceImage &in, DeviceImage &out, Regularizer r, double lambda) const {
  const RegularizerTerm reg = regularizer_term(r, lambda);
  Impl &im = *impl_;
  check_image(in, im.grid, "in");
  check_image(out, im.grid, "out");
  if (in.data() == out.data()) mri::detail::invalid_argument("out", "in", "must not alias the input");
  const cudaStream_t ps = im.plan_stream();
  join(as_stream(in.stream()), ps, im.event);
  cfloat *y = im.nufft ? reinterpret_cast<cfloat *>(im.nufft_samples.get()) : im.plan->device_samples();
  if (im.nufft)
    im.nufft->forward_device(in.data(), y);
  else
    im.plan->forward_device(im.forward, in.data(), y);
  const int m = im.samples();
  if (im.weighted) {
    weight_kernel<<<blocks_for(m), kThreads, 0, ps>>>(reinterpret_cast<float2 *>(y), im.weights.get(), m);
    MRI_CUDA_CHECK(cudaGetLastError());
  }
  if (im.nufft)
    im.nufft->adjoint_device(y, out.data(), im.gridding);
  else
    im.plan->adjoint_device(im.policy, y, out.data());
  if (reg.regularizer != mri::detail::kRegNone) {
    const int n = static_cast<int>(im.grid.voxels());
    add_regularizer_kernel<<<blocks_for(n), kThreads, 0, ps>>>(reinterpret_cast<const float2 *>(in.data()), im.dims,
                                                               n, reg.regularizer, reg.lambda,
                                                               reinterpret_cast<float2 *>(out.data()));
    MRI_CUDA_CHECK(cudaGetLastError());
  }
  join(ps, as_stream(out.stream()), im.event);
}

} // namespace mri::cuda
