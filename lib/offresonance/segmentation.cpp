// Time segmentation of the field term (offresonance.hpp; docs/offresonance.md):
//   exp(-2 pi i f t) = exp(-2 pi i f0 t) exp(-2 pi i (f - f0) t)
//                   ~ exp(-2 pi i f0 t) sum_l b_l(t) exp(-2 pi i (f - f0) tau_l),
// f0 the map's mid-range, tau_l uniform over the sample times, b_l(t) by Hanning windows or by the
// histogram-weighted least-squares fit of Fessler et al. (IEEE TSP 2005, eq. 14). The automatic L
// is the smallest that meets the tolerance on the stated error (TimeSegmentation::error), as
// MIRT's mri_exp_approx 'auto' mode picks the smallest L for a target.
#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
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
  // TimeSegmentation's fit_hz and projector (offresonance.hpp): least squares P and its bins;
  // one Hanning segment P = 1 at 0 Hz (b = 1); Hanning windows: empty.
  void describe(TimeSegmentation &s) const {
    if (kind_ == SegmentInterpolator::Hanning) {
      if (segments() == 1) s.fit_hz = {0.0}, s.projector = {cdouble(1.0)};
      return;
    }
    s.fit_hz = fit_hz_;
    s.projector.resize(static_cast<std::size_t>(projector_.size()));
    for (Eigen::Index l = 0; l < projector_.rows(); ++l)
      for (Eigen::Index j = 0; j < projector_.cols(); ++j)
        s.projector[static_cast<std::size_t>(l * projector_.cols() + j)] = projector_(l, j);
  }

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

// exp(-2 pi i f_j t_i) of the fine histogram's bins at the evaluation times (times x bins, bins
// fastest; real and imaginary parts apart, so that the error's loops over the bins vectorise): the
// same for every candidate L, so computed once per set of times.
struct Phases {
  std::vector<double> re, im;
};

Phases exact_phases(const Histogram &fine, const std::vector<double> &times) {
  const std::size_t J = fine.hz.size();
  Phases e{std::vector<double>(times.size() * J), std::vector<double>(times.size() * J)};
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < times.size(); ++i)
    for (std::size_t j = 0; j < J; ++j) {
      const cdouble v = std::polar(1.0, -kTwoPi * fine.hz[j] * times[i]);
      e.re[i * J + j] = v.real();
      e.im[i * J + j] = v.imag();
    }
  return e;
}

