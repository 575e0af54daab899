#include "mri/trajectory.hpp"

#include <cmath>
#include <sstream>
#include <string>

#include "mri/error.hpp"

namespace mri {
namespace {

std::string describe(std::size_t m, const KPoint &k) {
  std::ostringstream os;
  os << "trajectory[" << m << "] = (" << k.kx << ", " << k.ky << ", " << k.kz << ")";
  return os.str();
}

} // namespace

Trajectory::Trajectory(int dims, std::vector<KPoint> points) : dims_(dims), points_(std::move(points)) {
  if (dims_ != 2 && dims_ != 3) detail::invalid_argument("trajectory dims", dims_, "must be 2 or 3");
  for (std::size_t m = 0; m < points_.size(); ++m) {
    const KPoint &k = points_[m];
    if (!std::isfinite(k.kx) || !std::isfinite(k.ky) || !std::isfinite(k.kz))
      throw InvalidArgument(describe(m, k) + ": coordinates must be finite");
    if (dims_ == 2 && k.kz != 0.0f)
      throw InvalidArgument(describe(m, k) + ": a 2D trajectory must have kz == 0");
  }
}

void Trajectory::check_within(const Grid &grid) const {
  if (grid.dims() != dims_)
    detail::invalid_argument("trajectory dims", dims_,
                             "differs from the grid's dims " + std::to_string(grid.dims()));
  const double half[3] = {grid.nx() / 2.0, grid.ny() / 2.0, grid.nz() / 2.0};
  for (std::size_t m = 0; m < points_.size(); ++m) {
    const KPoint &k = points_[m];
    const float c[3] = {k.kx, k.ky, k.kz};
    for (int a = 0; a < dims_; ++a)
      if (!(c[a] >= -half[a] && c[a] < half[a]))
        throw InvalidArgument(describe(m, k) + ": outside the grid's k-space [-n/2, n/2) on axis " +
                              std::to_string(a) + " (n = " + std::to_string(grid.extent(a)) + ")");
  }
}

namespace {

// k's periodic image in [-n/2, n/2): k - n floor((k + n/2) / n), in double, then rounded to
// float; a value that rounds up to n/2 itself is taken one period down.
float wrap(float k, std::int64_t n) {
  const double half = static_cast<double>(n) / 2.0;
  const double w = k - static_cast<double>(n) * std::floor((k + half) / static_cast<double>(n));
  const auto f = static_cast<float>(w);
  return f >= static_cast<float>(half) ? static_cast<float>(w - static_cast<double>(n)) : f;
}

} // namespace

std::size_t Trajectory::check_range(const Grid &grid) const {
  if (grid.dims() != dims_)
    detail::invalid_argument("trajectory dims", dims_, "differs from the grid's dims " + std::to_string(grid.dims()));
  std::size_t outside = 0;
  for (std::size_t m = 0; m < points_.size(); ++m) {
    const KPoint &k = points_[m];
    const float c[3] = {k.kx, k.ky, k.kz};
    bool out = false;
    for (int a = 0; a < dims_; ++a) {
      const double n = static_cast<double>(grid.extent(a));
      if (std::abs(c[a]) > 1.5 * n)
        throw InvalidArgument(describe(m, k) + ": beyond 3n/2 on axis " + std::to_string(a) + " (n = " +
                              std::to_string(grid.extent(a)) +
                              "): k is in cycles per field of view, the grid's k-space is [-n/2, n/2)");
      out = out || !(c[a] >= -n / 2 && c[a] < n / 2);
    }
    outside += out ? 1 : 0;
  }
  return outside;
}

Trajectory Trajectory::wrapped(const Grid &grid) const & { return Trajectory(*this).wrapped(grid); }

Trajectory Trajectory::wrapped(const Grid &grid) && {
  if (check_range(grid) == 0) return std::move(*this);
  for (KPoint &k : points_) {
    k.kx = wrap(k.kx, grid.nx());
    k.ky = wrap(k.ky, grid.ny());
    if (dims_ == 3) k.kz = wrap(k.kz, grid.nz());
  }
  return std::move(*this);
}

} // namespace mri
