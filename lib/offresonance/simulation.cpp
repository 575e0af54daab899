// A field-corrupted acquisition of a known image (offresonance.hpp's simulation helpers): what
// examples/spiral_b0, bench_offresonance_cpu and bench_offresonance_gpu simulate their data with.
#include <algorithm>
#include <cmath>
#include <string>

#include "mri/error.hpp"
#include "mri/offresonance.hpp"
#include "mri/phantom.hpp"

namespace mri {

FieldMap simulated_field_map(const Grid &grid, double range_hz) {
  if (!(std::isfinite(range_hz) && range_hz >= 0))
    detail::invalid_argument("range_hz", range_hz, "must be finite and >= 0 (Hz)");
  std::vector<double> f(static_cast<std::size_t>(grid.voxels()));
  for (std::int64_t z = 0; z < grid.nz(); ++z)
    for (std::int64_t y = 0; y < grid.ny(); ++y)
      for (std::int64_t x = 0; x < grid.nx(); ++x) {
        const double u = static_cast<double>(x) / grid.nx() - 0.5, v = static_cast<double>(y) / grid.ny() - 0.5,
                     w = grid.nz() > 1 ? static_cast<double>(z) / grid.nz() - 0.5 : 0.0;
        const double bump = std::exp(-30 * ((u - 0.1) * (u - 0.1) + (v + 0.15) * (v + 0.15) + w * w));
        f[static_cast<std::size_t>(grid.index(x, y, z))] = 0.7 * bump + 0.3 * (u + 0.5);
      }
  const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
  const double a = *lo, span = *hi - *lo;
  std::vector<float> hz(f.size());
  for (std::size_t i = 0; i < f.size(); ++i)
    hz[i] = static_cast<float>(span > 0 ? range_hz * (f[i] - a) / span - 0.4 * range_hz : 0.0);
  return FieldMap(grid, std::move(hz));
}

std::vector<float> readout_times(int readouts, int samples, double duration_s) {
  if (readouts < 1) detail::invalid_argument("readouts", readouts, "must be >= 1");
  if (samples < 1) detail::invalid_argument("samples", samples, "must be >= 1");
  if (!(std::isfinite(duration_s) && duration_s > 0)) detail::invalid_argument("duration_s", duration_s, "must be finite and > 0");
  std::vector<float> t;
  t.reserve(static_cast<std::size_t>(readouts) * static_cast<std::size_t>(samples));
  for (int r = 0; r < readouts; ++r)
    for (int s = 0; s < samples; ++s) t.push_back(static_cast<float>(duration_s * s / samples));
  return t;
}

KSpaceData simulate_field_acquisition(const Image &image, const Trajectory &trajectory, const FieldMap &field,
                                      std::span<const float> times, const CoilSensitivities *maps, double snr,
                                      std::uint64_t seed) {
  const Grid &grid = image.grid();
  if (field.grid() != grid)
    detail::invalid_argument("field.grid().voxels()", field.grid().voxels(),
                             "must be on the image's grid (" + std::to_string(grid.voxels()) + " voxels)");
  if (maps && maps->grid() != grid)
    detail::invalid_argument("maps->grid().voxels()", maps->grid().voxels(),
                             "must be on the image's grid (" + std::to_string(grid.voxels()) + " voxels)");
  if (!(std::isfinite(snr) && snr >= 0)) detail::invalid_argument("snr", snr, "must be finite and >= 0 (0: no noise)");
  // Far tighter than any reconstruction's operator (their NUFFT at 1e-5 or looser, their bound 1e-3).
  SegmentationOptions fine;
  fine.tolerance = 1e-7;
  fine.max_segments = 64;
  NufftOptions accurate;
  accurate.precision = Precision::Float64;
  accurate.tolerance = 1e-6;
  const SegmentedFieldOperator model(trajectory, grid, field, times, fine, accurate);
  const int coils = maps ? maps->coils() : 1;
  std::vector<cfloat> y;
  y.reserve(static_cast<std::size_t>(coils) * trajectory.size());
  for (int c = 0; c < coils; ++c) {
    Image coil = image;
    if (maps) {
      const auto s = maps->map(c);
      for (std::size_t i = 0; i < coil.size(); ++i) coil[i] *= s[i];
    }
    const std::vector<cfloat> yc = forward(model, coil);
    y.insert(y.end(), yc.begin(), yc.end());
  }
  if (snr > 0) add_noise(y, snr, seed);
  return KSpaceData(trajectory, std::move(y), {}, coils, std::vector<float>(times.begin(), times.end()));
}

} // namespace mri
