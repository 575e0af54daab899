// Trajectory generators (mri::traj). Geometry is computed in double in normalised
// coordinates (unit = half the k-space extent of an axis, so the grid's k-space is
// [-1, 1) per axis) and scaled to cycles/FOV by n_a/2 only when a point is stored.
//
// Staying strictly inside [-n/2, n/2) is a property of the geometry, not a clamp:
//  * A full-diameter spoke samples tau in [-1, 1 - 2/readout] along its direction d, so only
//    the first sample reaches radius 1, at -d. Every spoke is oriented so that the sum of
//    d's components is >= 0; -d then lies in the closed half-space sum <= 0, whose points on
//    the unit sphere have every component <= 1/sqrt(2) (2D) or sqrt(2/3) (3D). The far end
//    can therefore never be rotated onto +n/2, whatever the angle (the classic failure:
//    a spoke at angle pi - eps puts its -n/2 sample at cos(eps) * n/2, i.e. +n/2 in float).
//  * Spiral radii are sqrt(j / samples) < 1; PROPELLER blades are scaled so their farthest
//    corner sits half a sample spacing inside the unit disc, so any rotation stays inside.
//  * Random points use a 53-bit uniform in [0, 1), which is < 1 by construction.
// The only remaining hazard is rounding double -> float when a sample lies within one float
// ulp of +n/2 (sample spacing below float resolution); to_float_inside handles that.
#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "mri/error.hpp"
#include "mri/trajectory.hpp"

