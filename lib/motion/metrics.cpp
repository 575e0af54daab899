// Motion metrics: endpoint and angular error against a known field, and the Jacobian
// determinant det(I + grad w), the local volume ratio the volume-conserving term acts on.
#include <algorithm>
#include <cmath>

#include "mri/error.hpp"
#include "mri/motion.hpp"

namespace mri {
namespace {

void check_same_grid(const DisplacementField &w, const DisplacementField &truth) {
  if (!(w.grid() == truth.grid()))
    detail::invalid_argument("truth.grid().voxels()", truth.grid().voxels(),
                             "differs from the field's grid");
}

// Mean of per_voxel(index) over the voxels at least `border` from every face; an axis of one
// voxel (a 2D field's z) has no faces to keep away from.
template <class F> double interior_mean(const Grid &g, std::int64_t border, const F &per_voxel) {
  std::int64_t b[3];
  for (int a = 0; a < 3; ++a) {
    b[a] = g.extent(a) == 1 ? 0 : border;
    if (border < 0 || 2 * b[a] >= g.extent(a))
      detail::invalid_argument("border", border, "must leave voxels inside the volume");
  }
  double sum = 0;
  std::int64_t count = 0;
  for (std::int64_t z = b[2]; z < g.nz() - b[2]; ++z)
    for (std::int64_t y = b[1]; y < g.ny() - b[1]; ++y)
      for (std::int64_t x = b[0]; x < g.nx() - b[0]; ++x, ++count)
        sum += per_voxel(g.index(x, y, z));
  return sum / static_cast<double>(count);
}

// d w_c / d x_a at voxel (x, y, z): central inside, one-sided at the border, 0 on a 1-voxel axis.
double partial(const RealVolume &f, int axis, std::int64_t x, std::int64_t y, std::int64_t z) {
  const Grid &g = f.grid();
  const std::int64_t pos[3] = {x, y, z}, n = g.extent(axis);
  if (n == 1)
    return 0;
  std::int64_t lo[3] = {x, y, z}, hi[3] = {x, y, z};
  lo[axis] = std::max<std::int64_t>(pos[axis] - 1, 0);
  hi[axis] = std::min<std::int64_t>(pos[axis] + 1, n - 1);
  return (double(f.at(hi[0], hi[1], hi[2])) - f.at(lo[0], lo[1], lo[2])) /
         double(hi[axis] - lo[axis]);
}

} // namespace

double average_endpoint_error(const DisplacementField &w, const DisplacementField &truth,
                              std::int64_t border) {
  check_same_grid(w, truth);
  return interior_mean(w.grid(), border, [&](std::int64_t i) {
    return std::sqrt(std::pow(double(w.u[i]) - truth.u[i], 2) +
                     std::pow(double(w.v[i]) - truth.v[i], 2) +
                     std::pow(double(w.w[i]) - truth.w[i], 2));
  });
}

double average_angular_error(const DisplacementField &w, const DisplacementField &truth,
                             std::int64_t border) {
  check_same_grid(w, truth);
  return interior_mean(w.grid(), border, [&](std::int64_t i) {
    const double a[4] = {w.u[i], w.v[i], w.w[i], 1.0},
                 b[4] = {truth.u[i], truth.v[i], truth.w[i], 1.0};
    double dot = 0, na = 0, nb = 0;
    for (int k = 0; k < 4; ++k)
      dot += a[k] * b[k], na += a[k] * a[k], nb += b[k] * b[k];
    return std::acos(std::clamp(dot / std::sqrt(na * nb), -1.0, 1.0)) * 180.0 / M_PI;
  });
}

JacobianStats jacobian_stats(const DisplacementField &w) {
  const Grid &g = w.grid();
  const RealVolume *c[3] = {&w.u, &w.v, &w.w};
  double sum_log = 0, sum_log2 = 0, sum_det = 0;
  std::int64_t positive = 0, nonpositive = 0;
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        double f[3][3];
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b)
            f[a][b] = (a == b) + partial(*c[a], b, x, y, z);
        const double det = f[0][0] * (f[1][1] * f[2][2] - f[1][2] * f[2][1]) -
                           f[0][1] * (f[1][0] * f[2][2] - f[1][2] * f[2][0]) +
                           f[0][2] * (f[1][0] * f[2][1] - f[1][1] * f[2][0]);
        sum_det += det;
        if (det <= 0) {
          ++nonpositive;
          continue;
        }
        ++positive;
        sum_log += std::log(det);
        sum_log2 += std::log(det) * std::log(det);
      }
  JacobianStats s;
  const double n = static_cast<double>(g.voxels());
  s.fraction_nonpositive = static_cast<double>(nonpositive) / n;
  s.mean_det = sum_det / n;
  if (positive > 0) {
    const double mean = sum_log / positive;
    s.std_log_det = std::sqrt(std::max(0.0, sum_log2 / positive - mean * mean));
  }
  return s;
}

} // namespace mri
