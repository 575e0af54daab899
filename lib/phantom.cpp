// Modified Shepp-Logan phantoms: rasterisation by supersampled point averages and the
// closed-form continuous Fourier transform (see include/mri/phantom.hpp for the units).
//
// Geometry convention (MATLAB's phantom(), Koay et al.): a shape is rotated
// counter-clockwise by phi about its centre, so a point u is inside when its coordinates in
// the shape's frame, R(-phi) (u - centre), lie in the unit ball scaled by the semi-axes.
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "mri/error.hpp"
#include "mri/phantom.hpp"

namespace mri {
namespace {

using Vec3 = std::array<double, 3>;
constexpr double kPi = std::numbers::pi;

// An Ellipsoid with its rotation evaluated once.
struct Shape {
  double intensity;
  Vec3 semi_axes;
  Vec3 centre;
  double cos_phi, sin_phi;
};

Shape prepare(const Ellipsoid &e) {
  const double phi = e.phi_deg * kPi / 180.0;
  return {e.intensity, {e.a, e.b, e.c}, {e.x0, e.y0, e.z0}, std::cos(phi), std::sin(phi)};
}

std::vector<Shape> prepare_all(const std::vector<Ellipsoid> &shapes) {
  std::vector<Shape> out;
  out.reserve(shapes.size());
  for (const Ellipsoid &e : shapes)
    out.push_back(prepare(e));
  return out;
}

// Rotates a vector by -phi in the xy plane (world frame -> shape frame); z is unchanged.
Vec3 to_shape_frame(const Shape &s, const Vec3 &v) {
  return {v[0] * s.cos_phi + v[1] * s.sin_phi, -v[0] * s.sin_phi + v[1] * s.cos_phi, v[2]};
}

// Squared "radius" of u in the shape's unit-ball frame: <= 1 exactly when u is inside.
double unit_radius2(const Shape &s, const Vec3 &u, int dims) {
  const Vec3 p = to_shape_frame(s, {u[0] - s.centre[0], u[1] - s.centre[1], u[2] - s.centre[2]});
  double q = 0;
  for (int a = 0; a < dims; ++a)
    q += (p[a] / s.semi_axes[a]) * (p[a] / s.semi_axes[a]);
  return q;
}

bool contains(const Shape &s, const Vec3 &u, int dims) { return unit_radius2(s, u, dims) <= 1.0; }

// --- Rasterisation -------------------------------------------------------------------

// Inclusive range of voxel indices along one axis whose cells can meet [lo, hi] (normalised).
struct IndexRange {
  std::int64_t first, last;
};

IndexRange voxels_touching(const Grid &grid, int axis, double lo, double hi) {
  const std::int64_t n = grid.extent(axis);
  const double scale = n / 2.0; // normalised -> voxel units
  // Voxel i covers [x - 1/2, x + 1/2] with x = i - n/2 (integer division, as Grid does).
  const auto first = static_cast<std::int64_t>(std::floor(lo * scale - 0.5)) + n / 2;
  const auto last = static_cast<std::int64_t>(std::ceil(hi * scale + 0.5)) + n / 2;
  return {std::max<std::int64_t>(first, 0), std::min<std::int64_t>(last, n - 1)};
}

// Half-widths of the axis-aligned box around a shape (normalised units).
Vec3 bounding_half_widths(const Shape &s) {
  const double a = s.semi_axes[0], b = s.semi_axes[1];
  return {std::hypot(a * s.cos_phi, b * s.sin_phi), std::hypot(a * s.sin_phi, b * s.cos_phi),
          s.semi_axes[2]};
}

double voxel_centre(const Grid &grid, int axis, std::int64_t i) {
  return 2.0 * static_cast<double>(grid.coordinate(axis, i)) /
         static_cast<double>(grid.extent(axis));
}

// Normalised coordinates of the `count` sub-samples of every voxel index in r along an
// axis, flattened (voxel-major). Offsets (k + 1/2)/count - 1/2 are symmetric about the
// voxel centre, so supersampling adds no shift.
std::vector<double> subsample_table(const Grid &grid, int axis, IndexRange r, int count) {
  const double to_normalised = 2.0 / static_cast<double>(grid.extent(axis));
  std::vector<double> u;
  u.reserve(static_cast<std::size_t>((r.last - r.first + 1) * count));
  for (std::int64_t i = r.first; i <= r.last; ++i) {
    const double x = static_cast<double>(grid.coordinate(axis, i));
    for (int k = 0; k < count; ++k)
      u.push_back((x + (k + 0.5) / count - 0.5) * to_normalised);
  }
  return u;
}

// How far the unit-ball radius can move between a cell's centre and any point of the cell:
// the cell lies within its half-diagonal (1/n per axis in normalised units) of its centre,
// and mapping onto the unit ball stretches distances by at most 1/(smallest semi-axis).
// The small margin keeps rounding from deciding a borderline cell.
double cell_reach(const Grid &grid, const Shape &s, int dims) {
  double half_diagonal2 = 0, min_axis = s.semi_axes[0];
  for (int a = 0; a < dims; ++a) {
    const auto n = static_cast<double>(grid.extent(a));
    half_diagonal2 += 1.0 / (n * n);
    min_axis = std::min(min_axis, s.semi_axes[a]);
  }
  return std::sqrt(half_diagonal2) / min_axis + 1e-9;
}

// Sub-sample coordinates of one voxel along each axis, and their counts.
struct Cell {
  Vec3 centre;
  const double *u[3];
  int count[3];
};

// Fraction of the cell inside the shape. Only cells straddling the boundary are
// sub-sampled, so the cost scales with the surface, not the volume.
double cell_fraction(const Shape &s, const Cell &cell, double reach, int dims) {
  const double rho = std::sqrt(unit_radius2(s, cell.centre, dims));
  if (rho + reach < 1.0)
    return 1.0; // the whole cell is inside
  if (rho - reach > 1.0)
    return 0.0; // the whole cell is outside
  int inside = 0;
  for (int k = 0; k < cell.count[2]; ++k)
    for (int j = 0; j < cell.count[1]; ++j)
      for (int i = 0; i < cell.count[0]; ++i)
        inside += contains(s, {cell.u[0][i], cell.u[1][j], cell.u[2][k]}, dims) ? 1 : 0;
  return inside / (static_cast<double>(cell.count[0]) * cell.count[1] * cell.count[2]);
}

// Adds intensity * covered fraction to every voxel in the shape's bounding box, so small
// features cost almost nothing.
void accumulate_shape(std::vector<double> &acc, const Grid &grid, const Shape &s, int supersample,
                      int dims) {
  const Vec3 w = bounding_half_widths(s);
  IndexRange r[3];
  for (int a = 0; a < 3; ++a)
    r[a] = a < dims ? voxels_touching(grid, a, s.centre[a] - w[a], s.centre[a] + w[a])
                    : IndexRange{0, 0};
  if (r[0].first > r[0].last || r[1].first > r[1].last || r[2].first > r[2].last)
    return;                                   // off-grid
  const int sz = dims == 3 ? supersample : 1; // a 2D grid is one plane at z = 0
  const std::vector<double> ux = subsample_table(grid, 0, r[0], supersample);
  const std::vector<double> uy = subsample_table(grid, 1, r[1], supersample);
  const std::vector<double> uz =
      dims == 3 ? subsample_table(grid, 2, r[2], sz) : std::vector<double>{0.0};
  const double reach = cell_reach(grid, s, dims);
  // Each (iz, iy) row is written by one thread only: no races on acc.
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t iz = r[2].first; iz <= r[2].last; ++iz)
    for (std::int64_t iy = r[1].first; iy <= r[1].last; ++iy) {
      Cell cell{{0, voxel_centre(grid, 1, iy), dims == 3 ? voxel_centre(grid, 2, iz) : 0.0},
                {nullptr, uy.data() + (iy - r[1].first) * supersample,
                 uz.data() + (iz - r[2].first) * sz},
                {supersample, supersample, sz}};
      for (std::int64_t ix = r[0].first; ix <= r[0].last; ++ix) {
        cell.centre[0] = voxel_centre(grid, 0, ix);
        cell.u[0] = ux.data() + (ix - r[0].first) * supersample;
        acc[static_cast<std::size_t>(grid.index(ix, iy, iz))] +=
            s.intensity * cell_fraction(s, cell, reach, dims);
      }
    }
}

// --- Closed-form transforms (normalised units, frequency nu in cycles per unit) ---------

// FT of the unit disc at radial frequency r: J1(2 pi r) / r, -> pi as r -> 0.
double unit_disc_ft(double r) {
  const double t = 2 * kPi * r;
  if (t < 1e-3)
    return kPi * (1 - t * t / 8 + t * t * t * t / 192); // Taylor; next term ~t^6/9216
  // POSIX j1, not std::cyl_bessel_j: libstdc++'s series writes the global signgam through
  // lgamma (a data race when phantoms are sampled on several threads); glibc's j1 is MT-safe.
  return ::j1(t) / r;
}

// FT of the unit ball at radial frequency r: 4 pi (sin t - t cos t) / t^3 with t = 2 pi r,
// -> 4 pi / 3 as r -> 0. The closed form cancels catastrophically for small t (relative
// error ~ eps / t^2), so below t = 0.1 use the Taylor series, whose first omitted term
// (t^8 / 3991680) is then below 1e-14 relative.
double unit_ball_ft(double r) {
  const double t = 2 * kPi * r;
  double g;
  if (t < 0.1) {
    const double t2 = t * t;
    g = 1.0 / 3 - t2 / 30 + t2 * t2 / 840 - t2 * t2 * t2 / 45360;
  } else {
    g = (std::sin(t) - t * std::cos(t)) / (t * t * t);
  }
  return 4 * kPi * g;
}

// FT of one shape at nu: intensity * |det scale| * FT_unit(|D R(-phi) nu|) * exp(-i 2 pi nu.c).
// (Substituting u = c + R(phi) D w maps the shape onto the unit ball.)
cdouble shape_ft(const Shape &s, const Vec3 &nu, int dims) {
  const Vec3 f = to_shape_frame(s, nu);
  double r2 = 0, volume_scale = 1, phase = 0;
  for (int a = 0; a < dims; ++a) {
    r2 += (s.semi_axes[a] * f[a]) * (s.semi_axes[a] * f[a]);
    volume_scale *= s.semi_axes[a];
    phase -= 2 * kPi * nu[a] * s.centre[a];
  }
  const double r = std::sqrt(r2);
  const double magnitude =
      s.intensity * volume_scale * (dims == 2 ? unit_disc_ft(r) : unit_ball_ft(r));
  return std::polar(magnitude, phase);
}

void require_dims(const char *what, int dims, int phantom_dims) {
  if (dims != phantom_dims)
    detail::invalid_argument(what, dims,
                             "differs from the phantom's dims " + std::to_string(phantom_dims));
}

} // namespace

