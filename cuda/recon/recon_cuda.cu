// mri::reconstruct on the GPU: every phase on the device, one transfer of the image back.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>

#include "sense/coil_split.hpp"
#include "sense/coil_split_fhd.hpp"
#include "cuda_check.cuh"
#include "device_image.hpp"
#include "devices/device_slabs.hpp"
#include "exact/fhd_plan.cuh"
#include "nufft/gridding_cuda.hpp"
#include "host_clock.hpp"
#include "mri/error.hpp"
#include "mri/toeplitz_cache.hpp"
#include "mri_backend/frames_driver.hpp"
#include "mri_backend/normal_assembly.hpp"
#include "mri_backend/recon_driver.hpp"
#include "mri_backend/sense.hpp"
#include "recon_cuda.hpp"
#include "recon/device_products.hpp"
#include "sense/sense_cuda.hpp"
#include "sense/sense_toeplitz.hpp"
#include "sparse/llr_cuda.hpp" // FrameTermOps' locally low rank on device frames
#include "sparse/sparse_ops_cuda.hpp"
#include "staged_upload.cuh"
#include "toeplitz/toeplitz_cuda.hpp"

namespace mri::cuda::detail {
namespace {

// The gridding of the reconstruction's adjoints (F^H D, Q's weights, the direct normal operator).
// Auto is the gather here, not ScatterFixed as for a NufftOperator: its integer grid (16 B an
// oversampled point) would add 2 GiB to the plan of Q on RECON-3D's doubled grid, for adjoints
// that run once per reconstruction in the Toeplitz form.
Gridding recon_gridding(Gridding asked) { return asked == Gridding::Auto ? Gridding::Gather : asked; }

std::string gib(std::size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB (%zu bytes)", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0),
                bytes);
  return buf;
}

std::string extents(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

// w .* D of every coil on the host (without weights: none, the samples go up as they are).
std::vector<cfloat> host_weighted_samples(const KSpaceData &data) {
  return data.has_weights() ? data.weighted_samples() : std::vector<cfloat>{};
}

// Coil c's M weighted samples (host_weighted_samples, or the data's own when unweighted).
const cfloat *coil_samples(const KSpaceData &data, const std::vector<cfloat> &weighted, int c) {
  return (data.has_weights() ? weighted.data() : data.samples().data()) +
         static_cast<std::size_t>(c) * data.samples_per_coil();
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

// f(), its wall time added to `seconds`; returns what f returns.
template <class F> decltype(auto) timed(double &seconds, F &&f) {
  struct Add {
    double &seconds;
    Clock::time_point t0 = Clock::now();
    ~Add() { seconds += seconds_since(t0); }
  } add{seconds};
  return f();
}

// One GPU reconstruction: the steps of mri_backend/recon_driver.hpp on device images (each step
// ends synchronised; transfers and plans go to their own report fields).
class GpuSteps {
public:
  using Vec = DeviceImage;

  GpuSteps(const KSpaceData &data, const Grid &grid, const ReconOptions &options, const CoilSensitivities *maps,
           ReconReport &report)
      : data_(data), maps_(maps), trajectory_(data.trajectory()), grid_(grid), options_(options),
        direct_(options.solver.normal == Normal::Direct), nufft_(options.method == Method::Nufft),
        // float32: the fastest accurate policy; float64: SeparableGemm (sums in double, results
        // rounded to the float32 the CG works in, as the CPU's float64 path rounds its Q and F^H D).
        policy_(resolve_policy(options.gpu.policy, options.precision)),
        // Q: float32 passes the policy as asked (Auto: the tensor-core Dirichlet spectrum in 3D,
        // cuda/toeplitz/toeplitz_cuda.cu), float64 the resolved one (SeparableGemm sums in double).
        q_policy_(options.precision == Precision::Float32 ? options.gpu.policy : policy_),
        nufft_options_(mri::detail::recon_nufft_options(options, Backend::Cuda)),
        gridding_(recon_gridding(options.nufft.gridding)),
        report_(report), devices_(recon_devices(options.gpu.devices)) {
    report_.backend = Backend::Cuda;
    if (report_.device_seconds.empty()) // frames share one report: one entry per device
      for (const int d : devices_) report_.device_seconds.push_back({d, 0, 0});
  }

  // The memory need, before anything is allocated; then the maps up.
  void prepare(bool q_cached) {
    check_memory(q_cached);
    stream_ = default_stream();
    if (maps_)
      timed(report_.transfer_seconds,
            [&] { coils_.emplace(*maps_, options_.solver.regularizer, options_.solver.lambda, stream_); });
  }

  DeviceImage rhs() {
    if (!nufft_) return rhs_by_exact_sum();
    if (coils_ && devices_.size() > 1) return rhs_by_nufft_split();
    const double timed_fhd = report_.fhd_seconds;
    DeviceImage rhs = rhs_by_nufft();
    report_.device_seconds.front().fhd_seconds += report_.fhd_seconds - timed_fhd; // its adjoint NUFFTs
    note_unsplit("F^H D", "the NUFFT");
    return rhs;
  }

  void make_direct() {
    if (nufft_)
      direct_op_.emplace(nufft_plan_, gridding_, data_.weights(), grid_, trajectory_.size());
    else
      direct_op_.emplace(trajectory_, data_.weights(), grid_, policy_, options_.precision, stream_);
    note_unsplit("normal = direct", "F and F^H in every CG iteration");
  }

  // The Toeplitz operator from Q: by the NUFFT on the doubled grid, or the exact sum (3D Auto:
  // the tensor-core Dirichlet spectrum).
  void compute_q() {
    nufft_plan_.reset(); // its oversampled grid is not needed any more
    if (!nufft_ && devices_.size() > 1)
      return q_sum_splits(grid_, q_policy_) ? toeplitz_q_by_slabs() : toeplitz_spectrum_by_slabs();
    const double timed_q = report_.q_seconds;
    if (nufft_)
      toeplitz_q_by_nufft();
    else
      toeplitz_.emplace(trajectory_, data_.weights(), grid_, q_policy_, ToeplitzFft::Auto, stream_);
    finish_toeplitz();
    // Q on the first device alone: its sum's seconds (the Toeplitz operator's, or the NUFFT's)
    report_.device_seconds.front().q_seconds += toeplitz_->setup().q_seconds + (report_.q_seconds - timed_q);
    note_unsplit("Q", nufft_ ? "the NUFFT" : report_.q_method);
  }
  // The Toeplitz operator compute_q made, handed over (device_products_cuda).
  QOperator take_toeplitz() { return std::move(*toeplitz_); }
  void load_spectrum(std::span<const float> spectrum) {
    nufft_plan_.reset();
    toeplitz_.emplace(grid_, spectrum, ToeplitzFft::Auto, stream_);
    finish_toeplitz();
    note_unsplit("Q", "the cache's spectrum");
  }
  std::vector<float> spectrum() const { return toeplitz_->spectrum(); }

  // The CG's operator (mri_backend/normal_assembly.hpp): the Toeplitz form or the direct normal,
  // its regulariser fused in; with SENSE the coil-batched Toeplitz operator where it applies, else
  // the maps composed around the one-coil operator.
  template <class F> ReconResult with_normal(const DeviceImage &like, F &&f) {
    if (devices_.size() > 1 && coils_ && toeplitz_) return with_coil_split(std::forward<F>(f));
    if (!coils_) note_unsplit("CG", "one coil");
    if (const int batch = coils_ && toeplitz_ ? sense_coil_batch(grid_, coils_->count()) : 0; batch > 0) {
      SenseToeplitz batched = timed(report_.fft_setup_seconds, [&] { return SenseToeplitz(*coils_, *toeplitz_, batch); });
      report_.toeplitz_fft = "unfused, " + std::to_string(batch) + " coils per batched transform";
      return f(mri::normal_equations(std::move(batched)));
    }
    const auto assemble = [&](auto data_normal) {
      return mri::detail::with_reconstruction_normal(coils_, data_normal, options_.solver.regularizer,
                                                     options_.solver.lambda, grid_, like, f);
    };
    return toeplitz_ ? assemble(mri::ref(*toeplitz_)) : assemble(mri::ref(*direct_op_));
  }

  // SENSE with the coils split over the devices (coil_split.hpp); the report gets each device's
  // share of the iterations and the exchange's seconds.
  template <class F> ReconResult with_coil_split(F &&f) {
    const std::shared_ptr<const CoilLanes> &lanes = coil_lanes(); // its own setup seconds
    const CoilSplitNormal split =
        timed(report_.setup_seconds, [&] { return CoilSplitNormal(lanes, *coils_, *toeplitz_); });
    note("CG: " + split.describe());
    ReconResult r = f(mri::normal_equations(mri::ref(split)));
    const CoilSplitNormal::Times t = split.times();
    for (std::size_t i = 0; i < t.device_seconds.size(); ++i) r.report.device_seconds[i].cg_seconds = t.device_seconds[i];
    r.report.exchange_seconds = t.exchange_seconds;
    return r;
  }

  void synchronize() const { MRI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_))); }
  Image to_host(const DeviceImage &x) const { return x.to_host(); }
  const CoilSensitivities *maps() const { return maps_; }

private:
  // What the Toeplitz operator's construction spent outside Q, and the regulariser.
  void finish_toeplitz() {
    report_.fft_setup_seconds += toeplitz_->setup().fft_setup_seconds;
    report_.transfer_seconds += toeplitz_->setup().transfer_seconds;
    report_.toeplitz_fft = toeplitz_->fft_note();
    report_.q_method = toeplitz_->q_path();
  }

