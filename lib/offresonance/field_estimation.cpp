// A field map from two echoes (offresonance.hpp, estimate_field_map): the angle of the smoothed
// complex product conj(echo1) echo2, the masked background filled by widening the box.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <string>

#include "mri/error.hpp"
#include "mri/offresonance.hpp"

namespace mri {
namespace {

using cdouble = std::complex<double>;

void check_finite(const Image &image, const char *name) {
  for (std::size_t i = 0; i < image.size(); ++i)
    if (!std::isfinite(image[i].real()) || !std::isfinite(image[i].imag()))
      detail::invalid_argument(std::string(name) + "[" + std::to_string(i) + "]", image[i], "must be finite");
}

// Sum of v over the box of half-width r around every voxel (clamped at the edges), separably.
std::vector<cdouble> box_sum(const Grid &g, std::vector<cdouble> v, int r) {
  std::vector<cdouble> out(v.size());
  for (int axis = 0; axis < 3; ++axis) {
    const std::int64_t n = g.extent(axis);
    if (n == 1 || r == 0) continue;
    const std::int64_t stride = axis == 0 ? 1 : axis == 1 ? g.nx() : g.nx() * g.ny();
    const std::int64_t lines = g.voxels() / n;
#pragma omp parallel for schedule(static)
    for (std::int64_t line = 0; line < lines; ++line) {
      // the line's first voxel: `line` enumerates the other two axes in index order
      const std::int64_t inner = line % stride, outer = line / stride;
      const std::int64_t base = inner + outer * stride * n;
      for (std::int64_t i = 0; i < n; ++i) {
        cdouble acc = 0;
        for (std::int64_t j = std::max<std::int64_t>(0, i - r); j <= std::min(n - 1, i + r); ++j) acc += v[static_cast<std::size_t>(base + j * stride)];
        out[static_cast<std::size_t>(base + i * stride)] = acc;
      }
    }
    v.swap(out);
  }
  return v;
}

} // namespace

FieldMap estimate_field_map(const Image &echo1, const Image &echo2, double delta_te, const FieldMapEstimation &o) {
  const Grid &g = echo1.grid();
  if (echo2.grid() != g)
    detail::invalid_argument("echo2.grid().voxels()", echo2.grid().voxels(),
                             "must be echo1's grid (" + std::to_string(g.voxels()) + " voxels)");
  check_finite(echo1, "echo1");
  check_finite(echo2, "echo2");
  if (!(delta_te > 0) || !std::isfinite(delta_te)) detail::invalid_argument("delta_te", delta_te, "must be finite and > 0 (seconds)");
  if (!(o.mask >= 0 && o.mask < 1)) detail::invalid_argument("options.mask", o.mask, "must be in [0, 1)");
  if (o.smooth < 0 || o.smooth > 16) detail::invalid_argument("options.smooth", o.smooth, "must be in [0, 16]");
  double peak = 0;
  for (const cfloat v : echo1.values()) peak = std::max(peak, static_cast<double>(std::abs(v)));
  const double threshold = o.mask * peak;
  const auto N = static_cast<std::size_t>(g.voxels());
  std::vector<cdouble> product(N);
  std::vector<bool> signal(N);
  std::size_t inside = 0;
  for (std::size_t i = 0; i < N; ++i) {
    signal[i] = peak > 0 && std::abs(echo1[i]) >= threshold;
    if (signal[i]) {
      product[i] = std::conj(cdouble(echo1[i])) * cdouble(echo2[i]);
      ++inside;
    }
  }
  if (inside == 0) detail::invalid_argument("echo1", "no voxel above the mask", "needs signal (max |echo1| = " + std::to_string(peak) + ")");
  std::vector<cdouble> smoothed = box_sum(g, product, o.smooth);
  // Voxels whose box holds no signal: the box widened (doubling) until it does.
  std::vector<bool> done(N);
  std::size_t missing = 0;
  for (std::size_t i = 0; i < N; ++i) missing += !(done[i] = std::abs(smoothed[i]) > 0);
  const std::int64_t widest = std::max({g.nx(), g.ny(), g.nz()});
  for (std::int64_t r = std::max(2 * o.smooth, 1); missing > 0 && r <= 2 * widest; r *= 2) {
    const std::vector<cdouble> wide = box_sum(g, product, static_cast<int>(r));
    for (std::size_t i = 0; i < N; ++i)
      if (!done[i] && std::abs(wide[i]) > 0) {
        smoothed[i] = wide[i];
        done[i] = true;
        --missing;
      }
  }
  std::vector<float> hz(N);
  const double scale = -1.0 / (2 * std::numbers::pi * delta_te);
  for (std::size_t i = 0; i < N; ++i) hz[i] = static_cast<float>(scale * std::arg(smoothed[i]));
  return FieldMap(g, std::move(hz));
}

} // namespace mri