// Toft's modified Shepp-Logan (MATLAB's phantom('Modified Shepp-Logan'), BART's
// shepplogan_mod): the original ellipses with the contrast raised for display
// (2, -0.98, -0.02, 0.01 -> 1, -0.8, -0.2, 0.1).
Phantom Phantom::shepp_logan_2d() {
  //           A      a       b     c   x0      y0    z0  phi
  return Phantom(2, {{1.0, .6900, .9200, 0, 0.00, 0.0000, 0, 0},
                     {-.8, .6624, .8740, 0, 0.00, -.0184, 0, 0},
                     {-.2, .1100, .3100, 0, 0.22, 0.0000, 0, -18},
                     {-.2, .1600, .4100, 0, -.22, 0.0000, 0, 18},
                     {0.1, .2100, .2500, 0, 0.00, 0.3500, 0, 0},
                     {0.1, .0460, .0460, 0, 0.00, 0.1000, 0, 0},
                     {0.1, .0460, .0460, 0, 0.00, -.1000, 0, 0},
                     {0.1, .0460, .0230, 0, -.08, -.6050, 0, 0},
                     {0.1, .0230, .0230, 0, 0.00, -.6060, 0, 0},
                     {0.1, .0230, .0460, 0, 0.06, -.6050, 0, 0}});
}