  // rhs = F^H (w .* D), or sum_c conj(S_c) .* F^H (w .* D_c); `fhd(c0, count, images)` writes
  // the F^H of coils c0 .. c0 + count - 1 (count <= block) into `images`, one after another.
  template <class BlockFhd> void accumulate_rhs(DeviceImage &rhs, int block, BlockFhd &&fhd) {
    if (!coils_) return fhd(0, 1, rhs.data());
    const std::size_t n = static_cast<std::size_t>(grid_.voxels());
    DeviceBuffer<cfloat> images = timed(report_.setup_seconds, [&] { return DeviceBuffer<cfloat>(block * n); });
    // the combines on rhs's stream (the reconstruction's), each waited for before the plan's
    // stream overwrites what it reads
    combine_coil_adjoints(CoilRange{&*coils_, {0, coils_->count()}}, block, images.get(), rhs, fhd);
  }

  // Coils c0 .. c0 + count - 1: their weighted samples up into `samples` (staged, on `stream`).
  void upload_coils(const std::vector<cfloat> &weighted, int c0, int count, DeviceBuffer<cfloat> &samples,
                    void *stream) {
    timed(report_.transfer_seconds, [&] {
      upload_staged(samples.get(), coil_samples(data_, weighted, c0), count * trajectory_.size() * sizeof(cfloat),
                    static_cast<cudaStream_t>(stream));
    });
  }

