// The float64 reference: the exact sums (Stone et al. 2008's F^H D and Q; docs/architecture.md)
// evaluated term by term in double precision.
// O(N*M); used by tests, by Precision::Float64 and as the baseline the fast paths are
// measured against.
#include <cmath>
#include <numbers>

#include "mri/fourier.hpp"
#include "mri_backend/direct_sums.hpp"

namespace mri::detail {
namespace {

// 2 pi / period per axis; an axis of extent 1 contributes nothing (coordinate 0).
std::array<double, 3> angular_scale(const Grid &period) {
  std::array<double, 3> s{};
  for (int a = 0; a < 3; ++a) s[a] = 2 * std::numbers::pi / static_cast<double>(period.extent(a));
  return s;
}

// Both sums run in double; C is the caller's value type (complex float or double), read and
// written as such.
template <class C>
void adjoint_sum(const Trajectory &t, std::span<const C> c, const Grid &out, const Grid &period, C *result) {
  const auto w = angular_scale(period);
  const std::int64_t m_count = static_cast<std::int64_t>(t.size());
  const std::int64_t n = out.voxels();
#pragma omp parallel for schedule(static)
  for (std::int64_t v = 0; v < n; ++v) {
    const std::int64_t ix = v % out.nx(), iy = (v / out.nx()) % out.ny(), iz = v / (out.nx() * out.ny());
    const double x = static_cast<double>(out.coordinate(0, ix)) * w[0];
    const double y = static_cast<double>(out.coordinate(1, iy)) * w[1];
    const double z = static_cast<double>(out.coordinate(2, iz)) * w[2];
    double re = 0, im = 0;
    for (std::int64_t m = 0; m < m_count; ++m) {
      const KPoint &k = t[static_cast<std::size_t>(m)];
      const double phase = k.kx * x + k.ky * y + k.kz * z;
      const double cs = std::cos(phase), sn = std::sin(phase);
      const double cr = c[static_cast<std::size_t>(m)].real(), ci = c[static_cast<std::size_t>(m)].imag();
      re += cr * cs - ci * sn;
      im += cr * sn + ci * cs;
    }
    result[v] = C(static_cast<typename C::value_type>(re), static_cast<typename C::value_type>(im));
  }
}

// x in the grid's order (x fastest).
template <class C> void forward_sum(const Trajectory &t, const Grid &g, const C *x, C *result) {
  const auto w = angular_scale(g);
  const std::int64_t m_count = static_cast<std::int64_t>(t.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t m = 0; m < m_count; ++m) {
    const KPoint &k = t[static_cast<std::size_t>(m)];
    double re = 0, im = 0;
    for (std::int64_t iz = 0; iz < g.nz(); ++iz)
      for (std::int64_t iy = 0; iy < g.ny(); ++iy)
        for (std::int64_t ix = 0; ix < g.nx(); ++ix) {
          const double phase = -(k.kx * w[0] * static_cast<double>(g.coordinate(0, ix)) +
                                 k.ky * w[1] * static_cast<double>(g.coordinate(1, iy)) +
                                 k.kz * w[2] * static_cast<double>(g.coordinate(2, iz)));
          const C v = x[static_cast<std::size_t>(g.index(ix, iy, iz))];
          const double vr = v.real(), vi = v.imag();
          const double cs = std::cos(phase), sn = std::sin(phase);
          re += vr * cs - vi * sn;
          im += vr * sn + vi * cs;
        }
    result[m] = C(static_cast<typename C::value_type>(re), static_cast<typename C::value_type>(im));
  }
}

} // namespace

void adjoint_sum_f64(const Trajectory &t, std::span<const cfloat> c, const Grid &out, const Grid &period,
                     cfloat *result) {
  adjoint_sum(t, c, out, period, result);
}
void adjoint_sum_f64(const Trajectory &t, std::span<const cdouble> c, const Grid &out, const Grid &period,
                     cdouble *result) {
  adjoint_sum(t, c, out, period, result);
}
void forward_sum_f64(const Trajectory &t, const Image &img, cfloat *result) {
  forward_sum(t, img.grid(), img.data(), result);
}
void forward_sum_f64(const Trajectory &t, const Grid &grid, const cdouble *x, cdouble *result) {
  forward_sum(t, grid, x, result);
}

} // namespace mri::detail
