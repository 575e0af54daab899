// Sorting a continuous acquisition into frames (include/mri/frames.hpp): time frames, amplitude
// bins of a gating signal, and the split of the data into one KSpaceData per frame.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "mri/bart.hpp"
#include "mri/error.hpp"
#include "mri/frames.hpp"
#include "dynamic/orientation.hpp"

namespace mri {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

void require_finite_signal(std::span<const double> signal, const std::string &name) {
  for (std::size_t i = 0; i < signal.size(); ++i)
    if (!std::isfinite(signal[i]))
      detail::invalid_argument(name + "[" + std::to_string(i) + "]", signal[i], "must be finite");
  const auto [lo, hi] = std::minmax_element(signal.begin(), signal.end());
  if (signal.empty() || *lo == *hi)
    detail::invalid_argument(name, signal.empty() ? 0.0 : *lo,
                             "is constant: it cannot order readouts by breathing state");
}

void count_frames(FrameBinning &b) {
  b.readouts_per_frame.clear();
  for (const auto &f : b.frames) b.readouts_per_frame.push_back(static_cast<std::int64_t>(f.size()));
}

std::vector<double> read_text_column(const std::filesystem::path &path) {
  std::ifstream in(path);
  if (!in) throw IoError("cannot read gating signal " + path.string());
  std::vector<double> values;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    double v;
    if (!(fields >> v)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue; // blank or comment
      throw IoError(path.string() + ":" + std::to_string(number) + ": not a number: " + line);
    }
    values.push_back(v);
  }
  return values;
}

bool is_cfl(const std::filesystem::path &path) {
  const std::string ext = path.extension().string();
  if (ext == ".cfl" || ext == ".hdr") return true;
  std::filesystem::path hdr = path;
  hdr += ".hdr";
  return ext.empty() && std::filesystem::exists(hdr);
}

} // namespace

std::int64_t readout_count(const KSpaceData &data, const ReadoutLayout &layout) {
  const auto m = static_cast<std::int64_t>(data.samples_per_coil());
  if (layout.samples_per_readout <= 0 || m % layout.samples_per_readout != 0)
    detail::invalid_argument("layout.samples_per_readout", layout.samples_per_readout,
                             "must be positive and divide the trajectory's " + str(m) + " samples");
  if (!(layout.readout_seconds > 0) || !std::isfinite(layout.readout_seconds))
    detail::invalid_argument("layout.readout_seconds", layout.readout_seconds, "must be positive and finite");
  const std::int64_t readouts = m / layout.samples_per_readout;
  if (!layout.times.empty()) {
    if (static_cast<std::int64_t>(layout.times.size()) != readouts)
      detail::invalid_argument("layout.times.size()", layout.times.size(), "must equal the readouts, " + str(readouts));
    for (std::size_t r = 0; r < layout.times.size(); ++r)
      if (!std::isfinite(layout.times[r]) || (r > 0 && layout.times[r] < layout.times[r - 1]))
        detail::invalid_argument("layout.times[" + std::to_string(r) + "]", layout.times[r],
                                 "must be finite and not before the previous readout's");
  }
  return readouts;
}

ReadoutLayout layout_from_time_stamps(int samples_per_readout, std::span<const std::uint32_t> stamps, double tick_seconds) {
  if (!(tick_seconds > 0) || !std::isfinite(tick_seconds))
    detail::invalid_argument("tick_seconds", tick_seconds, "must be positive and finite");
  if (stamps.size() < 2 || stamps.back() <= stamps.front())
    detail::invalid_argument("stamps.size()", stamps.size(), "needs at least 2 stamps, the last after the first");
  ReadoutLayout layout;
  layout.samples_per_readout = samples_per_readout;
  for (std::size_t r = 0; r < stamps.size(); ++r) {
    if (r > 0 && stamps[r] < stamps[r - 1])
      detail::invalid_argument("stamps[" + std::to_string(r) + "]", stamps[r], "goes back in time");
    layout.times.push_back(static_cast<double>(stamps[r] - stamps.front()) * tick_seconds);
  }
  layout.readout_seconds = layout.times.back() / static_cast<double>(stamps.size() - 1);
  return layout;
}