  void check_memory(bool q_cached) {
    const DeviceBytes need =
        reconstruct_device_bytes(grid_, trajectory_.size(), direct_, q_cached, nufft_, maps_ ? maps_->coils() : 0,
                                 nufft_ ? 1 : exact_coils_per_pass(), gridding_ == Gridding::ScatterFixed);
    report_.device_bytes = need.peak();
    const DeviceMemory memory = device_memory();
    std::size_t available = memory.free;
    if (options_.gpu.memory_limit > 0) available = std::min(available, options_.gpu.memory_limit);
    if (need.peak() > available)
      throw Unsupported("reconstruct on the GPU: grid " + extents(grid_) + " (Toeplitz grid " +
                        extents(grid_.doubled()) + "), M = " + std::to_string(trajectory_.size()) +
                        (maps_ ? ", " + std::to_string(maps_->coils()) + " coils" : std::string()) +
                        ", solver.normal = " + to_string(options_.solver.normal) +
                        ", method = " + to_string(options_.method) + " needs about " + gib(need.peak()) + " of device memory (F^H D phase " + gib(need.fhd) +
                        ", Q phase " + gib(need.q) + ", CG phase " + gib(need.cg) + "); available: " +
                        gib(available) + " (free " + gib(memory.free) + " of " + gib(memory.total) +
                        (options_.gpu.memory_limit > 0 ? ", gpu.memory_limit " + gib(options_.gpu.memory_limit) : "") +
                        ")");
  }

  // Coils per exact F^H D call: those the policy evaluates together (SeparableGemm: up to 8 as
  // more columns of one GEMM, each phase once), or 1.
  int exact_coils_per_pass() const {
    return maps_ ? std::min(maps_->coils(), FhdPlan::coils_per_pass(policy_, grid_.voxels())) : 1;
  }

