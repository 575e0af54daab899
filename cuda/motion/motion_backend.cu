// The CUDA motion backend: the shared driver (lib/interface/mri_backend/motion_driver.hpp) over
// device-resident volumes. Frames are uploaded once per call and every buffer is allocated once per
// plan; stage times are CUDA events on the plan's stream, read after the call's last download.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "mri_backend/motion_driver.hpp" // and gaussian_taps: one definition of the truncated Gaussian
#include "motion_bench.hpp"
#include "motion_multigrid.cuh"
#include "motion_ops.cuh"
#include "random_fill.cuh"
#include "staged_upload.cuh"

namespace mri {
namespace cuda::detail::motion {
namespace {

namespace dm = mri::detail::motion;

struct StreamDeleter {
  void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); }
};
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
};
// An event destroyed with its owner (moves leave null behind).
struct OwnedEvent {
  cudaEvent_t e = nullptr;
  OwnedEvent() = default;
  OwnedEvent(OwnedEvent &&o) noexcept : e(std::exchange(o.e, nullptr)) {}
  OwnedEvent &operator=(OwnedEvent &&) = delete;
  ~OwnedEvent() {
    if (e)
      cudaEventDestroy(e);
  }
};

class DeviceOps {
public:
  using Vol = DeviceVolume;

  explicit DeviceOps(const MotionOptions &o)
      : alpha_(float(o.alpha)), gamma_(float(o.gamma)), omega_(float(o.omega)),
        central_(o.derivative == MotionDerivative::Central), memory_(o.memory),
        tolerance_(o.tolerance), multigrid_options_(o.multigrid) {
    set_gaussian_taps({dm::gaussian_taps(dm::kAntiAliasStd, "anti-aliasing std"),
                       dm::gaussian_taps(o.sigma, "options.sigma"),
                       dm::gaussian_taps(o.rho, "options.rho")});
    cudaStream_t s = nullptr;
    MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    stream_.reset(s);
  }
  DeviceOps(DeviceOps &&) = default;
  ~DeviceOps() {
    for (EventPair &e : events_)
      cudaEventDestroy(e.start), cudaEventDestroy(e.stop);
  }

