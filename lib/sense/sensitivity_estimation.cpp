// Coil maps from the centre of k-space (BART's `caldir`, made for non-Cartesian samples): low-
// resolution coil images by an adjoint NUFFT of the tapered calibration samples, divided by their
// root-sum-of-squares.
#include <algorithm>
#include <string>

#include "calibration.hpp"
#include "espirit.hpp"
#include "mri/coils.hpp"
#include "mri/error.hpp"
#include "mri/nufft.hpp"

namespace mri {

namespace {

std::int64_t smallest_extent(const Grid &grid) {
  std::int64_t smallest = 0;
  for (int a = 0; a < grid.dims(); ++a)
    smallest = smallest == 0 ? grid.extent(a) : std::min(smallest, grid.extent(a));
  return smallest;
}

// Checks the options; returns them with the calibration width resolved (0: auto).
SensitivityOptions checked_options(SensitivityOptions o, const Grid &grid) {
  const std::int64_t smallest = smallest_extent(grid);
  if (o.calibration != 0 && (o.calibration < 4 || o.calibration > smallest))
    detail::invalid_argument("sensitivity.calibration", o.calibration,
                             "must be 0 (auto) or in [4, the grid's smallest extent " + std::to_string(smallest) + "]");
  if (smallest < 4)
    detail::invalid_argument("grid's smallest extent", smallest, "must be >= 4 to estimate maps");
  o.calibration = detail::calibration_width(o, grid);
  if (!(o.mask_threshold >= 0 && o.mask_threshold < 1))
    detail::invalid_argument("sensitivity.mask_threshold", o.mask_threshold, "must be in [0, 1)");
  if (o.method == MapEstimate::Espirit) {
    if (o.espirit_kernel != 0 && (o.espirit_kernel < 2 || o.espirit_kernel > o.calibration / 2))
      detail::invalid_argument("sensitivity.espirit_kernel", o.espirit_kernel,
                               "must be 0 (auto) or in [2, calibration / 2 = " + std::to_string(o.calibration / 2) + "]");
    if (!(o.espirit_threshold > 0 && o.espirit_threshold < 1))
      detail::invalid_argument("sensitivity.espirit_threshold", o.espirit_threshold, "must be in (0, 1)");
    if (!(o.espirit_crop >= 0 && o.espirit_crop < 1))
      detail::invalid_argument("sensitivity.espirit_crop", o.espirit_crop, "must be in [0, 1)");
  }
  return o;
}

} // namespace

const char *to_string(MapEstimate m) { return m == MapEstimate::Direct ? "direct" : "espirit"; }

CoilSensitivities estimate_sensitivities(const KSpaceData &data, const Grid &grid, const SensitivityOptions &options) {
  return detail::estimate_sensitivities_on(data, grid, options, Backend::Cpu);
}

int detail::calibration_width(const SensitivityOptions &options, const Grid &grid) {
  return options.calibration != 0 ? options.calibration
                                  : static_cast<int>(std::min<std::int64_t>(24, smallest_extent(grid)));
}

CoilSensitivities detail::estimate_sensitivities_on(const KSpaceData &data, const Grid &grid,
                                                    const SensitivityOptions &asked, Backend backend) {
  const SensitivityOptions options = checked_options(asked, grid);
  data.trajectory().check_range(grid);
  if (options.method == MapEstimate::Espirit) return espirit_sensitivities(data, grid, options, backend);
  const int coils = data.coils();
  const std::size_t n = static_cast<std::size_t>(grid.voxels());
  std::vector<cfloat> maps =
      detail::low_resolution_images(data, grid, options.calibration, true, NufftOptions{}.tolerance, backend);

  // S_c = I_c / sqrt(sum_c |I_c|^2), zero where that sum is below the mask threshold.
  const Image rss = CoilSensitivities(grid, coils, maps).root_sum_of_squares();
  float peak = 0;
  for (const cfloat &v : rss.values()) peak = std::max(peak, v.real());
  const float floor = static_cast<float>(options.mask_threshold) * peak;
  for (std::size_t i = 0; i < n; ++i) {
    const float r = rss[i].real();
    const float scale = r > floor && r > 0 ? 1.0f / r : 0.0f;
    for (int c = 0; c < coils; ++c) maps[static_cast<std::size_t>(c) * n + i] *= scale;
  }
  return CoilSensitivities(grid, coils, std::move(maps));
}

} // namespace mri
