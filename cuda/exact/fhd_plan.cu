// FhdPlan: the device buffers of one trajectory and problem size, and the host entry points.
// The policy kernels live one per file (fhd_<policy>.cu); fhd_dispatch.cu picks one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "device.cuh"
#include "fhd_plan.cuh"
#include "mri/error.hpp"
#include "staged_upload.cuh"

namespace mri::cuda::detail {

bool device_present(); // device.cu

namespace {

// The coordinate of index 0 per axis: -L/2 of out's extents, or of the window's whole grid.
std::array<int, 3> origin_of(const Grid &out, const std::optional<FhdPlanOptions::Window> &window) {
  std::array<int, 3> o{};
  for (int a = 0; a < 3; ++a)
    o[a] = window ? static_cast<int>(window->first[a] - window->whole.extent(a) / 2) : static_cast<int>(-(out.extent(a) / 2));
  return o;
}

void validate_window(const Grid &out, const FhdPlanOptions::Window &w) {
  if (w.whole.dims() != out.dims())
    mri::detail::invalid_argument("window.whole dims", w.whole.dims(), "differs from the output grid's dims " + std::to_string(out.dims()));
  for (int a = 0; a < 3; ++a)
    if (w.first[a] < 0 || w.first[a] + out.extent(a) > w.whole.extent(a))
      mri::detail::invalid_argument("window.first[" + std::to_string(a) + "]", w.first[a],
                                    "with the output extent " + std::to_string(out.extent(a)) +
                                        " must lie within the whole grid's extent " + std::to_string(w.whole.extent(a)));
}

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
  // M itself is not limited: M >= 2^31 makes the plan chunked (chunks stay int32-indexed).
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

// ---- Memory layout (see FhdPlan in fhd_backend.hpp) ----

// The largest policy scratch: Tuned's tensor-core records, 80 float4 per group of 8 samples (its
// other variants: 6 float4 per sample), the last group padded to 8 samples.
constexpr std::size_t kPolicyScratchPerSample = 10 * sizeof(float4);
constexpr std::size_t kPolicyScratchPadding = 7 * kPolicyScratchPerSample;
constexpr std::size_t kResidentPerSample = sizeof(KPoint) + sizeof(float2) + kPolicyScratchPerSample; // 180
constexpr std::size_t kChunkedPerSample = 2 * (sizeof(KPoint) + sizeof(double2)) + kPolicyScratchPerSample; // 216
// SeparableGemm's operand budget per chunk sample in a chunked plan, by default.
constexpr std::size_t kGemmChunkBudgetPerSample = 96;
// The image, a complex-double image (SeparableGemm's R when resident, the accumulator when
// chunked) and Gather's voxel coordinates.
constexpr std::size_t kPerVoxel = sizeof(float2) + sizeof(double2) + 3 * sizeof(float); // 36
constexpr std::size_t kMaxChunk = (std::size_t{1} << 30) / FhdPlan::kChunkQuantum * FhdPlan::kChunkQuantum;
static_assert(FhdPlan::kChunkQuantum % 1024 == 0 && FhdPlan::kChunkQuantum % 1536 == 0);
static_assert(sizeof(KPoint) == 12);

// A bound on Tuned's split partial images (splits x voxels float2; none with one split) for m
// samples at a time. choose_splits() in fhd_tuned.cu searches splits <= min(ceil(m / 64),
// max(16, 16 waves x capacity / blocks_x + 1)), blocks_x = ceil(tiles / 128) for its 16x4-voxel
// tiles; capacity = resident blocks of 128 threads, at most 4 per SM for the 16x4 variants
// (their launch bounds and 166-174 registers allow 2 or 3). The tensor-core variants' blocks
// cover 4 warp tiles of 64 x 4 voxels or more, at least 8x fewer voxels than 128 16x4 tiles, at
// at most 6 blocks per SM (76 registers or more): their splits stay within this bound.
std::size_t tuned_partials_bound(const Grid &out, std::size_t m, int sms) {
  const long long tiles = ((out.nx() + 15) / 16) * ((out.ny() + 3) / 4) * static_cast<long long>(out.nz());
  const long long blocks_x = std::max<long long>(1, (tiles + 127) / 128);
  const long long cap = std::max<long long>(16, 16LL * 4 * sms / blocks_x + 1);
  const std::size_t splits = std::min<std::size_t>((m + 63) / 64, static_cast<std::size_t>(cap));
  return splits <= 1 ? 0 : splits * static_cast<std::size_t>(out.voxels()) * sizeof(float2);
}

std::size_t resident_bytes_on(const Grid &out, std::size_t m, int sms) {
  return m * kResidentPerSample + kPolicyScratchPadding + static_cast<std::size_t>(out.voxels()) * kPerVoxel +
         tuned_partials_bound(out, m, sms);
}
std::size_t chunked_bytes_on(const Grid &out, std::size_t chunk, int sms) {
  return chunk * kChunkedPerSample + kPolicyScratchPadding + static_cast<std::size_t>(out.voxels()) * kPerVoxel +
         tuned_partials_bound(out, chunk, sms);
}

// The largest multiple of kChunkQuantum (<= kMaxChunk) whose chunked plan fits `budget`; 0 if none
// (chunked_bytes_on grows with the chunk: bisection over the multiples).
std::size_t largest_chunk(const Grid &out, std::size_t budget, int sms) {
  constexpr std::size_t q = FhdPlan::kChunkQuantum;
  std::size_t lo = 0, hi = kMaxChunk / q; // multiples: lo fits (or is 0), hi + 1 does not exist
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    if (chunked_bytes_on(out, mid * q, sms) <= budget) lo = mid;
    else hi = mid - 1;
  }
  return lo * q;
}

// ---- Streaming kernels ----

constexpr int kStreamThreads = 256;

// acc = (first ? 0 : acc) + part, in double.
__global__ void accumulate_kernel(const float2 *__restrict__ part, int n, bool first, double2 *__restrict__ acc) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float2 v = part[i];
  const double2 a = first ? make_double2(0.0, 0.0) : acc[i];
  acc[i] = make_double2(a.x + static_cast<double>(v.x), a.y + static_cast<double>(v.y));
}

