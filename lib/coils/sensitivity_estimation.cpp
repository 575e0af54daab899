// Coil maps from the centre of k-space (BART's `caldir`, made for non-Cartesian samples): low-
// resolution coil images by an adjoint NUFFT of the tapered calibration samples, divided by their
// root-sum-of-squares.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "mri/coils.hpp"
#include "mri/density.hpp"
#include "mri/error.hpp"
#include "mri/nufft.hpp"
#include "espirit.hpp"

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

// The calibration samples: indices of the samples with |k_a| < calibration / 2 on every axis, and
// each one's Hann taper 0.5 (1 + cos(pi |k| / (calibration / 2))), zero at the region's edge.
struct Calibration {
  std::vector<std::size_t> index;
  std::vector<KPoint> points;
  std::vector<float> taper;
};

Calibration calibration_samples(const Trajectory &t, double half) {
  Calibration cal;
  for (std::size_t m = 0; m < t.size(); ++m) {
    const KPoint &k = t[m];
    if (std::abs(k.kx) >= half || std::abs(k.ky) >= half || std::abs(k.kz) >= half) continue;
    const double r = std::min(1.0, std::sqrt(double(k.kx) * k.kx + double(k.ky) * k.ky + double(k.kz) * k.kz) / half);
    cal.index.push_back(m);
    cal.points.push_back(k);
    cal.taper.push_back(static_cast<float>(0.5 * (1.0 + std::cos(std::numbers::pi * r))));
  }
  return cal;
}

} // namespace

const char *to_string(MapEstimate m) { return m == MapEstimate::Direct ? "direct" : "espirit"; }

CoilSensitivities estimate_sensitivities(const KSpaceData &data, const Grid &grid, const SensitivityOptions &options) {
  check_options(options, grid);
  data.trajectory().check_range(grid);
  if (options.method == MapEstimate::Espirit) return espirit_sensitivities(data, grid, options);
  const Trajectory trajectory = data.trajectory().wrapped(grid);
  const Calibration cal = calibration_samples(trajectory, options.calibration / 2.0);
  if (cal.index.size() < 8)
    detail::invalid_argument("calibration samples", cal.index.size(),
                             "too few samples with |k| < sensitivity.calibration / 2 = " +
                                 std::to_string(options.calibration / 2.0) + " to estimate coil maps (need >= 8)");
  Trajectory cal_traj(trajectory.dims(), cal.points);
  // Density compensation: the data's own weights, else Pipe-Menon's on the calibration samples.
  std::vector<float> weights(cal.index.size());
  if (data.has_weights())
    for (std::size_t i = 0; i < cal.index.size(); ++i) weights[i] = data.weights()[cal.index[i]];
  else
    weights = density::pipe_menon(cal_traj, grid).weights;

  const NufftOperator adjoint(std::move(cal_traj), grid);
  const int coils = data.coils();
  const std::size_t m = data.samples_per_coil(), n = static_cast<std::size_t>(grid.voxels());
  std::vector<cfloat> maps(n * static_cast<std::size_t>(coils));
  std::vector<cfloat> y(cal.index.size());
  for (int c = 0; c < coils; ++c) {
    const cfloat *coil = data.samples().data() + static_cast<std::size_t>(c) * m;
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = coil[cal.index[i]] * (weights[i] * cal.taper[i]);
    adjoint.adjoint(y.data(), maps.data() + static_cast<std::size_t>(c) * n);
  }

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