namespace mri::traj {
namespace {

using Vec3 = std::array<double, 3>;

constexpr double kPi = std::numbers::pi;
// Radial golden angle 180 deg / golden ratio = 111.246 deg: each new spoke splits the
// largest remaining gap in the golden ratio, so any contiguous run of spokes is nearly
// uniform (Winkelmann et al. 2007).
constexpr double kRadialGoldenAngle = kPi / std::numbers::phi;
// Azimuthal golden angle 360 deg / golden ratio^2 = 137.5 deg for the Fibonacci sphere.
constexpr double kSphereGoldenAngle = 2.0 * kPi * (2.0 - std::numbers::phi);

void require_positive(std::string_view name, long long value) {
  if (value <= 0)
    detail::invalid_argument(name, value, "must be positive");
}

void require_dims(const Grid &grid, int dims, std::string_view generator) {
  if (grid.dims() == dims)
    return;
  const std::string why = std::string(generator) + " needs a " + std::to_string(dims) + "D grid" +
                          (dims == 2 ? " (nz == 1)" : " (nz > 1)");
  detail::invalid_argument("grid.dims()", grid.dims(), why);
}

// Half the k-space extent per axis: the scale from normalised units to cycles/FOV.
Vec3 half_extents(const Grid &grid) { return {grid.nx() / 2.0, grid.ny() / 2.0, grid.nz() / 2.0}; }

// Rounds a coordinate in [-half, half) to float. Rounding to nearest could land exactly on
// +half when the value is within half an ulp of it; step back one ulp in that case. The
// lower edge needs nothing: -half is representable and rounding is monotone.
float to_float_inside(double k, double half) {
  const float f = static_cast<float>(k);
  const float top = static_cast<float>(half);
  return f < top ? f : std::nextafter(top, 0.0f);
}

KPoint store(const Vec3 &k, const Vec3 &half) {
  return {to_float_inside(k[0], half[0]), to_float_inside(k[1], half[1]),
          to_float_inside(k[2], half[2])};
}

// Position of readout sample j in normalised units: -1 .. 1 - 2/readout, DC at readout/2.
double readout_position(int j, int readout) {
  return 2.0 * static_cast<double>(j - readout / 2) / static_cast<double>(readout);
}

// A spoke's direction flipped, if needed, so its components sum to >= 0 (see the file
// comment: this is what keeps the spoke's -n/2 end away from +n/2 on every axis).
Vec3 oriented(Vec3 d) {
  if (d[0] + d[1] + d[2] < 0)
    for (double &c : d)
      c = -c;
  return d;
}

// Appends one full-diameter spoke through `centre` (cycles/FOV) along unit direction d.
void append_spoke(std::vector<KPoint> &out, const Vec3 &d, int readout, const Vec3 &half,
                  const Vec3 &centre = {0, 0, 0}) {
  for (int j = 0; j < readout; ++j) {
    const double tau = readout_position(j, readout);
    Vec3 k{};
    for (int a = 0; a < 3; ++a)
      k[a] = centre[a] + tau * d[a] * half[a];
    out.push_back(store(k, half));
  }
}

// Angle of 2D spoke s in [0, pi).
double spoke_angle(int s, int spokes, SpokeOrder order) {
  if (order == SpokeOrder::GoldenAngle)
    return std::fmod(s * kRadialGoldenAngle, kPi);
  return kPi * s / spokes;
}

// The 2D radial pattern in the (kx, ky) plane at height kz: spokes x readout points.
// Spoke s lies on the line at spoke_angle(s); for angles above 3 pi/4 `oriented` makes it
// run from the other end, which keeps the line (and the sample set's symmetry) unchanged.
void append_star(std::vector<KPoint> &out, int spokes, int readout, SpokeOrder order,
                 const Vec3 &half, double kz) {
  for (int s = 0; s < spokes; ++s) {
    const double theta = spoke_angle(s, spokes, order);
    append_spoke(out, oriented({std::cos(theta), std::sin(theta), 0.0}), readout, half,
                 {0.0, 0.0, kz});
  }
}

void validate_spokes(int spokes, int readout) {
  require_positive("spokes", spokes);
  require_positive("readout", readout);
}

// Fibonacci-lattice direction s of `count` on the upper hemisphere: heights evenly spaced
// (equal-area bands, by Archimedes' hat-box theorem), azimuth advancing by the golden angle.
// A hemisphere suffices because each spoke covers both d and -d.
Vec3 fibonacci_direction(int s, int count) {
  const double z = 1.0 - (s + 0.5) / count;
  const double rho = std::sqrt(std::max(0.0, 1.0 - z * z));
  const double azimuth = s * kSphereGoldenAngle;
  return {rho * std::cos(azimuth), rho * std::sin(azimuth), z};
}

// Direction s of the 2D golden-means sequence (Chan et al. 2009) on the upper hemisphere:
// phi1 and phi2 are the eigenvector components of the 3x3 Fibonacci generalisation that make the
// pairs (frac(s phi1), frac(s phi2)) a low-discrepancy sequence on the unit square; height
// uniform in [0, 1) is area-uniform on the hemisphere (Archimedes' hat-box theorem).
Vec3 golden_means_direction(int s) {
  constexpr double phi1 = 0.465571231876768, phi2 = 0.682327803828019;
  const double z = std::fmod(s * phi1, 1.0);
  const double azimuth = 2.0 * kPi * std::fmod(s * phi2, 1.0);
  const double rho = std::sqrt(std::max(0.0, 1.0 - z * z));
  return {rho * std::cos(azimuth), rho * std::sin(azimuth), z};
}

} // namespace

Trajectory cartesian(const Grid &grid) {
  std::vector<KPoint> points;
  points.reserve(static_cast<std::size_t>(grid.voxels()));
  for (std::int64_t iz = 0; iz < grid.nz(); ++iz)
    for (std::int64_t iy = 0; iy < grid.ny(); ++iy)
      for (std::int64_t ix = 0; ix < grid.nx(); ++ix)
        points.push_back({static_cast<float>(grid.coordinate(0, ix)),
                          static_cast<float>(grid.coordinate(1, iy)),
                          static_cast<float>(grid.coordinate(2, iz))});
  return Trajectory(grid.dims(), std::move(points));
}

Trajectory radial(const Grid &grid, int spokes, int readout, SpokeOrder order) {
  require_dims(grid, 2, "radial");
  validate_spokes(spokes, readout);
  std::vector<KPoint> points;
  points.reserve(static_cast<std::size_t>(spokes) * static_cast<std::size_t>(readout));
  append_star(points, spokes, readout, order, half_extents(grid), 0.0);
  return Trajectory(2, std::move(points));
}

Trajectory spiral(const Grid &grid, int interleaves, int samples_per_interleave,
                  double undersampling) {
  require_dims(grid, 2, "spiral");
  require_positive("interleaves", interleaves);
  require_positive("samples_per_interleave", samples_per_interleave);
  if (!(undersampling > 0) || !std::isfinite(undersampling))
    detail::invalid_argument("undersampling", undersampling, "must be positive and finite");

  const Vec3 half = half_extents(grid);
  // Adjacent arms of the whole trajectory are `undersampling` cycles/FOV apart along the
  // longer axis, so each interleave makes n/(2 * interleaves * undersampling) turns.
  const double n_max = static_cast<double>(std::max(grid.nx(), grid.ny()));
  const double theta_max = 2.0 * kPi * n_max / (2.0 * interleaves * undersampling);

  std::vector<KPoint> points;
  points.reserve(static_cast<std::size_t>(interleaves) *
                 static_cast<std::size_t>(samples_per_interleave));
  for (int i = 0; i < interleaves; ++i) {
    const double rotation = 2.0 * kPi * i / interleaves;
    for (int j = 0; j < samples_per_interleave; ++j) {
      // r = sqrt(t) makes arc length ~ linear in t (constant linear velocity, the
      // gradient-limited regime of real spirals) instead of crowding the centre; the
      // Archimedean shape r ~ theta is kept by theta = theta_max * r. r < 1 always.
      const double r = std::sqrt(static_cast<double>(j) / samples_per_interleave);
      const double theta = theta_max * r + rotation;
      points.push_back(
          store({r * std::cos(theta) * half[0], r * std::sin(theta) * half[1], 0.0}, half));
    }
  }
  return Trajectory(2, std::move(points));
}

Trajectory propeller(const Grid &grid, int blades, int lines_per_blade, int readout) {
  require_dims(grid, 2, "propeller");
  require_positive("blades", blades);
  require_positive("lines_per_blade", lines_per_blade);
  require_positive("readout", readout);

  const Vec3 half = half_extents(grid);
  // Blade sample (j, l) sits at ((j - R/2), (l - L/2)) * spacing. Its farthest sample is
  // hypot(R/2, L/2) spacings from the centre; putting that corner half a spacing inside the
  // unit disc keeps every rotation of the blade strictly inside the grid. For R = n this is
  // within a few per cent of 1 cycle/FOV, i.e. Nyquist-spaced Cartesian lines.
  const double corner =
      std::hypot(static_cast<double>(readout / 2), static_cast<double>(lines_per_blade / 2));
  const double spacing = 1.0 / (corner + 0.5);

  std::vector<KPoint> points;
  points.reserve(static_cast<std::size_t>(blades) * static_cast<std::size_t>(lines_per_blade) *
                 static_cast<std::size_t>(readout));
  for (int b = 0; b < blades; ++b) {
    const double angle = kPi * b / blades;
    const double c = std::cos(angle), s = std::sin(angle);
    for (int l = 0; l < lines_per_blade; ++l) {
      const double v = (l - lines_per_blade / 2) * spacing; // phase-encode offset
      for (int j = 0; j < readout; ++j) {
        const double u = (j - readout / 2) * spacing; // readout position
        points.push_back(store({(u * c - v * s) * half[0], (u * s + v * c) * half[1], 0.0}, half));
      }
    }
  }
  return Trajectory(2, std::move(points));
}

Trajectory stack_of_stars(const Grid &grid, int spokes, int readout, SpokeOrder order) {
  require_dims(grid, 3, "stack_of_stars");
  validate_spokes(spokes, readout);
  const Vec3 half = half_extents(grid);
  std::vector<KPoint> points;
  points.reserve(static_cast<std::size_t>(grid.nz()) * static_cast<std::size_t>(spokes) *
                 static_cast<std::size_t>(readout));
  // Partition-major: each kz plane holds one complete star, so a partition's samples are
  // contiguous (convenient for hybrid FFT-along-z reconstructions).
  for (std::int64_t iz = 0; iz < grid.nz(); ++iz)
    append_star(points, spokes, readout, order, half, static_cast<double>(grid.coordinate(2, iz)));
  return Trajectory(3, std::move(points));
}

Trajectory koosh(const Grid &grid, int spokes, int readout, SpokeOrder order) {
  require_dims(grid, 3, "koosh");
  validate_spokes(spokes, readout);
  const Vec3 half = half_extents(grid);
  std::vector<KPoint> points;
  points.reserve(static_cast<std::size_t>(spokes) * static_cast<std::size_t>(readout));
  for (int s = 0; s < spokes; ++s)
    append_spoke(points,
                 oriented(order == SpokeOrder::GoldenAngle ? golden_means_direction(s) : fibonacci_direction(s, spokes)),
                 readout, half);
  return Trajectory(3, std::move(points));
}

Trajectory uniform_random(const Grid &grid, std::size_t m, std::uint64_t seed) {
  if (m == 0)
    detail::invalid_argument("m", m, "must be positive");
  const int dims = grid.dims();
  const Vec3 half = half_extents(grid);
  // mt19937_64 is fully specified by the standard and the 53-bit conversion below is ours,
  // so a seed gives the same trajectory with every standard library (the distributions in
  // <random> are not specified bit-for-bit).
  std::mt19937_64 rng(seed);
  const auto uniform01 = [&rng] { return static_cast<double>(rng() >> 11) * 0x1p-53; };
  std::vector<KPoint> points;
  points.reserve(m);
  for (std::size_t i = 0; i < m; ++i) {
    Vec3 k{0, 0, 0};
    for (int a = 0; a < dims; ++a)
      k[a] = (2.0 * uniform01() - 1.0) * half[a];
    points.push_back(store(k, half));
  }
  return Trajectory(dims, std::move(points));
}

} // namespace mri::traj
