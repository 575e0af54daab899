// The data scaling of a sparse reconstruction (mri/reconstruct.hpp's DataScaling) and the data
// term's constant the proximal solver's objective includes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "mri/reconstruct.hpp"
#include "mri_backend/recon_driver.hpp"

namespace mri {

const char *to_string(DataScaling s) { return s == DataScaling::Bart ? "bart" : "none"; }

// BART's rule for the adjoint image's magnitudes (pics, estimate_scaling_norm): the median, the
// 90th percentile and the maximum; the reference is the 90th percentile unless the maximum stands
// out (max - p90 >= 2 (p90 - median): a few bright voxels), then the maximum. BART's adjoint image
// is ours / sqrt(N) (its F is unitary, ours F_bart sqrt(N), N voxels), so the data are multiplied
// by sqrt(N) / reference: BART's factor. The image's bulk is then of order 1 whatever the
// scanner's units, and lambda means the same on every data set.
double bart_data_scale(std::span<const cfloat> adjoint_image) {
  if (adjoint_image.empty()) return 1.0;
  std::vector<float> magnitude(adjoint_image.size());
  std::transform(adjoint_image.begin(), adjoint_image.end(), magnitude.begin(), [](cfloat v) { return std::abs(v); });
  const auto nth = [&](std::size_t k) {
    std::nth_element(magnitude.begin(), magnitude.begin() + static_cast<std::ptrdiff_t>(k), magnitude.end());
    return static_cast<double>(magnitude[k]);
  };
  const std::size_t n = magnitude.size();
  const double median = nth(n / 2), p90 = nth(n - 1 - n / 10), max = nth(n - 1);
  const double reference = (max - p90) < 2 * (p90 - median) ? p90 : max;
  return reference > 0 && std::isfinite(reference) ? std::sqrt(static_cast<double>(n)) / reference : 1.0;
}

namespace detail {

double weighted_data_energy(const KSpaceData &data) {
  const std::size_t m = data.samples_per_coil();
  const std::span<const float> w = data.weights();
  double energy = 0;
  for (int c = 0; c < data.coils(); ++c)
    for (std::size_t i = 0; i < m; ++i)
      energy += (w.empty() ? 1.0 : w[i]) * std::norm(std::complex<double>(data.samples()[c * m + i]));
  return 0.5 * energy;
}

} // namespace detail
} // namespace mri