FrameBinning bin_by_time(std::int64_t readouts, std::int64_t readouts_per_frame, std::int64_t step) {
  if (readouts_per_frame < kMinReadoutsPerFrame || readouts_per_frame > readouts)
    detail::invalid_argument("readouts_per_frame", readouts_per_frame,
                             "must be at least " + str(kMinReadoutsPerFrame) + " and at most the " + str(readouts) +
                                 " readouts");
  if (step < 0 || step > readouts_per_frame)
    detail::invalid_argument("step", step,
                             "must be in [0, readouts_per_frame = " + str(readouts_per_frame) +
                                 "] (0: disjoint frames; larger would drop the readouts between frames)");
  if (step == 0) step = readouts_per_frame;
  FrameBinning b;
  b.method = BinningMethod::Time;
  b.source = "time";
  const std::int64_t frames = (readouts - readouts_per_frame) / step + 1;
  for (std::int64_t f = 0; f < frames; ++f) {
    std::vector<std::int64_t> frame(static_cast<std::size_t>(readouts_per_frame));
    std::iota(frame.begin(), frame.end(), f * step);
    b.frames.push_back(std::move(frame));
  }
  const std::int64_t end = (frames - 1) * step + readouts_per_frame;
  for (std::int64_t r = end; r < readouts; ++r) b.unassigned.push_back(r);
  count_frames(b);
  b.note = str(frames) + " time frames of " + str(readouts_per_frame) + " readouts every " + str(step);
  if (!b.unassigned.empty())
    b.note += "; the last " + str(static_cast<std::int64_t>(b.unassigned.size())) +
              " readouts fill no frame and are left out";
  return b;
}

FrameBinning bin_by_amplitude(std::span<const double> signal, int bins, Expiration expiration) {
  require_finite_signal(signal, "signal");
  const auto readouts = static_cast<std::int64_t>(signal.size());
  if (bins < 1 || readouts / bins < kMinReadoutsPerFrame)
    detail::invalid_argument("bins", bins,
                             "must be at least 1 and leave at least " + str(kMinReadoutsPerFrame) +
                                 " readouts per bin (" + str(readouts) + " readouts)");
  const detail::SignalOrientation o = detail::orient_signal(signal, expiration);
  FrameBinning b;
  b.method = BinningMethod::Amplitude;
  b.flipped = o.flip;
  b.signal.assign(signal.begin(), signal.end());
  if (o.flip)
    for (double &v : b.signal) v = -v;
  // Equal counts: readouts ordered by (value, time); bin k takes ranks [k R / B, (k + 1) R / B).
  std::vector<std::int64_t> order(static_cast<std::size_t>(readouts));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t c) {
    return b.signal[static_cast<std::size_t>(a)] < b.signal[static_cast<std::size_t>(c)];
  });
  const auto rank_start = [&](std::int64_t k) { return static_cast<std::size_t>(k * readouts / bins); };
  const auto value_at_rank = [&](std::size_t i) { return b.signal[static_cast<std::size_t>(order[i])]; };
  b.bin_edges.push_back(value_at_rank(0));
  for (int k = 0; k < bins; ++k) {
    std::vector<std::int64_t> frame(order.begin() + static_cast<std::ptrdiff_t>(rank_start(k)),
                                    order.begin() + static_cast<std::ptrdiff_t>(rank_start(k + 1)));
    std::sort(frame.begin(), frame.end());
    b.frames.push_back(std::move(frame));
    const std::size_t next = rank_start(k + 1);
    b.bin_edges.push_back(k + 1 == bins ? value_at_rank(next - 1) : 0.5 * (value_at_rank(next - 1) + value_at_rank(next)));
  }
  count_frames(b);
  b.note = std::to_string(bins) + " amplitude bins of equal counts, bin 0 at end-expiration; " + o.why;
  return b;
}

FrameBinning bin_by_amplitude(const GatingSignal &signal, int bins, Expiration expiration) {
  FrameBinning b = bin_by_amplitude(std::span<const double>(signal.values), bins, expiration);
  b.source = signal.source;
  if (!signal.note.empty()) b.note = signal.note + "; " + b.note;
  return b;
}

GatingSignal gating_signal(std::vector<double> values, std::int64_t readouts, const std::string &name) {
  if (static_cast<std::int64_t>(values.size()) != readouts)
    detail::invalid_argument(name + ".size()", values.size(), "must equal the readouts, " + str(readouts));
  require_finite_signal(values, name);
  GatingSignal g;
  g.values = std::move(values);
  g.source = name;
  return g;
}

