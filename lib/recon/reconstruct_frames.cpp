// mri::reconstruct_frames and join_frames (mri/dynamic.hpp): the frames checked, the coils
// prepared once from all of them, then the frames' joint solve on the CPU or the CUDA backend
// (mri_backend/frames_driver.hpp on either's steps).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "mri/detail/joint_device_memory.hpp"
#include "mri/dynamic.hpp"
#include "mri/error.hpp"
#include "mri/frame_terms.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/recon_report.hpp"
#include "method_choice.hpp"
#include "recon_cpu.hpp"
#include "recon_validation.hpp"
#include "sense/recon_coils.hpp"

namespace mri {
namespace {

std::string frame_name(std::size_t f) { return "frames[" + std::to_string(f) + "]"; }

// Frames that can form one acquisition: the same dimensionality and coils, all weighted or none,
// all with sample times or none.
void check_frames_agree(const std::vector<KSpaceData> &frames) {
  if (frames.empty()) detail::invalid_argument("frames.size()", 0, "needs at least one frame");
  const KSpaceData &first = frames.front();
  for (std::size_t f = 1; f < frames.size(); ++f) {
    const KSpaceData &d = frames[f];
    if (d.coils() != first.coils())
      detail::invalid_argument(frame_name(f) + ".coils()", d.coils(),
                               "every frame has the coils of frames[0] (" + std::to_string(first.coils()) + ")");
    if (d.trajectory().dims() != first.trajectory().dims())
      detail::invalid_argument(frame_name(f) + ".trajectory().dims()", d.trajectory().dims(),
                               "every frame has the dimensionality of frames[0]");
    if (d.has_weights() != first.has_weights())
      detail::invalid_argument(frame_name(f) + ".weights().size()", d.weights().size(),
                               "all frames are weighted or none (frames[0] " +
                                   std::string(first.has_weights() ? "is" : "is not") + ")");
    if (d.has_sample_times() != first.has_sample_times())
      detail::invalid_argument(frame_name(f) + ".sample_times().size()", d.sample_times().size(),
                               "all frames have sample times or none");
  }
}

// Each frame inside [-n/2, n/2) (periodic images, as reconstruct does) and compressed as the
// coils were; the count of wrapped samples over all frames.
std::vector<KSpaceData> prepared_frames(const std::vector<KSpaceData> &frames, const Grid &grid,
                                        const detail::ReconCoils &coils, std::size_t &wrapped) {
  std::vector<KSpaceData> out;
  out.reserve(frames.size());
  wrapped = 0;
  for (const KSpaceData &d : frames) {
    const std::size_t outside = d.trajectory().check_range(grid);
    wrapped += outside;
    KSpaceData inside = outside > 0 ? KSpaceData(d.trajectory().wrapped(grid), d.samples(), d.weights(), d.coils(),
                                                 d.sample_times())
                                    : d;
    out.push_back(coils.compression ? coils.compression->apply(inside) : std::move(inside));
  }
  return out;
}

// What this build runs on frames: no field map; locally low rank on the GPU for at most
// kDeviceLowRankMaxFrames frames (mri/frame_terms.hpp), on the CPU beyond.
Backend frames_backend(const ReconOptions &o, std::size_t frames, ReconReport &report) {
  if (o.offresonance.field_map)
    throw Unsupported("reconstruct_frames: off-resonance correction (options.offresonance.field_map) is not "
                      "available for frames in this build");
  const bool low_rank = std::any_of(o.solver.terms.begin(), o.solver.terms.end(),
                                    [](const SparseTerm &t) { return t.penalty == SparsePenalty::LocallyLowRank; });
  const bool beyond_device = low_rank && frames > kDeviceLowRankMaxFrames;
  const std::string why = "locally low rank on the GPU takes at most " + std::to_string(kDeviceLowRankMaxFrames) +
                          " frames; " + std::to_string(frames) + " given";
  if (beyond_device && o.backend == Backend::Auto && o.gpu.devices.empty()) {
    report.backend_note = "auto: cpu (" + why + ")";
    return Backend::Cpu;
  }
  const Backend backend = detail::recon_backend(o);
  if (beyond_device && backend == Backend::Cuda)
    throw Unsupported("reconstruct_frames: " + why + " (cuSOLVER's batched eigensolver); use backend = cpu or auto");
  return backend;
}

} // namespace

KSpaceData join_frames(const std::vector<KSpaceData> &frames) {
  check_frames_agree(frames);
  const int coils = frames.front().coils();
  std::vector<KPoint> points;
  std::vector<float> weights, times;
  std::size_t total = 0;
  for (const KSpaceData &d : frames) {
    points.insert(points.end(), d.trajectory().points().begin(), d.trajectory().points().end());
    weights.insert(weights.end(), d.weights().begin(), d.weights().end());
    times.insert(times.end(), d.sample_times().begin(), d.sample_times().end());
    total += d.samples_per_coil();
  }
  std::vector<cfloat> samples;
  samples.reserve(total * static_cast<std::size_t>(coils));
  for (int c = 0; c < coils; ++c)
    for (const KSpaceData &d : frames) {
      const auto m = d.samples_per_coil();
      const auto begin = d.samples().begin() + static_cast<std::ptrdiff_t>(c * m);
      samples.insert(samples.end(), begin, begin + static_cast<std::ptrdiff_t>(m));
    }
  return KSpaceData(Trajectory(frames.front().trajectory().dims(), std::move(points)), std::move(samples),
                    std::move(weights), coils, std::move(times));
}

FramesResult reconstruct_frames(const std::vector<KSpaceData> &frames, const Grid &grid, const ReconOptions &options) {
  const auto t_start = std::chrono::steady_clock::now();
  check_frames_agree(frames);
  for (std::size_t f = 0; f < frames.size(); ++f) {
    try {
      detail::validate_recon(frames[f], grid, options, static_cast<int>(frames.size()));
    } catch (const InvalidArgument &e) {
      throw InvalidArgument(frame_name(f) + ": " + e.what());
    }
  }
  ReconReport report;
  const Backend backend = frames_backend(options, frames.size(), report);
  const KSpaceData all = join_frames(frames);
  std::size_t wrapped_all = 0;
  const KSpaceData all_inside = [&] {
    wrapped_all = all.trajectory().check_range(grid);
    return wrapped_all > 0 ? KSpaceData(all.trajectory().wrapped(grid), all.samples(), all.weights(), all.coils())
                           : all;
  }();
  ReconOptions resolved = options;
  MethodChoice method = detail::resolve_method(all_inside, grid, options, backend);
  resolved.method = method.method;
  report.method_note = std::move(method.note);
  // Every frame's operators are on the device at once: the whole stack checked before any of it.
  if (backend == Backend::Cuda) detail::check_frames_device_memory(frames, all.coils(), grid, resolved);
  const detail::ReconCoils coils = detail::announced_phase(resolved, "coil maps", NAN, [&] {
    return detail::prepare_coils(all_inside, grid, resolved, backend, report);
  });
  std::size_t wrapped = 0;
  const std::vector<KSpaceData> used = prepared_frames(frames, grid, coils, wrapped);
  resolved.on_iteration = nullptr; // its argument is one image (mri/dynamic.hpp)
  FramesResult r = backend == Backend::Cuda
                       ? detail::require_cuda("reconstruct_frames")
                             .reconstruct_frames(used, grid, resolved, coils.maps.get(), std::move(report), t_start)
                       : detail::reconstruct_frames_cpu(used, grid, resolved, coils.maps.get(), std::move(report),
                                                        t_start);
  r.report.wrapped_samples = wrapped;
  return r;
}

} // namespace mri