  Vol make(const Grid &g) const { return Vol(g); }
  // Through the plugin's pinned ring at several threads' memcpy speed (staged_upload.cuh): a
  // pageable copy runs at one thread's.
  void upload(const RealVolume &f, Vol &out) const {
    upload_staged(out.data(), f.data(), f.size() * sizeof(float), s());
  }
  // Through two pinned slots, pipelined: the DMA of chunk k + 1 runs while the host copies chunk
  // k out (a pageable copy stages through the driver's buffers at one thread's speed, the DMA and
  // the copy in turn). Volumes under one slot, or where pinning failed, take the pageable copy.
  void download(const Vol &f, RealVolume &out) {
    const std::size_t bytes = out.size() * sizeof(float);
    if (bytes < kDownloadSlotBytes || !download_slots()) {
      MRI_CUDA_CHECK(
          cudaMemcpyAsync(out.data(), f.data(), bytes, cudaMemcpyDeviceToHost, s()));
      MRI_CUDA_CHECK(cudaStreamSynchronize(s()));
      return;
    }
    const char *src = reinterpret_cast<const char *>(f.data());
    char *dst = reinterpret_cast<char *>(out.data());
    const std::size_t chunks = (bytes + kDownloadSlotBytes - 1) / kDownloadSlotBytes;
    const auto length = [&](std::size_t k) {
      return std::min(kDownloadSlotBytes, bytes - k * kDownloadSlotBytes);
    };
    const auto start = [&](std::size_t k) { // chunk k's DMA into slot k % 2
      char *slot = download_pinned_.get() + (k % 2) * kDownloadSlotBytes;
      MRI_CUDA_CHECK(cudaMemcpyAsync(slot, src + k * kDownloadSlotBytes, length(k),
                                     cudaMemcpyDeviceToHost, s()));
      MRI_CUDA_CHECK(cudaEventRecord(download_done_[k % 2].e, s()));
    };
    start(0);
    if (chunks > 1)
      start(1);
    for (std::size_t k = 0; k < chunks; ++k) {
      MRI_CUDA_CHECK(cudaEventSynchronize(download_done_[k % 2].e));
      std::memcpy(dst + k * kDownloadSlotBytes,
                  download_pinned_.get() + (k % 2) * kDownloadSlotBytes, length(k));
      if (k + 2 < chunks)
        start(k + 2); // the slot just emptied
    }
  }
  void copy(const Vol &src, Vol &dst) const {
    MRI_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.grid.voxels() * sizeof(float),
                                   cudaMemcpyDeviceToDevice, s()));
  }
  void zero(Vol &f) const {
    MRI_CUDA_CHECK(cudaMemsetAsync(f.data(), 0, f.grid.voxels() * sizeof(float), s()));
  }
  void gaussian(Vol &f, Vol &tmp, dm::Kernel k) const {
    motion::gaussian(f, tmp, static_cast<int>(k), s());
  }
  // K_rho on a warp's tensor: a launch per axis for all its channels (gaussian_channels), with a
  // scratch tensor per pyramid level, made on the level's first warp.
  void gaussian_tensor(DeviceTensor &j, int channels, dm::Kernel k) {
    DeviceTensor *tmp = nullptr;
    for (auto &[grid, scratch] : tensor_scratch_)
      if (grid == j[0].grid)
        tmp = &scratch;
    if (!tmp)
      tmp = &tensor_scratch_.emplace_back(j[0].grid, DeviceTensor{}).second;
    for (int c = 0; c < channels; ++c)
      if (!(*tmp)[c].data())
        (*tmp)[c] = DeviceVolume(j[0].grid);
    motion::gaussian_channels(j, channels, *tmp, static_cast<int>(k), s());
  }
  void resample(const Vol &f, Vol &out, float scale) const { motion::resample(f, out, scale, s()); }
  void gradients(const Vol &f, DeviceField &g) const { motion::gradients(f, g, central_, s()); }
  void warp(const Vol &f, const DeviceField &w, Vol &out) const { motion::warp(f, w, out, s()); }
  void tensor(const DeviceField &g, const Vol &fixed, const Vol &moved, DeviceTensor &j) const {
    motion::tensor(g, fixed, moved, j, s());
  }
  void fold(DeviceTensor &j, const DeviceField &w) const { motion::fold(j, w, s()); }
  void charbonnier_reweight(const DeviceTensor &data, const DeviceField &w0, const DeviceField &w,
                            DeviceTensor &j, double inv_eps2) const {
    motion::charbonnier_reweight(data, w0, w, j, float(inv_eps2), s());
  }
  void sweep(const DeviceTensor &j, const DeviceField &src, DeviceField &dst, int colour,
             int colours) const {
    motion::sweep(j, src, dst, colour, colours, alpha_, gamma_, colour < 0 ? 1.0f : omega_, memory_,
                  s());
  }

  // ||b - A w|| / ||b|| of the warp's system after a Jacobi or SOR solve (the report's
  // solver_residual, as the CPU's): one host read per solve.
  double relative_residual(const DeviceTensor &j, const DeviceField &w) {
    DeviceReduction &red = reduction(w[0].grid);
    rhs_norm2(j, red, 0, s());
    motion::residual(j, w, nullptr, alpha_, gamma_, red, 1, s());
    double sums[2];
    red.read(2, sums, s());
    return relative(sums[1], sums[0]);
  }
  // One multigrid plan per pyramid level, made on the level's first solve and reused by every
  // warp and call.
  MultigridResult multigrid(const DeviceTensor &j, DeviceField &w, int level) {
    if (multigrid_.size() <= std::size_t(level))
      multigrid_.resize(std::size_t(level) + 1);
    auto &plan = multigrid_[std::size_t(level)];
    if (!plan)
      plan = std::make_unique<DeviceMultigrid>(w[0].grid, multigrid_options_, memory_, s());
    return plan->solve(j, w, alpha_, gamma_, tolerance_);
  }

  // Events are pooled: one pair per timed stage call, reused across calls.
  template <class F> void timed(dm::Stage stage, F &&f) {
    if (used_ == events_.size()) {
      EventPair e;
      MRI_CUDA_CHECK(cudaEventCreate(&e.start));
      MRI_CUDA_CHECK(cudaEventCreate(&e.stop));
      events_.push_back(e);
    }
    const EventPair &e = events_[used_];
    stages_.push_back(stage);
    ++used_;
    MRI_CUDA_CHECK(cudaEventRecord(e.start, s()));
    f();
    MRI_CUDA_CHECK(cudaEventRecord(e.stop, s()));
  }
  void reset_timers() {
    used_ = 0;
    stages_.clear();
    ms_.fill(0);
  }
  void synchronize() {
    MRI_CUDA_CHECK(cudaStreamSynchronize(s()));
    for (std::size_t i = 0; i < used_; ++i) {
      float ms = 0;
      MRI_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i].start, events_[i].stop));
      ms_[static_cast<int>(stages_[i])] += ms;
    }
  }
  double elapsed(dm::Stage stage) const { return ms_[static_cast<int>(stage)]; }
  Backend backend() const { return Backend::Cuda; }