__global__ void round_kernel(const double2 *__restrict__ in, int n, float2 *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = make_float2(static_cast<float>(in[i].x), static_cast<float>(in[i].y));
}

__global__ void widen_kernel(const float2 *__restrict__ in, int n, double2 *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = make_double2(static_cast<double>(in[i].x), static_cast<double>(in[i].y));
}

// Frees the per-sample scratch other than `keep` (between host calls: nothing is in flight).
void keep_only(Workspace &ws, SampleScratch keep) {
  if (keep != SampleScratch::Soa) ws.soa = DeviceBuffer<float>();
  if (keep != SampleScratch::Packed) ws.packed = DeviceBuffer<PackedSample>();
  if (keep != SampleScratch::Tuned) ws.tuned = DeviceBuffer<float4>();
  if (keep != SampleScratch::Gemm && ws.gemm) release_separable_operands(ws);
}

// Streams the samples chunk after chunk through the two slots (see Streaming). For chunk i
// (samples [first, first + count)): the upload stream copies its trajectory and, when `coeffs`
// is given, its coefficients (`coeff_bytes` each) into slot i % 2; the compute stream waits for
// them, compute(view, io, i) enqueues the chunk's work (view: the plan's state with the slot's
// trajectory and count samples), the next chunk's upload is issued (its host-side staging
// overlaps the GPU's compute of this chunk), then finish(io, first, count) (the forward's copy
// back) and consumed[slot] is recorded, which the slot's next upload waits for.
template <class Compute, class Finish>
void stream_chunks(FhdPlan::Impl &p, const void *coeffs, std::size_t coeff_bytes, Compute &&compute, Finish &&finish) {
  Streaming &st = *p.streaming;
  const cudaStream_t s = p.stream.get(), up = st.upload.get();
  const std::size_t n = (p.m + st.chunk - 1) / st.chunk;
  const auto upload = [&](std::size_t i) {
    const std::size_t slot = i % 2, first = i * st.chunk, count = std::min(st.chunk, p.m - first);
    MRI_CUDA_CHECK(cudaStreamWaitEvent(up, st.consumed[slot].get(), 0)); // no-op before its first record
    MRI_CUDA_CHECK(cudaMemcpyAsync(st.k[slot].get(), st.host_k.data() + first, count * sizeof(KPoint),
                                   cudaMemcpyHostToDevice, up));
    if (coeffs != nullptr)
      MRI_CUDA_CHECK(cudaMemcpyAsync(st.io[slot].get(), static_cast<const char *>(coeffs) + first * coeff_bytes,
                                     count * coeff_bytes, cudaMemcpyHostToDevice, up));
    MRI_CUDA_CHECK(cudaEventRecord(st.uploaded[slot].get(), up));
  };
  upload(0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t slot = i % 2, first = i * st.chunk, count = std::min(st.chunk, p.m - first);
    MRI_CUDA_CHECK(cudaStreamWaitEvent(s, st.uploaded[slot].get(), 0));
    PlanState view = p.state;
    view.k = st.k[slot].get();
    view.m = static_cast<int>(count); // count <= chunk <= 2^30
    compute(static_cast<const PlanState &>(view), st.io[slot].get(), i);
    if (i + 1 < n) upload(i + 1);
    finish(st.io[slot].get(), first, count);
    MRI_CUDA_CHECK(cudaEventRecord(st.consumed[slot].get(), s));
  }
}

