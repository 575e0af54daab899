// FieldMap: validation and resampling between grids of one field of view (offresonance.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "mri/error.hpp"
#include "mri/offresonance.hpp"

namespace mri {

const char *to_string(SegmentInterpolator i) {
  return i == SegmentInterpolator::LeastSquares ? "least-squares" : "hanning";
}

FieldMap::FieldMap(Grid grid, std::vector<float> hz) : grid_(grid), hz_(std::move(hz)) {
  if (hz_.size() != static_cast<std::size_t>(grid_.voxels()))
    detail::invalid_argument("field_map.size()", hz_.size(),
                             "must equal the grid's voxels " + std::to_string(grid_.voxels()));
  for (std::size_t i = 0; i < hz_.size(); ++i)
    if (!std::isfinite(hz_[i])) detail::invalid_argument("field_map[" + std::to_string(i) + "]", hz_[i], "must be finite (Hz)");
  if (hz_.empty()) return;
  const auto [lo, hi] = std::minmax_element(hz_.begin(), hz_.end());
  min_ = *lo;
  max_ = *hi;
}

namespace {

// Linear interpolation weights of output index i of an axis of `to` voxels on an axis of `from`
// voxels of the same FOV: position (i - to/2)/to of the FOV is index (i - to/2) from/to + from/2.
struct Tap {
  std::int64_t i0 = 0, i1 = 0;
  double w1 = 0;
};
Tap tap(std::int64_t i, std::int64_t to, std::int64_t from) {
  if (from == 1) return {};
  const double u = (static_cast<double>(i) - static_cast<double>(to / 2)) * static_cast<double>(from) /
                       static_cast<double>(to) + static_cast<double>(from / 2);
  const double clamped = std::clamp(u, 0.0, static_cast<double>(from - 1));
  const auto i0 = static_cast<std::int64_t>(std::floor(clamped));
  const std::int64_t i1 = std::min(i0 + 1, from - 1);
  return {i0, i1, clamped - static_cast<double>(i0)};
}

} // namespace

FieldMap FieldMap::resampled(const Grid &to) const {
  if (to == grid_) return *this;
  std::vector<float> out(static_cast<std::size_t>(to.voxels()));
  for (std::int64_t z = 0; z < to.nz(); ++z) {
    const Tap tz = tap(z, to.nz(), grid_.nz());
    for (std::int64_t y = 0; y < to.ny(); ++y) {
      const Tap ty = tap(y, to.ny(), grid_.ny());
      for (std::int64_t x = 0; x < to.nx(); ++x) {
        const Tap tx = tap(x, to.nx(), grid_.nx());
        double v = 0;
        for (int c = 0; c < 8; ++c) {
          const double w = ((c & 1) ? tx.w1 : 1 - tx.w1) * ((c & 2) ? ty.w1 : 1 - ty.w1) * ((c & 4) ? tz.w1 : 1 - tz.w1);
          if (w == 0) continue;
          v += w * hz_[static_cast<std::size_t>(
                       grid_.index((c & 1) ? tx.i1 : tx.i0, (c & 2) ? ty.i1 : ty.i0, (c & 4) ? tz.i1 : tz.i0))];
        }
        out[static_cast<std::size_t>(to.index(x, y, z))] = static_cast<float>(v);
      }
    }
  }
  return FieldMap(to, std::move(out));
}

} // namespace mri
