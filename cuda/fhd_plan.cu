// FhdPlan: the device buffers of one trajectory and problem size, and the host entry points.
// The policy kernels live one per file (fhd_<policy>.cu); fhd_dispatch.cu picks one.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "fhd_plan.cuh"
#include "mri/error.hpp"

namespace mri::cuda::detail {

bool device_present(); // device.cu

namespace {

void validate(const Trajectory &t, const Grid &out, const Grid &period) {
  if (t.empty()) mri::detail::invalid_argument("trajectory size", 0, "must hold at least one sample");
  if (out.dims() != period.dims())
    mri::detail::invalid_argument("output grid dims", out.dims(),
                                  "differs from the period grid's dims " + std::to_string(period.dims()));
  t.check_within(period); // the CPU operators' check: dims and every sample inside [-n/2, n/2)
  constexpr std::int64_t kIndexLimit = std::numeric_limits<int>::max();
  if (out.voxels() > kIndexLimit)
    throw Unsupported("cuda backend: output grid of " + std::to_string(out.voxels()) +
                      " voxels exceeds the 32-bit index range of the kernels");
  if (static_cast<std::int64_t>(t.size()) > kIndexLimit)
    throw Unsupported("cuda backend: " + std::to_string(t.size()) +
                      " samples exceed the 32-bit index range of the kernels");
  // reduce_turns() needs |phase in turns| < 2^22: |k/p| <= 1/2 per axis, |x| <= L/2.
  for (int a = 0; a < 3; ++a)
    if (out.extent(a) > (std::int64_t{1} << 21))
      throw Unsupported("cuda backend: output extent " + std::to_string(out.extent(a)) +
                        " on axis " + std::to_string(a) + " exceeds 2^21");
}

// The loop-fission pass: one thread per sample packs {k scaled to the policy's unit, c}.
__global__ void pack_kernel(const KPoint *__restrict__ k, const float2 *__restrict__ c, int m, KScale scale,
                            PackedSample *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float3 t = scaled_k(k[i], scale);
  const float2 v = c[i];
  out[i] = PackedSample{t.x, t.y, t.z, v.x, v.y};
}

} // namespace

void pack_samples(const PlanState &plan, const float2 *c, PhaseUnit unit) {
  constexpr int kThreads = 256;
  PackedSample *out = plan.ws->packed.grow(static_cast<std::size_t>(plan.m));
  pack_kernel<<<blocks_for(plan.m, kThreads), kThreads, 0, plan.stream>>>(plan.k, c, plan.m, k_scale(plan, unit), out);
  MRI_CUDA_CHECK_LAUNCH("pack_kernel");
}

FhdPlan::FhdPlan(const Trajectory &trajectory, const Grid &out, const Grid &period) {
  if (!device_present()) throw Unsupported("cuda backend: no usable CUDA device");
  validate(trajectory, out, period);
  impl_ = std::make_unique<Impl>();
  Impl &p = *impl_;
  p.out = out;
  p.period = period;
  p.m = trajectory.size();
  p.k.grow(p.m);
  p.samples.grow(p.m);
  p.image.grow(static_cast<std::size_t>(out.voxels()));
  MRI_CUDA_CHECK(cudaMemcpy(p.k.get(), trajectory.data(), p.m * sizeof(KPoint), cudaMemcpyHostToDevice));

  PlanState &s = p.state;
  s.k = p.k.get();
  s.m = static_cast<int>(p.m);
  s.out = OutGrid{static_cast<int>(out.nx()), static_cast<int>(out.ny()), static_cast<int>(out.nz()),
                  static_cast<int>(out.voxels())};
  for (int a = 0; a < 3; ++a) s.inv_period[a] = 1.0 / static_cast<double>(period.extent(a));
  s.stream = p.stream.get();
  s.copy_stream = p.copy_stream.get();
  s.packed_ready = p.packed_ready.get();
  s.copy_done[0] = p.copy_done0.get();
  s.copy_done[1] = p.copy_done1.get();
  s.kernel_done[0] = p.kernel_done0.get();
  s.kernel_done[1] = p.kernel_done1.get();
  int device = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  MRI_CUDA_CHECK(cudaDeviceGetAttribute(&s.multiprocessors, cudaDevAttrMultiProcessorCount, device));
  s.ws = &p.ws;
}

FhdPlan::~FhdPlan() {
  if (impl_) cudaStreamSynchronize(impl_->stream.get()); // work in flight still uses the buffers
}
FhdPlan::FhdPlan(FhdPlan &&) noexcept = default;
FhdPlan &FhdPlan::operator=(FhdPlan &&) noexcept = default;

std::size_t FhdPlan::samples() const { return impl_->m; }
std::size_t FhdPlan::voxels() const { return static_cast<std::size_t>(impl_->out.voxels()); }
const Grid &FhdPlan::out() const { return impl_->out; }
const Grid &FhdPlan::period() const { return impl_->period; }
void *FhdPlan::stream() const { return impl_->stream.get(); }
cfloat *FhdPlan::device_samples() { return reinterpret_cast<cfloat *>(impl_->samples.get()); }
cfloat *FhdPlan::device_image() { return reinterpret_cast<cfloat *>(impl_->image.get()); }

void FhdPlan::synchronize() { MRI_CUDA_CHECK(cudaStreamSynchronize(impl_->stream.get())); }

void FhdPlan::upload_samples(const cfloat *host) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(impl_->samples.get(), host, impl_->m * sizeof(float2),
                                 cudaMemcpyHostToDevice, impl_->stream.get()));
  synchronize();
}
void FhdPlan::upload_image(const cfloat *host) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(impl_->image.get(), host, voxels() * sizeof(float2),
                                 cudaMemcpyHostToDevice, impl_->stream.get()));
  synchronize();
}
void FhdPlan::download_samples(cfloat *host) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(host, impl_->samples.get(), impl_->m * sizeof(float2),
                                 cudaMemcpyDeviceToHost, impl_->stream.get()));
  synchronize();
}
void FhdPlan::download_image(cfloat *host) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(host, impl_->image.get(), voxels() * sizeof(float2),
                                 cudaMemcpyDeviceToHost, impl_->stream.get()));
  synchronize();
}