void no_finish(double2 *, std::size_t, std::size_t) {}

} // namespace

void require_resident(const FhdPlan::Impl &p, const char *entry_point) {
  if (!p.streaming) return;
  throw Unsupported(std::string("cuda backend: FhdPlan::") + entry_point +
                    " needs the resident layout, but this plan streams its " + std::to_string(p.m) +
                    " samples in chunks of " + std::to_string(p.chunk) + " (memory budget " + std::to_string(p.budget) +
                    " bytes); use the host entry points (adjoint, forward, adjoint_f64, forward_f64) or a larger budget");
}

void streamed_adjoint(FhdPlan::Impl &p, KernelPolicy policy, const float2 *c_host, float2 *result_host) {
  keep_only(p.ws, sample_scratch(policy));
  Streaming &st = *p.streaming;
  const int n = p.state.out.voxels;
  const cudaStream_t s = p.stream.get();
  double2 *acc = st.acc.get();
  float2 *image = p.image.get();
  stream_chunks(
      p, c_host, sizeof(float2),
      [&](const PlanState &view, double2 *io, std::size_t i) {
        const auto *c = reinterpret_cast<const float2 *>(io);
        if (run_adjoint_into(view, policy, c, acc, i > 0)) return;
        run_adjoint_policy(view, policy, c, image); // the chunk's partial image
        accumulate_kernel<<<blocks_for(n, kStreamThreads), kStreamThreads, 0, s>>>(image, n, i == 0, acc);
        MRI_CUDA_CHECK_LAUNCH("accumulate_kernel");
      },
      no_finish);
  round_kernel<<<blocks_for(n, kStreamThreads), kStreamThreads, 0, s>>>(acc, n, image);
  MRI_CUDA_CHECK_LAUNCH("round_kernel");
  MRI_CUDA_CHECK(cudaMemcpyAsync(result_host, image, static_cast<std::size_t>(n) * sizeof(float2),
                                 cudaMemcpyDeviceToHost, s));
  MRI_CUDA_CHECK(cudaStreamSynchronize(s));
}