// Koay, Sarlls & Ozarslan, MRM 58:430 (2007), Table 1: the Kak-Slaney 3D head with MR
// contrast, the same table as BART's `phantom -3` (note the outer ellipsoid is 2.0, so the
// brain is 1.2, not the 2D phantom's 0.2). Rotations are about z only.
Phantom Phantom::shepp_logan_3d() {
  //           A      a       b      c      x0     y0     z0    phi
  return Phantom(3, {{2.0, .6900, .9200, .9000, 0.00, 0.000, 0.000, 0},
                     {-.8, .6624, .8740, .8800, 0.00, 0.000, 0.000, 0},
                     {-.2, .4100, .1600, .2100, -.22, 0.000, -.250, 108},
                     {-.2, .3100, .1100, .2200, 0.22, 0.000, -.250, 72},
                     {0.2, .2100, .2500, .5000, 0.00, 0.350, -.250, 0},
                     {0.2, .0460, .0460, .0460, 0.00, 0.100, -.250, 0},
                     {0.1, .0460, .0230, .0200, -.08, -.650, -.250, 0},
                     {0.1, .0460, .0230, .0200, 0.06, -.650, -.250, 90},
                     {0.2, .0560, .0400, .1000, 0.06, -.105, 0.625, 90},
                     {-.2, .0560, .0560, .1000, 0.00, 0.100, 0.625, 0}});
}