private:
  static constexpr std::size_t kDownloadSlotBytes = std::size_t(1) << 21; // 2 MB
  struct PinnedFree {
    void operator()(char *p) const noexcept { cudaFreeHost(p); }
  };
  // download's two slots and their events, made on the first large download (false: pinning
  // failed, pageable copies from then on).
  bool download_slots() {
    if (download_pinned_)
      return true;
    if (download_unavailable_)
      return false;
    char *p = nullptr;
    if (cudaHostAlloc(reinterpret_cast<void **>(&p), 2 * kDownloadSlotBytes, cudaHostAllocDefault) !=
        cudaSuccess) {
      cudaGetLastError(); // not sticky
      download_unavailable_ = true;
      return false;
    }
    download_pinned_.reset(p);
    for (OwnedEvent &e : download_done_)
      MRI_CUDA_CHECK(cudaEventCreateWithFlags(&e.e, cudaEventDisableTiming));
    return true;
  }

  cudaStream_t s() const { return stream_.get(); }
  // The reductions' scratch, sized for the largest level seen (the finest: made on its first
  // solve, the coarser levels' fit in it).
  DeviceReduction &reduction(const Grid &g) {
    if (g.voxels() > reduction_voxels_)
      reduction_ = DeviceReduction(g.voxels()), reduction_voxels_ = g.voxels();
    return reduction_;
  }

  float alpha_, gamma_, omega_;
  bool central_;
  MotionMemory memory_;
  double tolerance_;
  MotionMultigridOptions multigrid_options_;
  std::vector<std::unique_ptr<DeviceMultigrid>> multigrid_;
  std::vector<std::pair<Grid, DeviceTensor>> tensor_scratch_; // gaussian_tensor's, per level
  std::unique_ptr<char, PinnedFree> download_pinned_;
  std::array<OwnedEvent, 2> download_done_;
  bool download_unavailable_ = false;
  DeviceReduction reduction_;
  std::int64_t reduction_voxels_ = 0;
  std::unique_ptr<CUstream_st, StreamDeleter> stream_;
  std::vector<EventPair> events_;
  std::vector<dm::Stage> stages_;
  std::size_t used_ = 0;
  std::array<double, static_cast<int>(dm::Stage::Count)> ms_{};
};

} // namespace

double time_solver_sweep_ms(const Grid &grid, MotionMemory memory, int repeats) {
  DeviceTensor j;
  DeviceField a, b;
  unsigned seed = 1; // values in [0.5, 1.5): the sweep must not run on zeros
  const auto random_volume = [&](DeviceVolume &c) {
    c = DeviceVolume(grid);
    fill_uniform(c.data(), static_cast<std::size_t>(grid.voxels()), seed++, 0.5f, 1.5f, nullptr);
  };
  for (auto &c : j)
    random_volume(c);
  for (auto *f : {&a, &b})
    for (auto &c : *f)
      random_volume(c);
  cudaEvent_t start, stop;
  MRI_CUDA_CHECK(cudaEventCreate(&start));
  MRI_CUDA_CHECK(cudaEventCreate(&stop));
  sweep(j, a, b, -1, 2, 0.05f, 0.1f, 1.0f, memory, nullptr); // warm-up
  MRI_CUDA_CHECK(cudaEventRecord(start));
  for (int r = 0; r < repeats; ++r)
    sweep(j, r % 2 ? b : a, r % 2 ? a : b, -1, 2, 0.05f, 0.1f, 1.0f, memory, nullptr);
  MRI_CUDA_CHECK(cudaEventRecord(stop));
  MRI_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  MRI_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start), cudaEventDestroy(stop);
  return ms / repeats;
}

double solver_sweep_bytes(const Grid &grid) { return sweep_bytes(grid); }

} // namespace cuda::detail::motion

std::unique_ptr<MotionBackend> make_cuda_motion_backend(const Grid &grid,
                                                        const MotionOptions &options) {
  using Ops = cuda::detail::motion::DeviceOps;
  return std::make_unique<detail::motion::DriverBackend<Ops>>(Ops(options), grid, options);
}

} // namespace mri