void streamed_adjoint_f64(FhdPlan::Impl &p, const double2 *c_host, double2 *result_host) {
  keep_only(p.ws, SampleScratch::Gemm);
  Streaming &st = *p.streaming;
  const cudaStream_t s = p.stream.get();
  double2 *acc = st.acc.get();
  stream_chunks(
      p, c_host, sizeof(double2),
      [&](const PlanState &view, double2 *io, std::size_t i) { separable_adjoint_into(view, io, acc, i > 0); },
      no_finish);
  MRI_CUDA_CHECK(cudaMemcpyAsync(result_host, acc, static_cast<std::size_t>(p.state.out.voxels) * sizeof(double2),
                                 cudaMemcpyDeviceToHost, s));
  MRI_CUDA_CHECK(cudaStreamSynchronize(s));
}

void streamed_forward(FhdPlan::Impl &p, ForwardPath path, const float2 *image_host, float2 *result_host) {
  keep_only(p.ws, path == ForwardPath::Reference ? SampleScratch::None : SampleScratch::Gemm);
  Streaming &st = *p.streaming;
  const int n = p.state.out.voxels;
  const cudaStream_t s = p.stream.get();
  float2 *image = p.image.get();
  double2 *image64 = st.acc.get();
  MRI_CUDA_CHECK(cudaMemcpyAsync(image, image_host, static_cast<std::size_t>(n) * sizeof(float2),
                                 cudaMemcpyHostToDevice, s));
  if (path == ForwardPath::GemmDouble) { // widened once, not per chunk
    widen_kernel<<<blocks_for(n, kStreamThreads), kStreamThreads, 0, s>>>(image, n, image64);
    MRI_CUDA_CHECK_LAUNCH("widen_kernel");
  }
  stream_chunks(
      p, nullptr, 0,
      [&](const PlanState &view, double2 *io, std::size_t) {
        auto *r = reinterpret_cast<float2 *>(io);
        if (path == ForwardPath::GemmDouble) return separable_forward_double(view, image64, r);
        run_forward_path(view, path, image, r);
      },
      [&](double2 *io, std::size_t first, std::size_t count) {
        MRI_CUDA_CHECK(cudaMemcpyAsync(result_host + first, io, count * sizeof(float2), cudaMemcpyDeviceToHost, s));
      });
  MRI_CUDA_CHECK(cudaStreamSynchronize(s));
}

void streamed_forward_f64(FhdPlan::Impl &p, const double2 *image_host, double2 *result_host) {
  keep_only(p.ws, SampleScratch::Gemm);
  Streaming &st = *p.streaming;
  const cudaStream_t s = p.stream.get();
  double2 *image64 = st.acc.get();
  MRI_CUDA_CHECK(cudaMemcpyAsync(image64, image_host, static_cast<std::size_t>(p.state.out.voxels) * sizeof(double2),
                                 cudaMemcpyHostToDevice, s));
  stream_chunks(
      p, nullptr, 0, [&](const PlanState &view, double2 *io, std::size_t) { separable_forward_double(view, image64, io); },
      [&](double2 *io, std::size_t first, std::size_t count) {
        MRI_CUDA_CHECK(cudaMemcpyAsync(result_host + first, io, count * sizeof(double2), cudaMemcpyDeviceToHost, s));
      });
  MRI_CUDA_CHECK(cudaStreamSynchronize(s));
}

void pack_samples(const PlanState &plan, const float2 *c, PhaseUnit unit) {
  constexpr int kThreads = 256;
  PackedSample *out = plan.ws->packed.grow(static_cast<std::size_t>(plan.m));
  pack_kernel<<<blocks_for(plan.m, kThreads), kThreads, 0, plan.stream>>>(plan.k, c, plan.m, k_scale(plan, unit), out);
  MRI_CUDA_CHECK_LAUNCH("pack_kernel");
}

FhdPlan::FhdPlan(const Trajectory &trajectory, const Grid &out, const Grid &period)
    : FhdPlan(trajectory, out, period, FhdPlanOptions{}) {}

