// CoilSensitivities (the maps as a validated value) and root-sum-of-squares coil combination.
#include <cmath>
#include <string>

#include "mri/coils.hpp"
#include "mri/error.hpp"

namespace mri {

CoilSensitivities::CoilSensitivities(const Grid &grid, int coils, std::vector<cfloat> maps)
    : grid_(grid), coils_(coils), maps_(std::move(maps)) {
  if (coils < 1) detail::invalid_argument("coils", coils, "must be >= 1");
  const std::size_t n = voxels();
  if (maps_.size() != n * static_cast<std::size_t>(coils))
    detail::invalid_argument("maps.size()", maps_.size(),
                             "must equal coils * grid.voxels() = " + std::to_string(n * static_cast<std::size_t>(coils)));
  for (std::size_t i = 0; i < maps_.size(); ++i)
    if (!std::isfinite(maps_[i].real()) || !std::isfinite(maps_[i].imag()))
      detail::invalid_argument("maps[coil " + std::to_string(i / n) + ", voxel " + std::to_string(i % n) + "]",
                               maps_[i], "must be finite");
}

std::span<const cfloat> CoilSensitivities::map(int c) const {
  if (c < 0 || c >= coils_) detail::invalid_argument("coil", c, "must be in [0, " + std::to_string(coils_) + ")");
  return std::span<const cfloat>(maps_).subspan(static_cast<std::size_t>(c) * voxels(), voxels());
}

namespace {
// sqrt(sum over the `count` arrays at stride `n` of |v|^2), accumulated in double.
Image rss(const Grid &grid, const cfloat *values, std::size_t n, int count) {
  Image out(grid);
  for (std::size_t i = 0; i < n; ++i) {
    double s = 0;
    for (int c = 0; c < count; ++c) s += std::norm(cdouble(values[static_cast<std::size_t>(c) * n + i]));
    out[i] = cfloat(static_cast<float>(std::sqrt(s)), 0.0f);
  }
  return out;
}
} // namespace

Image CoilSensitivities::root_sum_of_squares() const { return rss(grid_, maps_.data(), voxels(), coils_); }

Image root_sum_of_squares(std::span<const Image> coil_images) {
  if (coil_images.empty()) detail::invalid_argument("coil_images.size()", 0, "needs at least one image");
  const Grid &grid = coil_images[0].grid();
  std::vector<cfloat> stacked;
  stacked.reserve(coil_images.size() * coil_images[0].size());
  for (std::size_t c = 0; c < coil_images.size(); ++c) {
    if (coil_images[c].grid() != grid)
      detail::invalid_argument("coil_images[" + std::to_string(c) + "].grid().voxels()", coil_images[c].grid().voxels(),
                               "every coil image must be on the first one's grid");
    stacked.insert(stacked.end(), coil_images[c].values().begin(), coil_images[c].values().end());
  }
  return rss(grid, stacked.data(), coil_images[0].size(), static_cast<int>(coil_images.size()));
}

} // namespace mri
