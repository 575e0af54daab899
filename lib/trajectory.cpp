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

} // namespace mri