FhdPlan::FhdPlan(const Trajectory &trajectory, const Grid &out, const Grid &period, const FhdPlanOptions &options) {
  if (!device_present()) throw Unsupported("cuda backend: no usable CUDA device");
  if (options.window) validate_window(out, *options.window);
  validate(trajectory, options.window ? options.window->whole : out, period); // the coordinates' range

  const int sms = multiprocessor_count();
  std::size_t free_bytes = 0, total_bytes = 0;
  MRI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t budget = options.memory_budget_bytes ? options.memory_budget_bytes : free_bytes / 10 * 9;
  const std::size_t m = trajectory.size();
  const bool resident = m <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
                        resident_bytes_on(out, m, sms) <= budget;
  std::size_t chunk = m;
  if (!resident) {
    chunk = std::min(largest_chunk(out, budget, sms), m);
    if (chunk == 0) {
      const bool small = m <= kChunkQuantum;
      const std::size_t needed = small ? resident_bytes_on(out, m, sms) : chunked_bytes_on(out, kChunkQuantum, sms);
      throw Unsupported("cuda backend: FhdPlan for " + std::to_string(m) + " samples on " +
                        std::to_string(out.voxels()) + " voxels needs " + std::to_string(needed) + " bytes of device memory " +
                        (small ? std::string("(resident)")
                               : "for its smallest chunk (" + std::to_string(kChunkQuantum) + " samples x " +
                                     std::to_string(kChunkedPerSample) + " B + " + std::to_string(kPerVoxel) +
                                     " B per voxel + Tuned's partial images)") +
                        ", but its memory budget is " + std::to_string(budget) + " bytes (free device memory: " +
                        std::to_string(free_bytes) + " bytes)");
    }
  }

  impl_ = std::make_unique<Impl>();
  Impl &p = *impl_;
  p.out = out;
  p.period = period;
  p.m = m;
  p.chunk = chunk;
  p.budget = budget;
  p.image.grow(static_cast<std::size_t>(out.voxels()));
  PlanState &s = p.state;
  if (resident) {
    p.k.grow(p.m);
    p.samples.grow(p.m);
    MRI_CUDA_CHECK(cudaMemcpy(p.k.get(), trajectory.data(), p.m * sizeof(KPoint), cudaMemcpyHostToDevice));
    s.k = p.k.get();
  } else {
    p.streaming = std::make_unique<Streaming>();
    Streaming &st = *p.streaming;
    st.chunk = chunk;
    st.host_k.assign(trajectory.data(), trajectory.data() + m);
    for (int slot = 0; slot < 2; ++slot) {
      st.k[slot].grow(chunk);
      st.io[slot].grow(chunk);
    }
    st.acc.grow(static_cast<std::size_t>(out.voxels()));
    s.k = st.k[0].get();
    // SeparableGemm's operands share the per-sample scratch allowance (at most 2 GiB, its own cap).
    p.ws.gemm_default_budget = std::min(chunk * kGemmChunkBudgetPerSample, std::size_t{2} << 30);
  }
  s.m = static_cast<int>(chunk);
  const std::array<int, 3> origin = origin_of(out, options.window);
  s.out = OutGrid{static_cast<int>(out.nx()), static_cast<int>(out.ny()), static_cast<int>(out.nz()),
                  static_cast<int>(out.voxels()), origin[0], origin[1], origin[2]};
  for (int a = 0; a < 3; ++a) s.inv_period[a] = 1.0 / static_cast<double>(period.extent(a));
  s.stream = p.stream.get();
  s.copy_stream = p.copy_stream.get();
  s.packed_ready = p.packed_ready.get();
  s.copy_done[0] = p.copy_done0.get();
  s.copy_done[1] = p.copy_done1.get();
  s.kernel_done[0] = p.kernel_done0.get();
  s.kernel_done[1] = p.kernel_done1.get();
  s.multiprocessors = sms;
  s.ws = &p.ws;
}

FhdPlan::~FhdPlan() {
  if (!impl_) return;
  cudaStreamSynchronize(impl_->stream.get()); // work in flight still uses the buffers
  if (impl_->streaming) cudaStreamSynchronize(impl_->streaming->upload.get());
}
FhdPlan::FhdPlan(FhdPlan &&) noexcept = default;
FhdPlan &FhdPlan::operator=(FhdPlan &&) noexcept = default;

