#include "mri/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mri/error.hpp"

namespace mri {
namespace {

void check_same_grid(const Image &a, const Image &b) {
  if (a.grid() != b.grid())
    detail::invalid_argument("image.grid().voxels()", a.grid().voxels(),
                             "differs from the reference grid's " + std::to_string(b.grid().voxels()));
}

double squared_error(const Image &a, const Image &b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::norm(cdouble(a[i]) - cdouble(b[i]));
  return s;
}

} // namespace

double psnr(const Image &image, const Image &reference) {
  check_same_grid(image, reference);
  double peak = 0;
  for (const cfloat &v : reference.values()) peak = std::max(peak, double(std::abs(v)));
  const double mse = squared_error(image, reference) / static_cast<double>(image.size());
  if (mse == 0) return std::numeric_limits<double>::infinity();
  return 20 * std::log10(peak / std::sqrt(mse));
}

double relative_l2(const Image &image, const Image &reference) {
  check_same_grid(image, reference);
  double ref = 0;
  for (const cfloat &v : reference.values()) ref += std::norm(cdouble(v));
  return std::sqrt(squared_error(image, reference) / ref);
}

cfloat best_scale(const Image &image, const Image &reference) {
  check_same_grid(image, reference);
  cdouble num = 0;
  double den = 0;
  for (std::size_t i = 0; i < image.size(); ++i) {
    num += std::conj(cdouble(image[i])) * cdouble(reference[i]);
    den += std::norm(cdouble(image[i]));
  }
  if (den == 0) return 0;
  return cfloat(num / den);
}

} // namespace mri
