// mri::reconstruct on the GPU: every phase on the device, one transfer of the image back.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "../lib/recon_report.hpp"
#include "cuda_check.cuh"
#include "device_image.hpp"
#include "fhd_plan.cuh"
#include "gridding_cuda.hpp"
#include "mri/error.hpp"
#include "mri/toeplitz_cache.hpp"
#include "recon_cuda.hpp"
#include "toeplitz_cuda.hpp"

namespace mri::cuda::detail {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string gib(std::size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB (%zu bytes)", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0),
                bytes);
  return buf;
}

std::string extents(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

// w .* D (the first coil's M samples) on the device, for the NUFFT plan (blocking copy; without
// weights the samples go up as they are, no host copy).
DeviceBuffer<cfloat> upload_weighted_samples(const KSpaceData &data) {
  const std::size_t m = data.trajectory().size();
  const std::vector<cfloat> weighted = data.has_weights() ? data.weighted_samples() : std::vector<cfloat>{};
  const cfloat *host = data.has_weights() ? weighted.data() : data.samples().data();
  DeviceBuffer<cfloat> d(m);
  MRI_CUDA_CHECK(cudaMemcpy(d.get(), host, m * sizeof(cfloat), cudaMemcpyHostToDevice));
  return d;
}

__global__ void q_samples_kernel(const float *__restrict__ w, int m, float2 *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) out[i] = make_float2(w ? w[i] : 1.0f, 0.0f);
}

// Q's samples on the device: the density weights as complex values (all ones without weights),
// made there from the real weights (half the upload of complex ones, none without weights).
DeviceBuffer<cfloat> q_samples(const KSpaceData &data, cudaStream_t stream) {
  const auto m = static_cast<int>(data.trajectory().size());
  DeviceBuffer<float> w(data.weights().size());
  if (data.has_weights())
    MRI_CUDA_CHECK(cudaMemcpy(w.get(), data.weights().data(), data.weights().size() * sizeof(float),
                              cudaMemcpyHostToDevice));
  DeviceBuffer<cfloat> out(static_cast<std::size_t>(m));
  q_samples_kernel<<<(m + 255) / 256, 256, 0, stream>>>(data.has_weights() ? w.get() : nullptr, m,
                                                        reinterpret_cast<float2 *>(out.get()));
  MRI_CUDA_CHECK(cudaGetLastError());
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream)); // w is freed on return
  return out;
}

// The normal operator CG applies: Toeplitz or direct, each with the regulariser fused in.
struct GpuNormal {
  const ToeplitzOperator *toeplitz;
  const DirectNormalOperator *direct;
  void operator()(const DeviceImage &in, DeviceImage &out) const {
    if (toeplitz)
      toeplitz->apply(in, out);
    else
      direct->apply(in, out);
  }
};

} // namespace

