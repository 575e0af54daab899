#include "mri/vector_ops.hpp"

#include <cmath>
#include <algorithm>

#include "mri/conjugate_gradient.hpp"

namespace mri {
namespace {
std::int64_t length(const Image &v) { return static_cast<std::int64_t>(v.size()); }
// Below this many values a vector operation runs on the calling thread: an OpenMP team's fork and
// barrier cost more than the loop, and far more when other processes hold the cores (the team's
// threads spin in the barrier waiting for a descheduled one).
constexpr std::int64_t kParallelValues = 1 << 15;
} // namespace

void VectorOps<Image>::copy(const Image &from, Image &to) {
  if (to.grid() != from.grid()) to = Image(from.grid());
  std::copy(from.values().begin(), from.values().end(), to.values().begin());
}

std::complex<double> VectorOps<Image>::dot(const Image &a, const Image &b) {
  double re = 0, im = 0;
  const cfloat *pa = a.data(), *pb = b.data();
#pragma omp parallel for reduction(+ : re, im) schedule(static) if (length(a) > kParallelValues)
  for (std::int64_t i = 0; i < length(a); ++i) {
    const double ar = pa[i].real(), ai = pa[i].imag(), br = pb[i].real(), bi = pb[i].imag();
    re += ar * br + ai * bi;
    im += ar * bi - ai * br;
  }
  return {re, im};
}

double VectorOps<Image>::norm2(const Image &a) {
  double s = 0;
  const cfloat *p = a.data();
#pragma omp parallel for reduction(+ : s) schedule(static) if (length(a) > kParallelValues)
  for (std::int64_t i = 0; i < length(a); ++i)
    s += double(p[i].real()) * p[i].real() + double(p[i].imag()) * p[i].imag();
  return s;
}

void VectorOps<Image>::axpy(std::complex<double> alpha, const Image &x, Image &y) {
  const cfloat a(static_cast<float>(alpha.real()), static_cast<float>(alpha.imag()));
  const cfloat *px = x.data();
  cfloat *py = y.data();
#pragma omp parallel for schedule(static) if (length(x) > kParallelValues)
  for (std::int64_t i = 0; i < length(x); ++i) py[i] += a * px[i];
}

void VectorOps<Image>::xpay(const Image &x, std::complex<double> beta, Image &y) {
  const cfloat b(static_cast<float>(beta.real()), static_cast<float>(beta.imag()));
  const cfloat *px = x.data();
  cfloat *py = y.data();
#pragma omp parallel for schedule(static) if (length(x) > kParallelValues)
  for (std::int64_t i = 0; i < length(x); ++i) py[i] = px[i] + b * py[i];
}

void VectorOps<Image>::zero(Image &v) { std::fill(v.values().begin(), v.values().end(), cfloat{}); }

bool VectorOps<Image>::all_finite(const Image &v) {
  for (const cfloat &c : v.values())
    if (!std::isfinite(c.real()) || !std::isfinite(c.imag())) return false;
  return true;
}

const char *to_string(CgStatus s) {
  switch (s) {
  case CgStatus::NotRun: return "not-run";
  case CgStatus::Converged: return "converged";
  case CgStatus::MaxIterations: return "max-iterations";
  case CgStatus::NonFinite: return "non-finite";
  case CgStatus::Breakdown: return "breakdown";
  }
  return "?";
}

} // namespace mri
