// Self-gating: the respiratory signal from the k-space centre of every readout
// (include/mri/frames.hpp, self_gating_signal; XD-GRASP, Feng et al., MRM 75:775 (2016)).
#include <algorithm>
#include <cmath>
#include <complex>
#include <map>
#include <numbers>
#include <sstream>
#include <tuple>
#include <vector>

#include <Eigen/Dense>

#include "dynamic/orientation.hpp"
#include "fft/fftw_adapter.hpp"
#include "mri/error.hpp"
#include "mri/frames.hpp"

namespace mri {
namespace {

constexpr double kPi = std::numbers::pi;
using Features = Eigen::MatrixXd; // readouts x (2 coils): real and imaginary parts

// In-place complex DFT of one line (FFTW, double; the planner under its lock).
void dft(std::vector<cdouble> &line, int sign) {
  using F = detail::Fftw<double>;
  const int n = static_cast<int>(line.size());
  cdouble *buffer = F::alloc(line.size());
  F::plan plan;
  {
    std::lock_guard lock(detail::fftw_planner_mutex());
    plan = F::make(1, &n, buffer, sign, 1);
  }
  std::copy(line.begin(), line.end(), buffer);
  F::execute(plan);
  std::copy(buffer, buffer + n, line.begin());
  {
    std::lock_guard lock(detail::fftw_planner_mutex());
    F::destroy(plan);
  }
  F::free(buffer);
}

// Frequency (Hz) of DFT bin i of a length-n transform sampled every dt seconds.
double bin_hz(std::size_t i, std::size_t n, double dt) {
  const double j = i <= n / 2 ? static_cast<double>(i) : static_cast<double>(i) - static_cast<double>(n);
  return std::abs(j) / (static_cast<double>(n) * dt);
}

// The band-pass's response: 1 on [low, high], raised-cosine edges down to low / 2 and up to
// 1.5 high (a smooth edge rings less than a brick wall in time), 0 elsewhere.
double band_response(double f, const SelfGatingOptions &o) {
  const auto rise = [](double t) { return std::sin(0.5 * kPi * std::clamp(t, 0.0, 1.0)) * std::sin(0.5 * kPi * std::clamp(t, 0.0, 1.0)); };
  if (f < o.low_hz) return o.low_hz > 0 ? rise((f - 0.5 * o.low_hz) / (0.5 * o.low_hz)) : 1.0;
  if (f > o.high_hz) return rise(1.0 - (f - o.high_hz) / (0.5 * o.high_hz));
  return 1.0;
}

// Band-passes one column: the signal extended by its mirror image (periodic without a jump, so
// the edges do not ring), filtered in the frequency domain, the first half kept.
void band_pass(Eigen::Ref<Eigen::VectorXd> x, double dt, const SelfGatingOptions &o) {
  const auto r = static_cast<std::size_t>(x.size());
  std::vector<cdouble> line(2 * r);
  for (std::size_t i = 0; i < r; ++i) line[i] = line[2 * r - 1 - i] = x(static_cast<Eigen::Index>(i));
  dft(line, FFTW_FORWARD);
  for (std::size_t i = 0; i < line.size(); ++i) line[i] *= band_response(bin_hz(i, line.size(), dt), o);
  dft(line, FFTW_BACKWARD);
  for (std::size_t i = 0; i < r; ++i) x(static_cast<Eigen::Index>(i)) = line[i].real() / static_cast<double>(line.size());
}

// The centre sample (nearest k = 0) of every readout, all coils, as 2C real features, less the
// mean of the readouts that share its centre position (a stack of stars' partitions differ).
Features centre_features(const KSpaceData &data, std::int64_t readouts, int s) {
  const std::size_t m = data.samples_per_coil();
  const int coils = data.coils();
  Features f(readouts, 2 * coils);
  std::map<std::tuple<long, long, long>, std::vector<std::int64_t>> groups;
  for (std::int64_t r = 0; r < readouts; ++r) {
    std::size_t centre = static_cast<std::size_t>(r) * static_cast<std::size_t>(s);
    double nearest = INFINITY;
    for (int j = 0; j < s; ++j) {
      const KPoint &k = data.trajectory()[static_cast<std::size_t>(r * s + j)];
      const double k2 = double(k.kx) * k.kx + double(k.ky) * k.ky + double(k.kz) * k.kz;
      if (k2 < nearest) nearest = k2, centre = static_cast<std::size_t>(r * s + j);
    }
    for (int c = 0; c < coils; ++c) {
      const cfloat v = data.samples()[static_cast<std::size_t>(c) * m + centre];
      f(r, 2 * c) = v.real();
      f(r, 2 * c + 1) = v.imag();
    }
    const KPoint &k = data.trajectory()[centre];
    groups[{std::lround(k.kx * 1e3), std::lround(k.ky * 1e3), std::lround(k.kz * 1e3)}].push_back(r);
  }
  for (const auto &[key, members] : groups) {
    Eigen::RowVectorXd mean = Eigen::RowVectorXd::Zero(f.cols());
    for (std::int64_t r : members) mean += f.row(r);
    mean /= static_cast<double>(members.size());
    for (std::int64_t r : members) f.row(r) -= mean;
  }
  return f;
}

Eigen::VectorXd leading_component(const Features &f) {
  const Eigen::MatrixXd covariance = f.transpose() * f;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(covariance);
  return eigen.eigenvectors().col(eigen.eigenvectors().cols() - 1);
}

// The principal component over half-overlapping windows of w readouts: each window's projection
// signed to agree with what the earlier windows gave on the overlap, blended with Hann weights.
Eigen::VectorXd sliding_component(const Features &f, std::int64_t w) {
  const std::int64_t r = f.rows();
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(r), weight = Eigen::VectorXd::Zero(r);
  std::vector<std::int64_t> starts;
  for (std::int64_t start = 0; start + w < r; start += w / 2) starts.push_back(start);
  starts.push_back(r - w);
  for (std::int64_t start : starts) {
    Eigen::VectorXd p = f.middleRows(start, w) * leading_component(f.middleRows(start, w));
    double agreement = 0;
    for (std::int64_t i = 0; i < w; ++i)
      if (weight(start + i) > 0) agreement += p(i) * sum(start + i) / weight(start + i);
    if (agreement < 0) p = -p;
    for (std::int64_t i = 0; i < w; ++i) {
      // Hann weights, floored so the record's first and last readouts keep a weight.
      const double h = std::sin(kPi * (static_cast<double>(i) + 0.5) / static_cast<double>(w));
      sum(start + i) += (h * h + 1e-3) * p(i);
      weight(start + i) += h * h + 1e-3;
    }
  }
  return sum.cwiseQuotient(weight);
}

struct Peak {
  bool found = false;
  double hz = 0, ratio = 0;
  std::string note;
};

// The breathing peak of a signal: the largest Hann-tapered periodogram value in the band against
// the median above the band's upper edge (1.5 high_hz, where the band-pass is zero).
Peak breathing_peak(const Eigen::VectorXd &q, double dt, const SelfGatingOptions &o) {
  const auto r = static_cast<std::size_t>(q.size());
  std::vector<cdouble> line(2 * r, 0.0); // zero-padded: finer bins
  const double mean = q.mean();
  for (std::size_t i = 0; i < r; ++i) {
    const double h = std::sin(kPi * (static_cast<double>(i) + 0.5) / static_cast<double>(r));
    line[i] = h * h * (q(static_cast<Eigen::Index>(i)) - mean);
  }
  dft(line, FFTW_FORWARD);
  Peak peak;
  double best = 0;
  std::vector<double> above;
  for (std::size_t i = 1; i <= line.size() / 2; ++i) {
    const double f = bin_hz(i, line.size(), dt), power = std::norm(line[i]);
    if (f >= o.low_hz && f <= o.high_hz && power > best) best = power, peak.hz = f;
    if (f > 1.5 * o.high_hz) above.push_back(power);
  }
  std::ostringstream note;
  note.precision(3);
  if (above.empty()) {
    note << "self-gating: no spectrum above the breathing band (TR too long) to judge a peak against";
    peak.note = note.str();
    return peak;
  }
  std::nth_element(above.begin(), above.begin() + static_cast<std::ptrdiff_t>(above.size() / 2), above.end());
  const double floor = std::max(above[above.size() / 2], 1e-30 * best);
  peak.ratio = best > 0 ? best / floor : 0;
  peak.found = peak.ratio >= o.peak_ratio;
  if (peak.found)
    note << "self-gating: breathing peak at " << peak.hz << " Hz (" << 60 * peak.hz << " per minute), "
         << peak.ratio << " times the spectrum above the band";
  else
    note << "self-gating: no breathing peak in [" << o.low_hz << ", " << o.high_hz << "] Hz: the strongest is "
         << peak.ratio << " times the spectrum above the band (a peak needs " << o.peak_ratio
         << "); the signal may not follow breathing";
  peak.note = note.str();
  return peak;
}

void check_options(const SelfGatingOptions &o, double dt) {
  const double nyquist = 0.5 / dt;
  if (!(o.low_hz >= 0) || !std::isfinite(o.low_hz))
    detail::invalid_argument("options.low_hz", o.low_hz, "must be finite and >= 0");
  if (!(o.high_hz > o.low_hz) || !(o.high_hz < nyquist))
    detail::invalid_argument("options.high_hz", o.high_hz,
                             "must lie above low_hz and below the Nyquist frequency 1 / (2 TR) = " + std::to_string(nyquist) + " Hz");
  if (!(o.window_seconds > 0) || !std::isfinite(o.window_seconds))
    detail::invalid_argument("options.window_seconds", o.window_seconds, "must be positive and finite");
  if (!(o.peak_ratio > 0) || !std::isfinite(o.peak_ratio))
    detail::invalid_argument("options.peak_ratio", o.peak_ratio, "must be positive and finite");
}

} // namespace

GatingSignal self_gating_signal(const KSpaceData &data, const ReadoutLayout &layout, const SelfGatingOptions &options) {
  const std::int64_t readouts = readout_count(data, layout);
  if (readouts < 2 * kMinReadoutsPerFrame)
    detail::invalid_argument("data readouts", readouts, "self-gating needs at least " + std::to_string(2 * kMinReadoutsPerFrame));
  // Uneven times: the mean interval (the band-pass assumes even sampling).
  const double dt = layout.times.empty() || layout.times.back() <= layout.times.front()
                        ? layout.readout_seconds
                        : (layout.times.back() - layout.times.front()) / static_cast<double>(readouts - 1);
  check_options(options, dt);
  const Features raw = centre_features(data, readouts, layout.samples_per_readout);
  Features filtered = raw;
  for (Eigen::Index c = 0; c < filtered.cols(); ++c) band_pass(filtered.col(c), dt, options);
  const auto window = std::clamp<std::int64_t>(std::llround(options.window_seconds / dt), 2 * kMinReadoutsPerFrame, readouts);
  const Eigen::VectorXd component = sliding_component(filtered, window);
  // The peak is judged on the unfiltered features' projection (the filter would hide the floor).
  const Peak peak = breathing_peak(raw * leading_component(filtered), dt, options);

  GatingSignal g;
  g.source = "self-gating";
  g.values.assign(component.data(), component.data() + component.size());
  const detail::SignalOrientation o = detail::orient_signal(g.values, Expiration::Auto);
  if (o.flip)
    for (double &v : g.values) v = -v;
  g.breathing_peak_found = peak.found;
  g.peak_hz = peak.hz;
  g.peak_ratio = peak.ratio;
  g.note = peak.note;
  return g;
}

} // namespace mri
