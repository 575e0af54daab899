// The Kaiser-Bessel gridding kernel: Beatty's shape parameter, the closed-form Fourier
// transform used for deapodization, the width chosen per tolerance, and the piecewise
// polynomial the gridding loops evaluate.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <string>

#include "mri/error.hpp"
#include "mri/nufft.hpp"
#include "nufft_plan.hpp"

namespace mri {
namespace {

constexpr double kPi = std::numbers::pi;

double bessel_i0(double x) { return std::cyl_bessel_i(0.0, x); }

} // namespace

const char *to_string(Gridding g) {
  switch (g) {
  case Gridding::Auto: return "auto";
  case Gridding::Scatter: return "scatter";
  case Gridding::Gather: return "gather";
  }
  return "?";
}

double KaiserBessel::beatty_beta(int width, double oversampling) {
  const double a = static_cast<double>(width) / oversampling * (oversampling - 0.5);
  return kPi * std::sqrt(a * a - 0.8);
}

KaiserBessel KaiserBessel::make(int width, double oversampling) {
  if (width < kMinWidth || width > kMaxWidth)
    detail::invalid_argument("width", width, "must be in [2, 16]");
  if (!(oversampling >= 1.25 && oversampling <= 4.0))
    detail::invalid_argument("oversampling", oversampling, "must be in [1.25, 4]");
  return {width, oversampling, beatty_beta(width, oversampling)};
}

// Width per tolerance at oversampling 2. Measured (`mri_tests "[.nufft-table]"`, random
// points and data, 2D 48x40 and 3D 16x14x12, adjoint and forward, worst of 3 seeds), the
// relative L2 error against the exact float64 sums is 0.77 .. 0.80 x 10^-(W-1) for W = 2..8
// with Beatty's beta: W = 3 -> 7.5e-3, 4 -> 7.7e-4, 5 -> 7.9e-5, 6 -> 7.9e-6, 7 -> 8.0e-7.
// So the plan takes the smallest W with 10^-(W-1) <= tolerance (table in docs/performance.md).
KaiserBessel KaiserBessel::for_tolerance(double tolerance) {
  if (!(tolerance >= kNufftMinTolerance && tolerance <= kNufftMaxTolerance)) {
    std::ostringstream os;
    os << "must be in [" << kNufftMinTolerance << ", " << kNufftMaxTolerance << "]";
    detail::invalid_argument("tolerance", tolerance, os.str());
  }
  int w = 2;
  while (w < kMaxWidth && std::pow(10.0, -(w - 1)) > tolerance * (1 + 1e-9)) ++w;
  return make(w, 2.0);
}

double KaiserBessel::operator()(double u) const {
  const double v = 2.0 * u / width;
  if (std::abs(v) > 1.0) return 0.0;
  return bessel_i0(beta * std::sqrt(1.0 - v * v)) / bessel_i0(beta);
}

double KaiserBessel::fourier(double xi) const {
  const double a = kPi * width * xi;
  const double q = beta * beta - a * a;
  double r;
  if (q > 1e-12) {
    const double sq = std::sqrt(q);
    r = std::sinh(sq) / sq;
  } else if (q < -1e-12) {
    const double sq = std::sqrt(-q);
    r = std::sin(sq) / sq;
  } else {
    r = 1.0;
  }
  return width * r / bessel_i0(beta);
}

namespace detail {

KernelPolynomial fit_kernel(const KaiserBessel &kernel, double accuracy) {
  const int W = kernel.width;
  const double norm = 1.0 / bessel_i0(kernel.beta);
  auto kb = [&](double u) {
    const double v = 2.0 * u / W;
    return std::abs(v) > 1.0 ? 0.0 : bessel_i0(kernel.beta * std::sqrt(1.0 - v * v)) * norm;
  };
  KernelPolynomial best;
  // The error falls about tenfold per degree; start near the answer.
  for (int degree = std::max(3, W - 1); degree <= 24; ++degree) {
    const int n = degree + 1;
    KernelPolynomial p;
    p.width = W;
    p.degree = degree;
    p.coef.assign(static_cast<std::size_t>(n * W), 0.0);
    // Chebyshev interpolation at the n Chebyshev points of s in [-1, 1] (z = (s + 1) / 2),
    // then the Chebyshev series converted to monomials in s.
    for (int i = 0; i < W; ++i) {
      std::vector<double> f(static_cast<std::size_t>(n)), cheb(static_cast<std::size_t>(n));
      for (int j = 0; j < n; ++j) {
        const double s = std::cos(kPi * (j + 0.5) / n);
        f[static_cast<std::size_t>(j)] = kb((s + 1.0) / 2.0 - W / 2.0 + i);
      }
      for (int k = 0; k < n; ++k) {
        double sum = 0;
        for (int j = 0; j < n; ++j) sum += f[static_cast<std::size_t>(j)] * std::cos(kPi * k * (j + 0.5) / n);
        cheb[static_cast<std::size_t>(k)] = (k == 0 ? 1.0 : 2.0) * sum / n;
      }
      // Monomial coefficients of T_k: T_0 = 1, T_1 = s, T_{k+1} = 2 s T_k - T_{k-1}.
      std::vector<std::vector<double>> T(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(n), 0.0));
      T[0][0] = 1.0;
      if (n > 1) T[1][1] = 1.0;
      for (int k = 2; k < n; ++k)
        for (int d = 0; d < n; ++d)
          T[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)] =
              (d > 0 ? 2.0 * T[static_cast<std::size_t>(k - 1)][static_cast<std::size_t>(d - 1)] : 0.0) -
              T[static_cast<std::size_t>(k - 2)][static_cast<std::size_t>(d)];
      for (int k = 0; k < n; ++k)
        for (int d = 0; d < n; ++d)
          p.coef[static_cast<std::size_t>(d * W + i)] +=
              cheb[static_cast<std::size_t>(k)] * T[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
    }
    // Max error over a dense set, evaluating as the gridding loops do (Horner in double).
    double err = 0;
    for (int j = 0; j <= 256; ++j) {
      const double s = -1.0 + 2.0 * j / 256.0;
      for (int i = 0; i < W; ++i) {
        double v = p.coef[static_cast<std::size_t>(degree * W + i)];
        for (int d = degree - 1; d >= 0; --d) v = v * s + p.coef[static_cast<std::size_t>(d * W + i)];
        err = std::max(err, std::abs(v - kb((s + 1.0) / 2.0 - W / 2.0 + i)));
      }
    }
    p.max_error = err;
    best = std::move(p);
    if (err <= accuracy) break;
  }
  return best;
}

} // namespace detail
} // namespace mri
