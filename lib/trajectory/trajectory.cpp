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

namespace {

void check_dims(int dims, const Grid &grid) {
  if (grid.dims() != dims)
    detail::invalid_argument("trajectory dims", dims, "differs from the grid's dims " + std::to_string(grid.dims()));
}

// The points outside [-n/2, n/2) on any of the first D axes, and whether one lies beyond 3n/2:
// one branch-free pass in float (n/2 and 3n/2 are exact in float for any grid extent below
// 2^22; the points are finite), over OpenMP's threads, shared by check_within and check_range,
// whose loops in double per axis it replaced. Every NufftOperator runs it on all its points (the
// wrap of samples at k_max), so it is part of every plan's time from host points
// (bench_nufft_gpu NUFFT_plan). The callers walk the points again only to name the first
// offending one.
constexpr std::ptrdiff_t kParallelPoints = 1 << 16; // below: one thread (a team costs more)

template <int D> std::size_t count_outside(const std::vector<KPoint> &points, const Grid &grid, bool &beyond) {
  const auto half = [&](int a) { return 0.5f * static_cast<float>(grid.extent(a)); };
  const float hx = half(0), hy = half(1), hz = half(2);
  std::size_t outside = 0;
  unsigned far = 0;
  const auto n = static_cast<std::ptrdiff_t>(points.size());
  // Integer reductions: the same result whatever the thread count.
#pragma omp parallel for reduction(+ : outside) reduction(| : far) if (n >= kParallelPoints)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const KPoint &k = points[static_cast<std::size_t>(i)];
    unsigned out = (k.kx < -hx) | (k.kx >= hx) | (k.ky < -hy) | (k.ky >= hy);
    unsigned f = (std::fabs(k.kx) > 3.0f * hx) | (std::fabs(k.ky) > 3.0f * hy);
    if constexpr (D == 3) {
      out |= (k.kz < -hz) | (k.kz >= hz);
      f |= std::fabs(k.kz) > 3.0f * hz;
    }
    outside += out;
    far |= f;
  }
  beyond = far != 0;
  return outside;
}

std::size_t count_outside(int dims, const std::vector<KPoint> &points, const Grid &grid, bool &beyond) {
  return dims == 3 ? count_outside<3>(points, grid, beyond) : count_outside<2>(points, grid, beyond);
}

} // namespace

void Trajectory::check_within(const Grid &grid) const {
  check_dims(dims_, grid);
  bool beyond = false;
  if (count_outside(dims_, points_, grid, beyond) == 0) return;
  for (std::size_t m = 0; m < points_.size(); ++m) {
    const KPoint &k = points_[m];
    const float c[3] = {k.kx, k.ky, k.kz};
    for (int a = 0; a < dims_; ++a) {
      const double half = static_cast<double>(grid.extent(a)) / 2.0;
      if (!(c[a] >= -half && c[a] < half))
        throw InvalidArgument(describe(m, k) + ": outside the grid's k-space [-n/2, n/2) on axis " +
                              std::to_string(a) + " (n = " + std::to_string(grid.extent(a)) + ")");
    }
  }
}

std::size_t Trajectory::check_range(const Grid &grid) const {
  check_dims(dims_, grid);
  bool beyond = false;
  const std::size_t outside = count_outside(dims_, points_, grid, beyond);
  if (!beyond) return outside;
  for (std::size_t m = 0; m < points_.size(); ++m) {
    const KPoint &k = points_[m];
    const float c[3] = {k.kx, k.ky, k.kz};
    for (int a = 0; a < dims_; ++a)
      if (std::abs(c[a]) > 1.5 * static_cast<double>(grid.extent(a)))
        throw InvalidArgument(describe(m, k) + ": beyond 3n/2 on axis " + std::to_string(a) + " (n = " +
                              std::to_string(grid.extent(a)) +
                              "): k is in cycles per field of view, the grid's k-space is [-n/2, n/2)");
  }
  return outside;
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
