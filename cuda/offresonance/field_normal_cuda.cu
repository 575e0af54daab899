// The exact field-corrected normal A^H W A on the device (field_normal_cuda.hpp).
#include <cuda_runtime.h>

#include <vector>

#include "field_normal_cuda.hpp"
#include "toeplitz/normal_common.cuh"

namespace mri::cuda::detail {

struct FieldDirectNormal::Impl {
  std::shared_ptr<FieldFourierPlan> plan;
  FieldKernel kernel = FieldKernel::SfuTrig;
  Dims dims{};
  DeviceBuffer<float2> y; // A x between the two halves
  DeviceBuffer<float> weights;
  bool weighted = false;
  cudaEvent_t event = nullptr;
  ~Impl() {
    if (event) cudaEventDestroy(event);
  }
};

FieldDirectNormal::FieldDirectNormal(std::shared_ptr<FieldFourierPlan> plan, FieldKernel kernel,
                                     std::span<const float> weights)
    : impl_(std::make_unique<Impl>()) {
  if (!plan) mri::detail::invalid_argument("plan", "null", "needs a FieldFourierPlan");
  Impl &p = *impl_;
  const std::vector<float> w = checked_weights(weights, plan->samples());
  p.kernel = kernel;
  p.dims = dims_of(plan->grid(), plan->grid());
  p.y = DeviceBuffer<float2>(plan->samples());
  p.weighted = !w.empty();
  if (p.weighted) {
    p.weights = DeviceBuffer<float>(w.size());
    MRI_CUDA_CHECK(cudaMemcpy(p.weights.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  p.plan = std::move(plan);
  p.event = make_event();
}
FieldDirectNormal::~FieldDirectNormal() = default;
FieldDirectNormal::FieldDirectNormal(FieldDirectNormal &&) noexcept = default;
FieldDirectNormal &FieldDirectNormal::operator=(FieldDirectNormal &&) noexcept = default;

const Grid &FieldDirectNormal::grid() const { return impl_->plan->grid(); }
DeviceImage FieldDirectNormal::domain_vector() const { return DeviceImage(grid(), impl_->plan->stream()); }
void FieldDirectNormal::apply(const DeviceImage &in, DeviceImage &out) const { apply_regularized(in, out, Regularizer::None, 0); }

void FieldDirectNormal::apply_regularized(const DeviceImage &in, DeviceImage &out, Regularizer r, double lambda) const {
  const RegularizerTerm reg = regularizer_term(r, lambda);
  const Impl &p = *impl_;
  check_image(in, grid(), "in");
  check_image(out, grid(), "out");
  if (in.data() == out.data()) mri::detail::invalid_argument("out", "in", "must not alias the input");
  const cudaStream_t s = as_stream(p.plan->stream());
  join(as_stream(in.stream()), s, p.event);
  cfloat *y = reinterpret_cast<cfloat *>(p.y.get());
  p.plan->forward_device(p.kernel, in.data(), y);
  const int m = static_cast<int>(p.plan->samples());
  if (p.weighted) {
    weight_kernel<<<mri::cuda::blocks_for(m), kThreads, 0, s>>>(p.y.get(), p.weights.get(), m);
    MRI_CUDA_CHECK(cudaGetLastError());
  }
  p.plan->adjoint_device(p.kernel, y, out.data());
  if (reg.regularizer != mri::detail::kRegNone) {
    const int n = static_cast<int>(grid().voxels());
    add_regularizer_kernel<<<mri::cuda::blocks_for(n), kThreads, 0, s>>>(reinterpret_cast<const float2 *>(in.data()),
                                                                        p.dims, n, reg.regularizer, reg.lambda,
                                                                        reinterpret_cast<float2 *>(out.data()));
    MRI_CUDA_CHECK(cudaGetLastError());
  }
  join(s, as_stream(out.stream()), p.event);
}

} // namespace mri::cuda::detail