ReconResult reconstruct_cuda(const KSpaceData &data, const Grid &grid, const ReconOptions &options) {
  const auto t_start = Clock::now();
  ReconReport report;
  report.backend = Backend::Cuda;
  report.normal = options.normal;
  report.method = options.method;
  const bool direct = options.normal == Normal::Direct;
  const bool nufft = options.method == Method::Nufft;
  const bool use_cache = !direct && !options.q_cache_dir.empty();
  const Trajectory &trajectory = data.trajectory();
  // float32: the fastest accurate policy; float64: SeparableGemm (sums in double, results rounded
  // to the float32 the CG works in, as the CPU's float64 path rounds its Q and F^H D).
  const KernelPolicy policy = resolve_policy(options.policy, options.precision);
  const NufftOptions nufft_options = mri::detail::recon_nufft_options(options, Backend::Cuda);
  const Gridding gridding = options.nufft_gridding == Gridding::Scatter ? Gridding::Scatter : Gridding::Gather;

  // Cache key and the memory check, before any allocation.
  auto t = Clock::now();
  ToeplitzCacheKey key;
  bool cached = false;
  if (use_cache) {
    key = toeplitz_cache_key(trajectory, data.weights(), grid, options.precision, nufft ? options.nufft_tolerance : 0);
    report.q_cache_file = toeplitz_cache_file(options.q_cache_dir, key);
    cached = std::filesystem::exists(report.q_cache_file);
  }
  const DeviceBytes need = reconstruct_device_bytes(grid, trajectory.size(), direct, cached, nufft);
  report.device_bytes = need.peak();
  const DeviceMemory memory = device_memory();
  std::size_t available = memory.free;
  if (options.device_memory_limit > 0) available = std::min(available, options.device_memory_limit);
  if (need.peak() > available)
    throw Unsupported("reconstruct on the GPU: grid " + extents(grid) + " (Toeplitz grid " + extents(grid.doubled()) +
                      "), M = " + std::to_string(trajectory.size()) + ", normal = " + to_string(options.normal) +
                      ", method = " + to_string(options.method) + " needs about " + gib(need.peak()) +
                      " of device memory (F^H D phase " + gib(need.fhd) + ", Q phase " + gib(need.q) +
                      ", CG phase " + gib(need.cg) + "); available: " + gib(available) + " (free " +
                      gib(memory.free) + " of " + gib(memory.total) +
                      (options.device_memory_limit > 0 ? ", limit " + gib(options.device_memory_limit) : "") + ")");
  StreamHandle stream = default_stream();
  const auto sync = [](StreamHandle s) { MRI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s))); };
  report.setup_seconds += seconds_since(t);

  // F^H (w .* D): the exact sum (FhdPlan), or one adjoint NUFFT whose plan the direct normal keeps.
  // The NUFFT plans (F^H D; Q on the doubled grid with k doubled) share one upload of k.
  DeviceImage rhs;
  std::shared_ptr<NufftDevicePlan> nufft_plan;
  std::optional<DevicePoints> points;
  if (nufft) {
    t = Clock::now();
    points.emplace(trajectory);
    report.transfer_seconds += seconds_since(t);
    t = Clock::now();
    nufft_plan = mri::detail::make_device_nufft_plan(points->data(), points->size(), grid, nufft_options, {1, 1, 1});
    rhs = DeviceImage(grid, stream);
    report.setup_seconds += seconds_since(t);
    t = Clock::now();
    const DeviceBuffer<cfloat> samples = upload_weighted_samples(data);
    report.transfer_seconds += seconds_since(t);
    t = Clock::now();
    nufft_plan->adjoint_device(samples.get(), rhs.data(), gridding);
    nufft_plan->synchronize(); // the samples are freed next
    report.fhd_seconds = seconds_since(t);
  } else {
    t = Clock::now();
    FhdPlan plan(trajectory, grid, grid); // uploads the trajectory
    rhs = DeviceImage(grid, stream);
    report.setup_seconds += seconds_since(t);
    t = Clock::now();
    plan.upload_samples(data.weighted_samples().data());
    report.transfer_seconds += seconds_since(t);
    t = Clock::now();
    plan.adjoint_device(policy, plan.device_samples(), rhs.data());
    plan.synchronize();
    report.fhd_seconds = seconds_since(t);
  }

  // The normal operator: Toeplitz (Q computed or from the cache) or direct.
  std::optional<ToeplitzOperator> toeplitz;
  std::optional<DirectNormalOperator> direct_op;
  if (direct) {
    t = Clock::now();
    if (nufft)
      direct_op.emplace(nufft_plan, gridding, data.weights(), grid, trajectory.size());
    else
      direct_op.emplace(trajectory, data.weights(), grid, policy, options.precision, stream);
    direct_op->set_regularizer(options.regularizer, options.lambda);
    report.setup_seconds += seconds_since(t);
  } else {
    nufft_plan.reset(); // its oversampled grid is not needed any more
    if (cached) {
      t = Clock::now();
      try {
        const std::vector<float> spectrum = load_toeplitz_spectrum(report.q_cache_file, key, grid);
        report.q_seconds = seconds_since(t);
        toeplitz.emplace(grid, spectrum, ToeplitzFft::Auto, stream);
        report.q_cache = QCacheStatus::Hit;
      } catch (const IoError &e) {
        report.q_cache = QCacheStatus::Rejected;
        report.q_cache_message = e.what();
        report.q_seconds = seconds_since(t);
      }
    } else if (use_cache) {
      report.q_cache = QCacheStatus::Miss;
    }
    if (!toeplitz && nufft) {
      // Q by one adjoint NUFFT on the doubled grid (mri::nufft_q on the device).
      t = Clock::now();
      DeviceImage q(grid.doubled(), stream);
      {
        // exp(i 2 pi k d / n) = exp(i 2 pi (2k) d / (2n)); an axis of extent 1 has d = 0 only.
        const auto doubled_k = [&](int a) { return grid.extent(a) > 1 ? 2.0f : 0.0f; };
        const auto q_plan = mri::detail::make_device_nufft_plan(points->data(), points->size(), grid.doubled(),
                                                                nufft_options, {doubled_k(0), doubled_k(1), doubled_k(2)});
        const DeviceBuffer<cfloat> weights = q_samples(data, static_cast<cudaStream_t>(stream));
        q_plan->adjoint_device(weights.get(), q.data(), gridding);
        q_plan->synchronize();
      }
      report.q_seconds = seconds_since(t);
      toeplitz.emplace(grid, q, ToeplitzFft::Auto, stream);
    } else if (!toeplitz) {
      toeplitz.emplace(trajectory, data.weights(), grid, policy, ToeplitzFft::Auto, stream);
      report.q_seconds += toeplitz->setup().q_seconds;
    }
    if (use_cache && report.q_cache != QCacheStatus::Hit)
      mri::detail::store_q_spectrum(report, key, grid, [&] { return toeplitz->spectrum(); });
    report.fft_setup_seconds = toeplitz->setup().fft_setup_seconds;
    report.transfer_seconds += toeplitz->setup().transfer_seconds;
    toeplitz->set_regularizer(options.regularizer, options.lambda);
    report.toeplitz_fft = toeplitz->fft_note();
  }

  // Conjugate gradient on device vectors: the same template as the CPU path.
  t = Clock::now();
  ConjugateGradient<GpuNormal, DeviceImage> cg(GpuNormal{toeplitz ? &*toeplitz : nullptr,
                                                         direct_op ? &*direct_op : nullptr});
  cg.set_max_iterations(options.iterations).set_tolerance(options.tolerance);
  if (options.on_iteration)
    cg.set_callback([&](int k, const DeviceImage &x, double residual) {
      const Image host = x.to_host();
      options.on_iteration(k, host, residual);
    });
  DeviceImage x = cg.solve(rhs);
  sync(stream);
  report.cg_seconds = seconds_since(t);

  // The one transfer back.
  t = Clock::now();
  Image image = x.to_host();
  report.transfer_seconds += seconds_since(t);
  return mri::detail::finish_recon(std::move(image), std::move(report), cg, t_start);
}

} // namespace mri::cuda::detail