std::size_t FhdPlan::samples() const { return impl_->m; }
std::size_t FhdPlan::voxels() const { return static_cast<std::size_t>(impl_->out.voxels()); }
const Grid &FhdPlan::out() const { return impl_->out; }
const Grid &FhdPlan::period() const { return impl_->period; }
void *FhdPlan::stream() const { return impl_->stream.get(); }
cfloat *FhdPlan::device_samples() {
  require_resident(*impl_, "device_samples");
  return reinterpret_cast<cfloat *>(impl_->samples.get());
}
cfloat *FhdPlan::device_image() { return reinterpret_cast<cfloat *>(impl_->image.get()); }

bool FhdPlan::chunked() const { return impl_->streaming != nullptr; }
std::size_t FhdPlan::chunk_samples() const { return impl_->chunk; }
std::size_t FhdPlan::chunks() const { return (impl_->m + impl_->chunk - 1) / impl_->chunk; }
std::size_t FhdPlan::memory_budget_bytes() const { return impl_->budget; }
std::size_t FhdPlan::resident_bytes(const Grid &out, std::size_t samples) {
  return resident_bytes_on(out, samples, multiprocessor_count());
}
std::size_t FhdPlan::chunked_bytes(const Grid &out, std::size_t chunk_samples) {
  return chunked_bytes_on(out, chunk_samples, multiprocessor_count());
}

void FhdPlan::synchronize() { MRI_CUDA_CHECK(cudaStreamSynchronize(impl_->stream.get())); }

void FhdPlan::upload_samples(const cfloat *host) {
  require_resident(*impl_, "upload_samples");
  upload_staged(impl_->samples.get(), host, impl_->m * sizeof(float2), impl_->stream.get());
  synchronize();
}
void FhdPlan::upload_image(const cfloat *host) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(impl_->image.get(), host, voxels() * sizeof(float2),
                                 cudaMemcpyHostToDevice, impl_->stream.get()));
  synchronize();
}
void FhdPlan::download_samples(cfloat *host) {
  require_resident(*impl_, "download_samples");
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
  if (impl_->streaming)
    return streamed_adjoint(*impl_, p, reinterpret_cast<const float2 *>(c_host), reinterpret_cast<float2 *>(result_host));
  upload_samples(c_host);
  adjoint_device(p, device_samples(), device_image());
  download_image(result_host);
}

void FhdPlan::forward(const cfloat *image_host, cfloat *result_host) {
  forward(ForwardPath::Reference, image_host, result_host);
}

void FhdPlan::forward(ForwardPath path, const cfloat *image_host, cfloat *result_host) {
  if (impl_->streaming)
    return streamed_forward(*impl_, path, reinterpret_cast<const float2 *>(image_host),
                            reinterpret_cast<float2 *>(result_host));
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
  require_resident(*impl_, "time_adjoint_ms");
  const KernelPolicy p = resolve_policy(policy);
  return time_on_stream(*impl_, [&] { adjoint_device(p, device_samples(), device_image()); });
}

void FhdPlan::adjoint_tuned_variant(int variant, const cfloat *c_host, cfloat *result_host) {
  require_resident(*impl_, "adjoint_tuned_variant");
  upload_samples(c_host);
  adjoint_device_tuned_variant(variant, device_samples(), device_image());
  download_image(result_host);
}

float FhdPlan::time_tuned_variant_ms(int variant) {
  require_resident(*impl_, "time_tuned_variant_ms");
  return time_on_stream(*impl_, [&] { adjoint_device_tuned_variant(variant, device_samples(), device_image()); });
}

float FhdPlan::time_forward_ms() { return time_forward_ms(ForwardPath::Reference); }

float FhdPlan::time_forward_ms(ForwardPath path) {
  require_resident(*impl_, "time_forward_ms");
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