GatingSignal read_gating_signal(const std::filesystem::path &path, std::int64_t readouts) {
  std::vector<double> values;
  if (is_cfl(path)) {
    std::filesystem::path base = path;
    if (path.extension() == ".cfl" || path.extension() == ".hdr") base.replace_extension();
    for (const cfloat &v : bart::read_cfl(base).data) values.push_back(v.real());
  } else {
    values = read_text_column(path);
  }
  return gating_signal(std::move(values), readouts, path.string());
}

std::vector<KSpaceData> split_frames(const KSpaceData &data, const ReadoutLayout &layout, const FrameBinning &binning) {
  const std::int64_t readouts = readout_count(data, layout);
  const auto s = static_cast<std::size_t>(layout.samples_per_readout);
  const std::size_t m = data.samples_per_coil();
  const auto coils = static_cast<std::size_t>(data.coils());
  std::vector<KSpaceData> out;
  for (std::size_t f = 0; f < binning.frames.size(); ++f) {
    const auto &frame = binning.frames[f];
    if (frame.empty())
      detail::invalid_argument("binning.frames[" + std::to_string(f) + "].size()", 0, "a frame needs readouts");
    const std::size_t mf = frame.size() * s;
    std::vector<KPoint> points(mf);
    std::vector<cfloat> samples(mf * coils);
    std::vector<float> weights(data.has_weights() ? mf : 0), times(data.has_sample_times() ? mf : 0);
    for (std::size_t i = 0; i < frame.size(); ++i) {
      const std::int64_t r = frame[i];
      if (r < 0 || r >= readouts)
        detail::invalid_argument("binning.frames[" + std::to_string(f) + "][" + std::to_string(i) + "]", r,
                                 "must name a readout in [0, " + str(readouts) + ")");
      const std::size_t src = static_cast<std::size_t>(r) * s, dst = i * s;
      std::copy_n(data.trajectory().points().begin() + static_cast<std::ptrdiff_t>(src), s, points.begin() + static_cast<std::ptrdiff_t>(dst));
      for (std::size_t c = 0; c < coils; ++c)
        std::copy_n(data.samples().begin() + static_cast<std::ptrdiff_t>(c * m + src), s,
                    samples.begin() + static_cast<std::ptrdiff_t>(c * mf + dst));
      if (!weights.empty()) std::copy_n(data.weights().begin() + static_cast<std::ptrdiff_t>(src), s, weights.begin() + static_cast<std::ptrdiff_t>(dst));
      if (!times.empty()) std::copy_n(data.sample_times().begin() + static_cast<std::ptrdiff_t>(src), s, times.begin() + static_cast<std::ptrdiff_t>(dst));
    }
    out.emplace_back(Trajectory(data.trajectory().dims(), std::move(points)), std::move(samples), std::move(weights),
                     data.coils(), std::move(times));
  }
  return out;
}

FrameBinning plan_frames(const KSpaceData &data, const ReadoutLayout &layout, const FrameRequest &request,
                         std::span<const double> header_signal) {
  const std::int64_t readouts = readout_count(data, layout);
  if ((request.bins > 0) == (request.frames_readouts > 0))
    detail::invalid_argument("request.bins", request.bins,
                             "give either amplitude bins (bins > 0) or time frames (frames_readouts = " +
                                 str(request.frames_readouts) + " > 0), one of them");
  if (request.frames_readouts > 0) return bin_by_time(readouts, request.frames_readouts, request.frames_step);
  GatingSignal signal;
  if (request.gating == "self") {
    signal = self_gating_signal(data, layout, request.self_gating);
    if (!signal.breathing_peak_found && request.fall_back_to_time) {
      FrameBinning b = bin_by_time(readouts, readouts / request.bins);
      b.note = signal.note + "; fell back to " + b.note + " (as asked)";
      return b;
    }
  } else if (request.gating == "header") {
    if (header_signal.empty())
      detail::invalid_argument("header_signal.size()", 0, "gating 'header' needs the file's physiology signal");
    signal = gating_signal(std::vector<double>(header_signal.begin(), header_signal.end()), readouts, "header");
  } else {
    signal = read_gating_signal(request.gating, readouts);
  }
  return bin_by_amplitude(signal, request.bins, request.expiration);
}

} // namespace mri
