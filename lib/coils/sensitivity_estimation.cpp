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

void check_options(const SensitivityOptions &o, const Grid &grid) {
  std::int64_t smallest = 0;
  for (int a = 0; a < grid.dims(); ++a)
    smallest = smallest == 0 ? grid.extent(a) : std::min(smallest, grid.extent(a));
  if (o.calibration < 4 || o.calibration > smallest)
    detail::invalid_argument("sensitivity.calibration", o.calibration,
                             "must be in [4, the grid's smallest extent " + std::to_string(smallest) + "]");
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
}

} // namespace

const char *to_string(MapEstimate m) { return m == MapEstimate::Direct ? "direct" : "espirit"; }

CoilSensitivities estimate_sensitivities(const KSpaceData &data, const Grid &grid, const SensitivityOptions &options) {
  return detail::estimate_sensitivities_on(data, grid, options, Backend::Cpu);
}

CoilSensitivities detail::estimate_sensitivities_on(const KSpaceData &data, const Grid &grid,
                                                    const SensitivityOptions &options, Backend backend) {
  check_options(options, grid);
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