  // F^H (w .* D) by the exact sum, exact_coils_per_pass() coils per call, split by voxel slabs
  // over the devices (one slab, the whole grid, on one device).
  DeviceImage rhs_by_exact_sum() {
    const int block = exact_coils_per_pass();
    auto [slabs, rhs, samples] = timed(report_.setup_seconds, [&] {
      return std::tuple{std::make_unique<SlabAdjoint>(trajectory_, grid_, grid_, devices_), DeviceImage(grid_, stream_),
                        DeviceBuffer<cfloat>(block * trajectory_.size())};
    });
    const std::vector<cfloat> weighted = host_weighted_samples(data_);
    std::vector<double> seconds(devices_.size());
    accumulate_rhs(rhs, block, [&](int c0, int count, cfloat *images) {
      upload_coils(weighted, c0, count, samples, stream_);
      slabs->adjoint_coils(policy_, samples.get(), count, images, stream_, seconds);
    });
    for (std::size_t i = 0; i < seconds.size(); ++i) report_.device_seconds[i].fhd_seconds += seconds[i];
    note("F^H D: " + describe(slabs->slabs()));
    return std::move(rhs);
  }

  // Q's half-grid sum split by voxel slabs over the devices, completed on the first one, its
  // spectrum there (the same q_method as one device's: the same sum).
  void toeplitz_q_by_slabs() {
    std::vector<double> seconds(devices_.size());
    SlabQ q = slab_q(trajectory_, data_.weights(), grid_, q_policy_, devices_, stream_, seconds);
    toeplitz_.emplace(grid_, q.q, ToeplitzFft::Auto, stream_);
    finish_toeplitz();
    report_.q_method = std::string("q-sum/") + mri::to_string(q_policy_) + " + fft";
    for (std::size_t i = 0; i < seconds.size(); ++i) report_.device_seconds[i].q_seconds += seconds[i];
    note("Q: its half grid's " + describe(q.slabs));
  }

  // Q's spectrum by the tensor-core Dirichlet sum (3D, policy Auto), its planes split over the
  // devices, gathered on the host and uploaded to the first device (as a cached spectrum is).
  void toeplitz_spectrum_by_slabs() {
    std::vector<double> seconds(devices_.size());
    SlabSpectrum k = slab_dirichlet_spectrum(trajectory_, data_.weights(), grid_, devices_, seconds);
    toeplitz_.emplace(grid_, k.spectrum, ToeplitzFft::Auto, stream_);
    finish_toeplitz();
    report_.q_method = "dirichlet-tensor-cores"; // the one device's path, as it names it
    for (std::size_t i = 0; i < seconds.size(); ++i) report_.device_seconds[i].q_seconds += seconds[i];
    note("Q: dirichlet-tensor-cores, its spectrum's " + describe(k.slabs));
  }

  // ReconReport::device_note, one clause per phase.
  void note(const std::string &clause) {
    report_.device_note += (report_.device_note.empty() ? "" : "; ") + clause;
  }
  // A phase that ran on the first device alone (said only when more devices were listed).
  void note_unsplit(const char *phase, const std::string &how) {
    if (devices_.size() > 1)
      note(std::string(phase) + ": " + how + ", not split: on device " + std::to_string(devices_.front()));
  }

  // F^H (w .* D) by one adjoint NUFFT per coil; k goes up once for this plan and Q's, and the
  // plan stays for the direct normal operator.
  DeviceImage rhs_by_nufft() {
    DeviceImage rhs = make_nufft_plan();
    const std::vector<cfloat> weighted = host_weighted_samples(data_);
    const int block = coils_ ? NufftDevicePlan::kCoilBlock : 1; // coils per gridding pass
    DeviceBuffer<cfloat> samples(block * trajectory_.size());
    accumulate_rhs(rhs, block, [&](int c0, int count, cfloat *images) {
      upload_coils(weighted, c0, count, samples, nufft_plan_->stream());
      timed(report_.fhd_seconds, [&] {
        nufft_plan_->adjoint_coils_device(samples.get(), count, images, gridding_);
        nufft_plan_->synchronize(); // the samples are reused next
      });
    });
    return rhs;
  }

  // k up once (for this plan, Q's and the split's other devices), the first device's plan of the
  // grid, and the rhs image.
  DeviceImage make_nufft_plan() {
    timed(report_.transfer_seconds, [&] { points_.emplace(trajectory_); });
    return timed(report_.setup_seconds, [&] {
      nufft_plan_ = make_device_nufft_plan(points_->data(), points_->size(), grid_, nufft_options_, {1, 1, 1});
      return DeviceImage(grid_, stream_);
    });
  }