Image Phantom::rasterize(const Grid &grid, int supersample) const {
  require_dims("grid.dims()", grid.dims(), dims_);
  if (supersample < 1)
    detail::invalid_argument("supersample", supersample, "must be at least 1");
  // Accumulate in double: ten overlapping shapes with cancelling intensities.
  std::vector<double> acc(static_cast<std::size_t>(grid.voxels()), 0.0);
  for (const Shape &s : prepare_all(shapes_))
    accumulate_shape(acc, grid, s, supersample, dims_);
  Image image(grid);
  for (std::size_t i = 0; i < acc.size(); ++i)
    image[i] = cfloat(static_cast<float>(acc[i]), 0.0f);
  return image;
}

std::vector<cfloat> Phantom::kspace(const Trajectory &trajectory, const Grid &grid) const {
  require_dims("grid.dims()", grid.dims(), dims_);
  require_dims("trajectory.dims()", trajectory.dims(), dims_);
  // With u = 2x/n per axis, S(k) = prod(n_a / 2) * FT_u(nu = k / 2) (header comment).
  double jacobian = 1;
  for (int a = 0; a < dims_; ++a)
    jacobian *= grid.extent(a) / 2.0;
  const std::vector<Shape> shapes = prepare_all(shapes_);
  const auto m_count = static_cast<std::int64_t>(trajectory.size());
  std::vector<cfloat> out(trajectory.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t m = 0; m < m_count; ++m) {
    const KPoint &k = trajectory[static_cast<std::size_t>(m)];
    const Vec3 nu{k.kx / 2.0, k.ky / 2.0, k.kz / 2.0};
    cdouble sum = 0;
    for (const Shape &s : shapes)
      sum += shape_ft(s, nu, dims_);
    out[static_cast<std::size_t>(m)] = cfloat(jacobian * sum);
  }
  return out;
}

void add_noise(std::vector<cfloat> &samples, double snr, std::uint64_t seed) {
  if (!(snr > 0) || !std::isfinite(snr))
    detail::invalid_argument("snr", snr, "must be positive and finite");
  if (samples.empty())
    return;
  double power = 0;
  for (const cfloat &s : samples)
    power += std::norm(cdouble(s));
  const double rms = std::sqrt(power / static_cast<double>(samples.size()));
  if (!std::isfinite(rms))
    detail::invalid_argument("rms(samples)", rms, "samples must be finite");
  // sigma is per complex sample, so each of the real and imaginary parts gets sigma/sqrt(2).
  const double component_sigma = rms / snr / std::numbers::sqrt2;
  // Box-Muller on mt19937_64's specified output (std::normal_distribution's algorithm is
  // unspecified), so a seed gives the same noise with every standard library. One draw
  // yields two independent normals: exactly the real and imaginary parts.
  std::mt19937_64 rng(seed);
  const auto uniform = [&rng] { return static_cast<double>(rng() >> 11) * 0x1p-53; }; // [0, 1)
  for (cfloat &s : samples) {
    const double radius =
        component_sigma * std::sqrt(-2.0 * std::log(1.0 - uniform())); // log of (0, 1]
    const double angle = 2 * kPi * uniform();
    s += cfloat(static_cast<float>(radius * std::cos(angle)),
                static_cast<float>(radius * std::sin(angle)));
  }
}

} // namespace mri
