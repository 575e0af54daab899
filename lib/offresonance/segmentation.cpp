// Time segmentation of the field term (offresonance.hpp; docs/offresonance.md):
//   exp(-2 pi i f t) = exp(-2 pi i f0 t) exp(-2 pi i (f - f0) t)
//                   ~ exp(-2 pi i f0 t) sum_l b_l(t) exp(-2 pi i (f - f0) tau_l),
// f0 the map's mid-range, tau_l uniform over the sample times, b_l(t) by Hanning windows or by the
// histogram-weighted least-squares fit of Fessler et al. (IEEE TSP 2005, eq. 14). The automatic L
// is the smallest that meets the tolerance on the stated error (TimeSegmentation::error), as
// MIRT's mri_exp_approx 'auto' mode picks the smallest L for a target.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <string>

#include "mri/error.hpp"
#include "mri/kspace.hpp"
#include "mri/offresonance.hpp"

namespace mri {
namespace {

using cdouble = std::complex<double>;
constexpr double kTwoPi = 2 * std::numbers::pi;
// The error is measured on a finer histogram than the fit's, so that the bound also covers
// field values between the fit's bins (each bin at the mean of its values).
constexpr int kErrorBins = 1024;
// Sample times the error is evaluated at: all distinct ones up to this many, else this many
// spread evenly over them in sorted order (first and last included).
constexpr std::size_t kErrorTimes = 1024;
// The automatic L's search screens each L on this many of them, then states the error of the L
// it keeps on all kErrorTimes (moving on while that misses the tolerance).
constexpr std::size_t kSearchTimes = 128;

// Non-empty bins of the map relative to f0: the mean field of each bin (Hz) and its count.
struct Histogram {
  std::vector<double> hz, count;
};

Histogram histogram(const std::vector<float> &field, double f0, double lo, double hi, int bins) {
  Histogram h;
  if (!(hi > lo)) {
    h.hz = {lo - f0};
    h.count = {static_cast<double>(field.size())};
    return h;
  }
  std::vector<double> counts(static_cast<std::size_t>(bins)), sums(static_cast<std::size_t>(bins));
  const double width = (hi - lo) / bins;
  for (float f : field) {
    const auto b = static_cast<std::size_t>(std::clamp(static_cast<int>((f - lo) / width), 0, bins - 1));
    counts[b] += 1;
    sums[b] += f;
  }
  for (std::size_t b = 0; b < counts.size(); ++b)
    if (counts[b] > 0) {
      h.hz.push_back(sums[b] / counts[b] - f0);
      h.count.push_back(counts[b]);
    }
  return h;
}

std::vector<double> uniform_centres(int segments, double t0, double t1) {
  std::vector<double> tau(static_cast<std::size_t>(segments));
  for (int l = 0; l < segments; ++l)
    tau[static_cast<std::size_t>(l)] = segments == 1 ? 0.5 * (t0 + t1) : t0 + (t1 - t0) * l / (segments - 1);
  return tau;
}

// b(t) for one interpolator: coefficients(t, b) writes L values.
class Interpolator {
public:
  Interpolator(SegmentInterpolator kind, std::vector<double> tau, const Histogram &fit) : kind_(kind), tau_(std::move(tau)) {
    if (kind_ == SegmentInterpolator::LeastSquares) fit_least_squares(fit);
  }
  int segments() const { return static_cast<int>(tau_.size()); }
  const std::vector<double> &centres() const { return tau_; }