// The stated error of `interp` over the fine histogram at the evaluation times; exact: their
// exact_phases. approx_j(t) = sum_l b_l(t) exp(-2 pi i f_j tau_l), accumulated over l in order.
Errors segmentation_error(const Interpolator &interp, const Histogram &fine, const std::vector<double> &times,
                          const Phases &exact) {
  const int L = interp.segments();
  const std::size_t J = fine.hz.size();
  Phases basis{std::vector<double>(J * static_cast<std::size_t>(L)), std::vector<double>(J * static_cast<std::size_t>(L))};
  for (int l = 0; l < L; ++l)
    for (std::size_t j = 0; j < J; ++j) {
      const cdouble v = std::polar(1.0, -kTwoPi * fine.hz[j] * interp.centres()[static_cast<std::size_t>(l)]);
      basis.re[static_cast<std::size_t>(l) * J + j] = v.real();
      basis.im[static_cast<std::size_t>(l) * J + j] = v.imag();
    }
  double total = 0;
  for (double c : fine.count) total += c;
  Errors worst;
#pragma omp parallel
  {
    std::vector<cdouble> b(static_cast<std::size_t>(L));
    std::vector<double> ar(J), ai(J);
    Errors mine;
    double max2 = 0; // squared: the norm, not its root, per pair
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < times.size(); ++i) {
      interp.coefficients(times[i], b.data());
      std::fill(ar.begin(), ar.end(), 0.0);
      std::fill(ai.begin(), ai.end(), 0.0);
      for (int l = 0; l < L; ++l) {
        const double br = b[static_cast<std::size_t>(l)].real(), bi = b[static_cast<std::size_t>(l)].imag();
        const double *cr = basis.re.data() + static_cast<std::size_t>(l) * J, *ci = basis.im.data() + static_cast<std::size_t>(l) * J;
        for (std::size_t j = 0; j < J; ++j) {
          ar[j] += br * cr[j] - bi * ci[j];
          ai[j] += br * ci[j] + bi * cr[j];
        }
      }
      const double *er = exact.re.data() + i * J, *ei = exact.im.data() + i * J;
      double sum = 0;
      for (std::size_t j = 0; j < J; ++j) {
        const double dr = er[j] - ar[j], di = ei[j] - ai[j];
        const double e2 = dr * dr + di * di;
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

// The fit of fit_segmentation, uncached.
TimeSegmentation fit(const FieldMap &field, std::span<const float> times, const SegmentationOptions &o) {
  validate(o, times);
  const double lo = field.min_hz(), hi = field.max_hz(), f0 = 0.5 * (lo + hi);
  const std::vector<double> distinct = distinct_times(times);
  const std::vector<double> eval = evaluation_times(distinct, kErrorTimes);
  const std::vector<double> screen = evaluation_times(distinct, kSearchTimes);
  const double t0 = distinct.front(), t1 = distinct.back();
  const Histogram fit = histogram(field.hz(), f0, lo, hi, o.histogram_bins);
  const Histogram fine = histogram(field.hz(), f0, lo, hi, kErrorBins);
  Phases exact_eval, exact_screen; // made when first needed
  const auto error_at_eval = [&](const Interpolator &interp) {
    if (exact_eval.re.empty()) exact_eval = exact_phases(fine, eval);
    return segmentation_error(interp, fine, eval, exact_eval);
  };

  const auto make = [&](int L) { return Interpolator(o.interpolator, uniform_centres(L, t0, t1), fit); };
  int L = o.segments;
  Errors errors;
  if (!(hi > lo)) {
    // A uniform field is exp(-2 pi i f0 t) exactly: one segment, b = 1 (Hanning's single window),
    // E = 1, no error, whatever L was asked.
    L = 1;
  } else if (L > 0) {
    errors = error_at_eval(make(L));
  } else {
    // The smallest L meeting the tolerance; beyond the cap the search goes on to twice it, so that
    // the refusal can name the L needed.
    exact_screen = exact_phases(fine, screen);
    for (L = 1;; ++L) {
      const Interpolator candidate = make(L);
      if (segmentation_error(candidate, fine, screen, exact_screen).rms <= o.tolerance) {
        errors = error_at_eval(candidate);
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
  interp.describe(s);
  return s;
}

// A 128-bit hash of the fit's inputs (two multiply-rotate lanes over 8-byte words): the memory
// cache's key. Not a cryptographic hash: the inputs are the caller's own.
class InputHash {
public:
  template <class T> void values(std::span<const T> v) {
    word(v.size());
    const auto *p = reinterpret_cast<const unsigned char *>(v.data());
    const std::size_t bytes = v.size_bytes();
    std::size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      word(w);
    }
    std::uint64_t tail = 0;
    if (bytes > i) std::memcpy(&tail, p + i, bytes - i);
    word(tail);
  }
  void word(std::uint64_t w) {
    a_ = std::rotl((a_ ^ w) * 0x9e3779b97f4a7c15ULL, 29);
    b_ = std::rotl((b_ + w) * 0xc2b2ae3d27d4eb4fULL, 31) ^ a_;
  }
  std::array<std::uint64_t, 2> finish() const { return {a_ ^ (b_ >> 17), b_ ^ (a_ << 13)}; }

private:
  std::uint64_t a_ = 0x243f6a8885a308d3ULL, b_ = 0x13198a2e03707344ULL;
};

std::array<std::uint64_t, 2> fit_key(const FieldMap &field, std::span<const float> times, const SegmentationOptions &o) {
  InputHash h;
  for (int a = 0; a < 3; ++a) h.word(static_cast<std::uint64_t>(field.grid().extent(a)));
  h.values(std::span<const float>(field.hz()));
  h.values(times);
  h.word(static_cast<std::uint64_t>(o.interpolator));
  h.word(static_cast<std::uint64_t>(o.segments));
  h.word(std::bit_cast<std::uint64_t>(o.tolerance));
  h.word(static_cast<std::uint64_t>(o.max_segments));
  h.word(static_cast<std::uint64_t>(o.histogram_bins));
  return h.finish();
}

// The last kCachedFits fits, most recent first.
constexpr std::size_t kCachedFits = 8;
struct FitCache {
  std::mutex mutex;
  std::deque<std::pair<std::array<std::uint64_t, 2>, TimeSegmentation>> entries;
};
FitCache &fit_cache() {
  static FitCache cache;
  return cache;
}

} // namespace

TimeSegmentation fit_segmentation(const FieldMap &field, std::span<const float> times, const SegmentationOptions &o) {
  validate(o, times);
  const std::array<std::uint64_t, 2> key = fit_key(field, times, o);
  FitCache &cache = fit_cache();
  {
    const std::lock_guard lock(cache.mutex);
    for (const auto &[k, s] : cache.entries)
      if (k == key) return s;
  }
  TimeSegmentation s = mri::fit(field, times, o);
  const std::lock_guard lock(cache.mutex);
  cache.entries.emplace_front(key, s);
  if (cache.entries.size() > kCachedFits) cache.entries.pop_back();
  return s;
}

void make_segment_tables(TimeSegmentation &s, const FieldMap &field, std::span<const float> times) {
  const std::size_t Ls = static_cast<std::size_t>(s.segments), J = s.fit_hz.size();
  if (s.segments < 1 || s.centres.size() != Ls)
    detail::invalid_argument("segmentation.segments", s.segments, "must be >= 1 with one centre each (fit_segmentation)");
  if (s.projector.size() != Ls * J || (J == 0 && (s.interpolator != SegmentInterpolator::Hanning || s.segments < 2)))
    detail::invalid_argument("segmentation.projector.size()", s.projector.size(),
                             "must be segments x fit_hz.size() (fit_segmentation's)");
  if (times.empty()) detail::invalid_argument("sample_times.size()", 0, "the tables need the samples' times");
  const std::size_t M = times.size(), N = field.hz().size();
  const std::vector<double> distinct = distinct_times(times);
  // b at each distinct time, then gathered per sample (readouts repeat their times).
  std::vector<cdouble> at_distinct(distinct.size() * Ls);
#pragma omp parallel
  {
    std::vector<cdouble> e(J);
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < distinct.size(); ++i) {
      const double t = distinct[i];
      cdouble *b = at_distinct.data() + i * Ls;
      if (J > 0) {
        for (std::size_t j = 0; j < J; ++j) e[j] = s.fit_hz[j] == 0 ? cdouble(1.0) : std::polar(1.0, -kTwoPi * s.fit_hz[j] * t);
        for (std::size_t l = 0; l < Ls; ++l) {
          cdouble acc = 0;
          for (std::size_t j = 0; j < J; ++j) acc += s.projector[l * J + j] * e[j];
          b[l] = acc;
        }
      } else {
        const double dtau = s.centres[1] - s.centres[0];
        for (std::size_t l = 0; l < Ls; ++l) {
          const double u = (t - s.centres[l]) / dtau;
          b[l] = std::abs(u) < 1 ? 0.5 * (1 + std::cos(std::numbers::pi * u)) : 0.0;
        }
      }
      const cdouble demodulation = std::polar(1.0, -kTwoPi * s.reference_hz * t);
      for (std::size_t l = 0; l < Ls; ++l) b[l] *= demodulation;
    }
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
      s.voxel_phases[l * N + x] = cfloat(std::polar(1.0, -kTwoPi * (field.hz()[x] - s.reference_hz) * s.centres[l]));
}

TimeSegmentation segment_field(const FieldMap &field, std::span<const float> times, const SegmentationOptions &o) {
  TimeSegmentation s = fit_segmentation(field, times, o);
  make_segment_tables(s, field, times);
  return s;
}

} // namespace mri