  // SENSE's F^H D by the NUFFT with the coils split over the devices (coil_split_fhd.hpp): each
  // entry uploads its coils' samples and grids them on a plan of its own device; the partial sums
  // are added on the first device. Each entry's coil uploads are part of its F^H D seconds (they
  // run beside the other entries' work), so the phase's transfer_seconds does not hold them.
  DeviceImage rhs_by_nufft_split() {
    DeviceImage rhs = make_nufft_plan();
    const std::shared_ptr<const CoilLanes> &lanes = coil_lanes(); // its own setup seconds
    const CoilSplitFhd split = timed(report_.setup_seconds, [&] {
      return CoilSplitFhd(lanes, *coils_, nufft_plan_, *points_, grid_, nufft_options_);
    });
    const std::vector<cfloat> weighted = host_weighted_samples(data_);
    std::vector<double> seconds(devices_.size());
    split.apply(coil_samples(data_, weighted, 0), gridding_, rhs, seconds);
    for (std::size_t i = 0; i < seconds.size(); ++i) report_.device_seconds[i].fhd_seconds += seconds[i];
    note("F^H D: the NUFFT, " + split.describe());
    return rhs;
  }

  // The coils' blocks over the devices, their streams and exchange (coil_split.hpp), made once for
  // the split F^H D and the split CG (NCCL's communicators once).
  const std::shared_ptr<const CoilLanes> &coil_lanes() {
    if (!lanes_)
      lanes_ = timed(report_.setup_seconds, [&] {
        return std::make_shared<const CoilLanes>(coils_->count(), devices_, stream_, grid_);
      });
    return lanes_;
  }

  // Q by one adjoint NUFFT on the doubled grid (mri::nufft_q on the device), from the k already
  // uploaded: exp(i 2 pi k d / n) = exp(i 2 pi (2k) d / (2n)); an axis of extent 1 has d = 0 only.
  void toeplitz_q_by_nufft() {
    DeviceImage q = timed(report_.q_seconds, [&] {
      DeviceImage out(grid_.doubled(), stream_);
      const auto doubled_k = [&](int a) { return grid_.extent(a) > 1 ? 2.0f : 0.0f; };
      const auto q_plan = make_device_nufft_plan(points_->data(), points_->size(), grid_.doubled(),
                                                              nufft_options_, {doubled_k(0), doubled_k(1), doubled_k(2)});
      const DeviceBuffer<cfloat> weights = q_samples(data_, static_cast<cudaStream_t>(stream_));
      q_plan->adjoint_device(weights.get(), out.data(), gridding_);
      q_plan->synchronize();
      return out;
    });
    toeplitz_.emplace(grid_, q, ToeplitzFft::Auto, stream_);
  }

  const KSpaceData &data_;
  const CoilSensitivities *maps_;
  const Trajectory &trajectory_;
  const Grid grid_;
  const ReconOptions &options_;
  const bool direct_, nufft_;
  const KernelPolicy policy_;
  const KernelPolicy q_policy_;
  const NufftOptions nufft_options_;
  const Gridding gridding_;
  ReconReport &report_;
  StreamHandle stream_ = nullptr;
  std::optional<DevicePoints> points_;
  std::shared_ptr<NufftDevicePlan> nufft_plan_;
  std::optional<QOperator> toeplitz_;
  std::optional<DirectNormalOperator> direct_op_;
  std::optional<DeviceCoils> coils_;
  const std::vector<int> devices_; // ReconOptions::gpu.devices checked, or the current device
  std::shared_ptr<const CoilLanes> lanes_; // the coil split's, made at its first use
};

} // namespace

ReconResult reconstruct_cuda(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                             const CoilSensitivities *maps, ReconReport report, Clock::time_point t_start) {
  GpuSteps steps(data, grid, options, maps, report);
  return mri::detail::drive_reconstruction(steps, data, grid, options, report, t_start);
}

DeviceProducts device_products_cuda(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                                    const CoilSensitivities *maps, ReconReport &report) {
  GpuSteps steps(data, grid, options, maps, report);
  steps.prepare(false);
  DeviceImage rhs = steps.rhs();
  steps.compute_q();
  steps.synchronize();
  return {std::move(rhs), steps.take_toeplitz()};
}

FramesResult reconstruct_frames_cuda(const std::vector<KSpaceData> &frames, const Grid &grid,
                                     const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                     Clock::time_point t_start) {
  std::deque<GpuSteps> steps;
  for (const KSpaceData &frame : frames) steps.emplace_back(frame, grid, options, maps, report);
  return mri::detail::drive_frames(steps, frames, grid, options, report, t_start);
}

} // namespace mri::cuda::detail