  void coefficients(double t, cdouble *b) const {
    const int L = segments();
    if (L == 1) {
      b[0] = kind_ == SegmentInterpolator::Hanning ? 1.0 : least_squares_one(t);
      return;
    }
    if (kind_ == SegmentInterpolator::Hanning) {
      const double dtau = tau_[1] - tau_[0];
      for (int l = 0; l < L; ++l) {
        const double u = (t - tau_[static_cast<std::size_t>(l)]) / dtau;
        b[l] = std::abs(u) < 1 ? 0.5 * (1 + std::cos(std::numbers::pi * u)) : 0.0;
      }
      return;
    }
    Eigen::VectorXcd e(static_cast<Eigen::Index>(fit_hz_.size()));
    for (Eigen::Index j = 0; j < e.size(); ++j) e[j] = std::polar(1.0, -kTwoPi * fit_hz_[static_cast<std::size_t>(j)] * t);
    const Eigen::VectorXcd coef = projector_ * e;
    for (int l = 0; l < L; ++l) b[l] = coef[l];
  }

private:
  // min_b sum_j h_j |e_j(t) - sum_l A_jl b_l|^2, A_jl = exp(-2 pi i f_j tau_l): b = pinv(H^1/2 A) H^1/2 e(t).
  // Singular values below 1e-9 of the largest are dropped: columns that the histogram cannot tell
  // apart would otherwise get huge, cancelling coefficients (which amplify the NUFFT's error).
  void fit_least_squares(const Histogram &fit) {
    fit_hz_ = fit.hz;
    const auto J = static_cast<Eigen::Index>(fit.hz.size()), L = static_cast<Eigen::Index>(tau_.size());
    Eigen::MatrixXcd a(J, L);
    Eigen::VectorXd root(J);
    for (Eigen::Index j = 0; j < J; ++j) {
      root[j] = std::sqrt(fit.count[static_cast<std::size_t>(j)]);
      for (Eigen::Index l = 0; l < L; ++l)
        a(j, l) = root[j] * std::polar(1.0, -kTwoPi * fit.hz[static_cast<std::size_t>(j)] * tau_[static_cast<std::size_t>(l)]);
    }
    Eigen::JacobiSVD<Eigen::MatrixXcd> svd(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
    const Eigen::VectorXd s = svd.singularValues();
    Eigen::VectorXd inv = Eigen::VectorXd::Zero(s.size());
    for (Eigen::Index i = 0; i < s.size(); ++i)
      if (s[i] > 1e-9 * s[0]) inv[i] = 1 / s[i];
    projector_ = svd.matrixV() * inv.asDiagonal() * svd.matrixU().adjoint() * root.asDiagonal();
  }
  cdouble least_squares_one(double t) const {
    cdouble acc = 0;
    for (std::size_t j = 0; j < fit_hz_.size(); ++j) acc += projector_(0, static_cast<Eigen::Index>(j)) * std::polar(1.0, -kTwoPi * fit_hz_[j] * t);
    return acc;
  }

  SegmentInterpolator kind_;
  std::vector<double> tau_;
  std::vector<double> fit_hz_;
  Eigen::MatrixXcd projector_; // L x J
};

struct Errors {
  double rms = 0, max = 0;
};

// The stated error of `interp` over the fine histogram at the evaluation times.
Errors segmentation_error(const Interpolator &interp, const Histogram &fine, const std::vector<double> &times) {
  const int L = interp.segments();
  const std::size_t J = fine.hz.size();
  std::vector<cdouble> basis(J * static_cast<std::size_t>(L));
  for (std::size_t j = 0; j < J; ++j)
    for (int l = 0; l < L; ++l)
      basis[j * static_cast<std::size_t>(L) + static_cast<std::size_t>(l)] =
          std::polar(1.0, -kTwoPi * fine.hz[j] * interp.centres()[static_cast<std::size_t>(l)]);
  double total = 0;
  for (double c : fine.count) total += c;
  Errors worst;
#pragma omp parallel
  {
    std::vector<cdouble> b(static_cast<std::size_t>(L));
    Errors mine;
    double max2 = 0; // squared: std::norm, not std::abs (hypot) per pair
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < times.size(); ++i) {
      interp.coefficients(times[i], b.data());
      double sum = 0;
      for (std::size_t j = 0; j < J; ++j) {
        cdouble approx = 0;
        for (int l = 0; l < L; ++l) approx += b[static_cast<std::size_t>(l)] * basis[j * static_cast<std::size_t>(L) + static_cast<std::size_t>(l)];
        const double e2 = std::norm(std::polar(1.0, -kTwoPi * fine.hz[j] * times[i]) - approx);
        sum += fine.count[j] * e2;
        max2 = std::max(max2, e2);
      }
      mine.rms = std::max(mine.rms, std::sqrt(sum / total));
    }
    mine.max = std::sqrt(max2);
#pragma omp critical
    {
      worst.rms = std::max(worst.rms, mine.rms);
      worst.max = std::max(worst.max, mine.max);
    }
  }
  return worst;
}

std::vector<double> distinct_times(std::span<const float> times) {
  std::vector<double> t(times.begin(), times.end());
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

std::vector<double> evaluation_times(const std::vector<double> &distinct, std::size_t count) {
  if (distinct.size() <= count) return distinct;
  std::vector<double> t(count);
  for (std::size_t i = 0; i < count; ++i) t[i] = distinct[i * (distinct.size() - 1) / (count - 1)];
  return t;
}

void validate(const SegmentationOptions &o, std::span<const float> times) {
  if (times.empty()) detail::invalid_argument("sample_times.size()", 0, "the field map needs the samples' times");
  detail::check_sample_times(times, times.size());
  if (o.segments < 0) detail::invalid_argument("options.offresonance.segmentation.segments", o.segments, "must be >= 0 (0: automatic)");
  if (o.max_segments < 1)
    detail::invalid_argument("options.offresonance.segmentation.max_segments", o.max_segments, "must be >= 1");
  if (!(o.tolerance > 0 && o.tolerance < 1))
    detail::invalid_argument("options.offresonance.segmentation.tolerance", o.tolerance, "must be in (0, 1)");
  if (o.histogram_bins < 8 || o.histogram_bins > 4096)
    detail::invalid_argument("options.offresonance.segmentation.histogram_bins", o.histogram_bins, "must be in [8, 4096]");
}

} // namespace

TimeSegmentation segment_field(const FieldMap &field, std::span<const float> times, const SegmentationOptions &o) {
  validate(o, times);
  const double lo = field.min_hz(), hi = field.max_hz(), f0 = 0.5 * (lo + hi);
  const std::vector<double> distinct = distinct_times(times);
  const std::vector<double> eval = evaluation_times(distinct, kErrorTimes);
  const std::vector<double> screen = evaluation_times(distinct, kSearchTimes);
  const double t0 = distinct.front(), t1 = distinct.back();
  const Histogram fit = histogram(field.hz(), f0, lo, hi, o.histogram_bins);
  const Histogram fine = histogram(field.hz(), f0, lo, hi, kErrorBins);

  const auto make = [&](int L) { return Interpolator(o.interpolator, uniform_centres(L, t0, t1), fit); };
  int L = o.segments;
  Errors errors;
  if (!(hi > lo)) {
    // A uniform field is exp(-2 pi i f0 t) exactly: one segment, b = 1 (Hanning's single window),
    // E = 1, no error, whatever L was asked.
    L = 1;
  } else if (L > 0) {
    errors = segmentation_error(make(L), fine, eval);
  } else {
    // The smallest L meeting the tolerance; beyond the cap the search goes on to twice it, so that
    // the refusal can name the L needed.
    for (L = 1;; ++L) {
      const Interpolator candidate = make(L);
      if (segmentation_error(candidate, fine, screen).rms <= o.tolerance) {
        errors = segmentation_error(candidate, fine, eval);
        if (errors.rms <= o.tolerance) break;
      }
      if (L >= 2 * o.max_segments) {
        L = 2 * o.max_segments + 1;
        break;
      }
    }
    if (L > o.max_segments)
      detail::invalid_argument(
          "options.offresonance.segmentation.segments (automatic)",
          L > 2 * o.max_segments ? "more than " + std::to_string(2 * o.max_segments) : std::to_string(L),
          "needed for error " + std::to_string(o.tolerance) + " with a field range of " + std::to_string(hi - lo) +
              " Hz over " + std::to_string((t1 - t0) * 1e3) + " ms, beyond max_segments = " +
              std::to_string(o.max_segments) + " (raise it, or the tolerance)");
  }
  const Interpolator interp =
      hi > lo ? make(L) : Interpolator(SegmentInterpolator::Hanning, uniform_centres(1, t0, t1), fit);

  TimeSegmentation s;
  s.segments = L;
  s.interpolator = o.interpolator;
  s.reference_hz = f0;
  s.centres = interp.centres();
  s.error = errors.rms;
  s.max_error = errors.max;
  const std::size_t M = times.size(), N = field.hz().size(), Ls = static_cast<std::size_t>(L);
  // b at each distinct time, then gathered per sample (readouts repeat their times).
  std::vector<cdouble> at_distinct(distinct.size() * Ls);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < distinct.size(); ++i) {
    interp.coefficients(distinct[i], at_distinct.data() + i * Ls);
    const cdouble demodulation = std::polar(1.0, -kTwoPi * f0 * distinct[i]);
    for (std::size_t l = 0; l < Ls; ++l) at_distinct[i * Ls + l] *= demodulation;
  }
  s.sample_coefficients.resize(Ls * M);
#pragma omp parallel for schedule(static)
  for (std::size_t m = 0; m < M; ++m) {
    const auto i = static_cast<std::size_t>(std::lower_bound(distinct.begin(), distinct.end(), static_cast<double>(times[m])) -
                                            distinct.begin());
    for (std::size_t l = 0; l < Ls; ++l) s.sample_coefficients[l * M + m] = cfloat(at_distinct[i * Ls + l]);
  }
  s.voxel_phases.resize(Ls * N);
#pragma omp parallel for schedule(static)
  for (std::size_t x = 0; x < N; ++x)
    for (std::size_t l = 0; l < Ls; ++l)
      s.voxel_phases[l * N + x] = cfloat(std::polar(1.0, -kTwoPi * (field.hz()[x] - f0) * s.centres[l]));
  return s;
}

} // namespace mri