void FhdPlan::adjoint(KernelPolicy policy, const cfloat *c_host, cfloat *result_host) {
  const KernelPolicy p = resolve_policy(policy); // before any copy: Unsupported costs nothing
  upload_samples(c_host);
  adjoint_device(p, device_samples(), device_image());
  download_image(result_host);
}

void FhdPlan::forward(const cfloat *image_host, cfloat *result_host) {
  forward(ForwardPath::Reference, image_host, result_host);
}

void FhdPlan::forward(ForwardPath path, const cfloat *image_host, cfloat *result_host) {
  upload_image(image_host);
  forward_device(path, device_image(), device_samples());
  download_samples(result_host);
}

void FhdPlan::forward_device(const cfloat *image_dev, cfloat *result_dev) {
  forward_device(ForwardPath::Reference, image_dev, result_dev);
}

namespace {

// Milliseconds between CUDA events recorded around what `enqueue` puts on the plan's stream.
template <class Enqueue> float time_on_stream(FhdPlan::Impl &p, Enqueue &&enqueue) {
  cudaStream_t s = p.stream.get();
  MRI_CUDA_CHECK(cudaEventRecord(p.start.get(), s));
  enqueue();
  MRI_CUDA_CHECK(cudaEventRecord(p.stop.get(), s));
  MRI_CUDA_CHECK(cudaEventSynchronize(p.stop.get()));
  float ms = 0;
  MRI_CUDA_CHECK(cudaEventElapsedTime(&ms, p.start.get(), p.stop.get()));
  return ms;
}

} // namespace

float FhdPlan::time_adjoint_ms(KernelPolicy policy) {
  const KernelPolicy p = resolve_policy(policy);
  return time_on_stream(*impl_, [&] { adjoint_device(p, device_samples(), device_image()); });
}

void FhdPlan::adjoint_tuned_variant(int variant, const cfloat *c_host, cfloat *result_host) {
  upload_samples(c_host);
  adjoint_device_tuned_variant(variant, device_samples(), device_image());
  download_image(result_host);
}

float FhdPlan::time_tuned_variant_ms(int variant) {
  return time_on_stream(*impl_, [&] { adjoint_device_tuned_variant(variant, device_samples(), device_image()); });
}

float FhdPlan::time_forward_ms() { return time_forward_ms(ForwardPath::Reference); }

float FhdPlan::time_forward_ms(ForwardPath path) {
  return time_on_stream(*impl_, [&] { forward_device(path, device_image(), device_samples()); });
}

DeviceInfo device_info() {
  DeviceInfo info;
  cudaDeviceProp prop{};
  MRI_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::snprintf(info.name, sizeof info.name, "%s", prop.name);
  info.multiprocessors = prop.multiProcessorCount;
  MRI_CUDA_CHECK(cudaDeviceGetAttribute(&info.sm_clock_khz, cudaDevAttrClockRate, 0));
  return info;
}

} // namespace mri::cuda::detail
