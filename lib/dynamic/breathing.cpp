// The free-breathing phantom (include/mri/breathing.hpp): Lujan's respiratory trace, the affine
// motion of each state, the exact k-space of the moving phantom, its rasterised truth and the true
// displacement field between two states.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "mri/breathing.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/error.hpp"

namespace mri {
namespace {

constexpr double kPi = std::numbers::pi;
using Mat3 = std::array<std::array<double, 3>, 3>;
using Vec3 = std::array<double, 3>;

double determinant(const Mat3 &a) {
  return a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
         a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
}

// A^{-1} by cofactors (the caller has checked det A != 0).
Mat3 inverse(const Mat3 &a) {
  const double d = determinant(a);
  Mat3 inv{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      inv[i][j] = (a[r0][c0] * a[r1][c1] - a[r0][c1] * a[r1][c0]) / d;
    }
  return inv;
}

Mat3 multiply(const Mat3 &a, const Mat3 &b) {
  Mat3 c{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) c[i][j] += a[i][k] * b[k][j];
  return c;
}

Vec3 apply(const Mat3 &a, const Vec3 &x) {
  return {a[0][0] * x[0] + a[0][1] * x[1] + a[0][2] * x[2], a[1][0] * x[0] + a[1][1] * x[1] + a[1][2] * x[2],
          a[2][0] * x[0] + a[2][1] * x[1] + a[2][2] * x[2]};
}

void check_motion(const AffineMotion &m, const std::string &name) {
  for (const auto &row : m.matrix)
    for (double v : row)
      if (!std::isfinite(v)) detail::invalid_argument(name + ".matrix", v, "must be finite");
  for (double v : m.translation)
    if (!std::isfinite(v)) detail::invalid_argument(name + ".translation", v, "must be finite");
  const double det = determinant(m.matrix);
  if (!(std::abs(det) > 1e-9)) detail::invalid_argument(name + " det(A)", det, "must not be singular");
}

// Box-Muller on mt19937_64's specified output (portable across standard libraries).
double normal(std::mt19937_64 &rng) {
  const auto uniform = [&rng] { return static_cast<double>(rng() >> 11) * 0x1p-53; };
  return std::sqrt(-2.0 * std::log(1.0 - uniform())) * std::cos(2 * kPi * uniform());
}

void check_options(const BreathingOptions &o) {
  if (!std::isfinite(o.amplitude_voxels)) detail::invalid_argument("amplitude_voxels", o.amplitude_voxels, "must be finite");
  if (!std::isfinite(o.ap_expansion) || !(o.ap_expansion > -0.5))
    detail::invalid_argument("ap_expansion", o.ap_expansion, "must be finite and above -0.5 (the object may not fold)");
  if (!(o.period_seconds > 0) || !std::isfinite(o.period_seconds))
    detail::invalid_argument("period_seconds", o.period_seconds, "must be positive and finite");
  if (!(o.readout_seconds > 0) || !std::isfinite(o.readout_seconds))
    detail::invalid_argument("readout_seconds", o.readout_seconds, "must be positive and finite");
  if (o.sharpness < 1 || o.sharpness > 8) detail::invalid_argument("sharpness", o.sharpness, "must be in [1, 8]");
  if (!(o.irregularity >= 0 && o.irregularity < 0.5))
    detail::invalid_argument("irregularity", o.irregularity, "must be in [0, 0.5)");
}

// A coil's series coefficients a_cf (breathing.hpp): recovered exactly from its maps on an 8^d
// grid by the DFT, since the series' frequencies (|f_a| <= 2) lie below 8 / 2 (no aliasing).
struct CoilTerm {
  std::array<int, 3> f;
  std::vector<cdouble> a; // per coil
};

std::vector<CoilTerm> coil_terms(int dims, int coils) {
  if (coils == 1) return {{{0, 0, 0}, {cdouble(1.0)}}};
  const Grid small(8, 8, dims == 3 ? 8 : 1);
  const CoilSensitivities maps = SimulatedCoils(dims, coils).maps(small);
  const int fz = dims == 3 ? 3 : 0;
  std::vector<CoilTerm> terms;
  double largest = 0;
  for (int z = -fz; z <= fz; ++z)
    for (int y = -3; y <= 3; ++y)
      for (int x = -3; x <= 3; ++x) {
        CoilTerm t{{x, y, z}, std::vector<cdouble>(static_cast<std::size_t>(coils), 0.0)};
        for (std::int64_t v = 0; v < small.voxels(); ++v) {
          const std::int64_t i[3] = {v % 8, (v / 8) % 8, v / 64};
          double phase = 0;
          for (int a = 0; a < dims; ++a) phase -= 2 * kPi * t.f[static_cast<std::size_t>(a)] * static_cast<double>(small.coordinate(a, i[a])) / 8.0;
          const cdouble e(std::cos(phase), std::sin(phase));
          for (int c = 0; c < coils; ++c)
            t.a[static_cast<std::size_t>(c)] += cdouble(maps.map(c)[static_cast<std::size_t>(v)]) * e;
        }
        for (cdouble &a : t.a) a /= static_cast<double>(small.voxels());
        for (const cdouble &a : t.a) largest = std::max(largest, std::abs(a));
        terms.push_back(std::move(t));
      }
  // Frequencies absent from the series come out at float rounding of the maps: dropped.
  std::erase_if(terms, [&](const CoilTerm &t) {
    return std::all_of(t.a.begin(), t.a.end(), [&](const cdouble &a) { return std::abs(a) < 1e-5 * largest; });
  });
  return terms;
}

// An Ellipsoid in voxel-independent form (normalised units, mri/phantom.hpp).
struct Shape {
  double intensity;
  Vec3 semi, centre;
  double cos_phi, sin_phi;
};

// Radius of normalised point u in the shape's unit-ball frame (<= 1 inside); rotation by -phi
// about z, as lib/phantom.cpp.
double unit_radius(const Shape &s, const Vec3 &u, int dims) {
  const Vec3 d{u[0] - s.centre[0], u[1] - s.centre[1], u[2] - s.centre[2]};
  const Vec3 p{d[0] * s.cos_phi + d[1] * s.sin_phi, -d[0] * s.sin_phi + d[1] * s.cos_phi, d[2]};
  double q = 0;
  for (int a = 0; a < dims; ++a) q += (p[a] / s.semi[a]) * (p[a] / s.semi[a]);
  return std::sqrt(q);
}

} // namespace

std::vector<double> breathing_trace(std::int64_t readouts, const BreathingOptions &o) {
  if (readouts < 1) detail::invalid_argument("readouts", readouts, "must be positive");
  check_options(o);
  std::mt19937_64 rng(o.seed);
  std::vector<double> trace(static_cast<std::size_t>(readouts));
  double cycle_start = 0, period = 0, amplitude = 0;
  const auto next_cycle = [&] {
    cycle_start += period;
    period = o.period_seconds * std::clamp(1 + o.irregularity * normal(rng), 0.5, 1.5);
    amplitude = std::clamp(1 + o.irregularity * normal(rng), 0.5, 1.5);
  };
  next_cycle();
  for (std::int64_t r = 0; r < readouts; ++r) {
    const double t = static_cast<double>(r) * o.readout_seconds;
    while (t >= cycle_start + period) next_cycle();
    const double s = std::sin(kPi * (t - cycle_start) / period);
    trace[static_cast<std::size_t>(r)] = amplitude * std::pow(s * s, o.sharpness);
  }
  return trace;
}

AffineMotion breathing_motion(double state, int dims, const BreathingOptions &o) {
  if (!std::isfinite(state)) detail::invalid_argument("state", state, "must be finite");
  if (dims != 2 && dims != 3) detail::invalid_argument("dims", dims, "must be 2 or 3");
  const int si = dims == 3 ? 2 : 1, ap = dims == 3 ? 1 : 0;
  AffineMotion m;
  m.matrix[ap][ap] = 1 + o.ap_expansion * state;
  m.translation[si] = o.amplitude_voxels * state;
  return m;
}

std::vector<cfloat> moving_phantom_kspace(const Phantom &phantom, const Trajectory &trajectory, const Grid &grid,
                                          int samples_per_readout, std::span<const AffineMotion> motion, int coils) {
  const std::size_t m = trajectory.size();
  if (samples_per_readout <= 0 || m % static_cast<std::size_t>(samples_per_readout) != 0)
    detail::invalid_argument("samples_per_readout", samples_per_readout,
                             "must be positive and divide the trajectory's " + std::to_string(m) + " samples");
  const std::size_t s = static_cast<std::size_t>(samples_per_readout), readouts = m / s;
  if (motion.size() != readouts)
    detail::invalid_argument("motion.size()", motion.size(), "must equal the readouts, " + std::to_string(readouts));
  for (std::size_t r = 0; r < readouts; ++r) check_motion(motion[r], "motion[" + std::to_string(r) + "]");
  if (coils < 1) detail::invalid_argument("coils", coils, "must be at least 1");
  const int dims = trajectory.dims();
  const Vec3 n{static_cast<double>(grid.nx()), static_cast<double>(grid.ny()), static_cast<double>(grid.nz())};

  std::vector<cdouble> sum(m * static_cast<std::size_t>(coils), 0.0);
  std::vector<KPoint> moved(m);
  std::vector<cdouble> factor(m); // |det A| exp(-2 pi i (k - f).t / n) per sample
  for (const CoilTerm &term : coil_terms(dims, coils)) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(m); ++i) {
      const AffineMotion &mo = motion[static_cast<std::size_t>(i) / s];
      const KPoint &k = trajectory[static_cast<std::size_t>(i)];
      const Vec3 q{k.kx - static_cast<double>(term.f[0]), k.ky - static_cast<double>(term.f[1]),
                   dims == 3 ? k.kz - static_cast<double>(term.f[2]) : 0.0};
      Vec3 kp{0, 0, 0};
      double phase = 0;
      for (int b = 0; b < dims; ++b)
        for (int a = 0; a < dims; ++a) kp[b] += n[b] * mo.matrix[a][b] * q[a] / n[a];
      for (int a = 0; a < dims; ++a) phase -= 2 * kPi * q[a] * mo.translation[a] / n[a];
      moved[static_cast<std::size_t>(i)] = {static_cast<float>(kp[0]), static_cast<float>(kp[1]), static_cast<float>(kp[2])};
      factor[static_cast<std::size_t>(i)] = std::polar(std::abs(determinant(mo.matrix)), phase);
    }
    const std::vector<cfloat> rho = phantom.kspace(Trajectory(dims, moved), grid);
    for (int c = 0; c < coils; ++c) {
      const cdouble a = term.a[static_cast<std::size_t>(c)];
      cdouble *dst = sum.data() + static_cast<std::size_t>(c) * m;
      for (std::size_t i = 0; i < m; ++i) dst[i] += a * factor[i] * cdouble(rho[i]);
    }
  }
  return std::vector<cfloat>(sum.begin(), sum.end());
}

Image moved_phantom_image(const Phantom &phantom, const Grid &grid, const AffineMotion &motion, int supersample) {
  const int dims = phantom.dims();
  if (grid.dims() != dims) detail::invalid_argument("grid.dims()", grid.dims(), "differs from the phantom's dims");
  if (supersample < 1) detail::invalid_argument("supersample", supersample, "must be at least 1");
  check_motion(motion, "motion");
  const Mat3 inv = inverse(motion.matrix);
  const Vec3 n{static_cast<double>(grid.nx()), static_cast<double>(grid.ny()), static_cast<double>(grid.nz())};
  // u = diag(2/n) A^{-1} (x - t): voxel coordinates of the moved object -> the phantom's units.
  Mat3 to_u{};
  double to_u_norm2 = 0;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      to_u[a][b] = a < dims && b < dims ? 2.0 / n[a] * inv[a][b] : 0.0;
      to_u_norm2 += to_u[a][b] * to_u[a][b];
    }
  std::vector<Shape> shapes;
  for (const Ellipsoid &e : phantom.shapes()) {
    const double phi = e.phi_deg * kPi / 180.0;
    shapes.push_back({e.intensity, {e.a, e.b, e.c}, {e.x0, e.y0, e.z0}, std::cos(phi), std::sin(phi)});
  }
  const int sz = dims == 3 ? supersample : 1;
  const double half_diagonal = std::sqrt(static_cast<double>(dims)) / 2.0;
  Image image(grid);
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t iz = 0; iz < grid.nz(); ++iz)
    for (std::int64_t iy = 0; iy < grid.ny(); ++iy)
      for (std::int64_t ix = 0; ix < grid.nx(); ++ix) {
        const Vec3 x{static_cast<double>(grid.coordinate(0, ix)), static_cast<double>(grid.coordinate(1, iy)),
                     dims == 3 ? static_cast<double>(grid.coordinate(2, iz)) : 0.0};
        const auto to_normalised = [&](const Vec3 &p) {
          return apply(to_u, {p[0] - motion.translation[0], p[1] - motion.translation[1], p[2] - motion.translation[2]});
        };
        const Vec3 centre = to_normalised(x);
        double value = 0;
        for (const Shape &sh : shapes) {
          // How far the unit-ball radius can move within the cell (Lipschitz bound of the map).
          const double min_semi = dims == 3 ? std::min({sh.semi[0], sh.semi[1], sh.semi[2]}) : std::min(sh.semi[0], sh.semi[1]);
          const double reach = std::sqrt(to_u_norm2) * half_diagonal / min_semi + 1e-9;
          const double rc = unit_radius(sh, centre, dims);
          if (rc + reach < 1.0) { value += sh.intensity; continue; }
          if (rc - reach > 1.0) continue;
          int inside = 0;
          for (int kz = 0; kz < sz; ++kz)
            for (int ky = 0; ky < supersample; ++ky)
              for (int kx = 0; kx < supersample; ++kx) {
                const Vec3 p{x[0] + (kx + 0.5) / supersample - 0.5, x[1] + (ky + 0.5) / supersample - 0.5,
                             dims == 3 ? x[2] + (kz + 0.5) / sz - 0.5 : 0.0};
                inside += unit_radius(sh, to_normalised(p), dims) <= 1.0 ? 1 : 0;
              }
          value += sh.intensity * inside / (static_cast<double>(supersample) * supersample * sz);
        }
        image.at(ix, iy, iz) = cfloat(static_cast<float>(value), 0.0f);
      }
  return image;
}

DisplacementField motion_displacement(const Grid &grid, const AffineMotion &fixed, const AffineMotion &moving) {
  check_motion(fixed, "fixed");
  check_motion(moving, "moving");
  const Mat3 map = multiply(moving.matrix, inverse(fixed.matrix));
  DisplacementField w(grid);
  for (std::int64_t iz = 0; iz < grid.nz(); ++iz)
    for (std::int64_t iy = 0; iy < grid.ny(); ++iy)
      for (std::int64_t ix = 0; ix < grid.nx(); ++ix) {
        const Vec3 x{static_cast<double>(grid.coordinate(0, ix)), static_cast<double>(grid.coordinate(1, iy)),
                     grid.dims() == 3 ? static_cast<double>(grid.coordinate(2, iz)) : 0.0};
        const Vec3 y = apply(map, {x[0] - fixed.translation[0], x[1] - fixed.translation[1], x[2] - fixed.translation[2]});
        w.u.at(ix, iy, iz) = static_cast<float>(y[0] + moving.translation[0] - x[0]);
        w.v.at(ix, iy, iz) = static_cast<float>(y[1] + moving.translation[1] - x[1]);
        w.w.at(ix, iy, iz) = grid.dims() == 3 ? static_cast<float>(y[2] + moving.translation[2] - x[2]) : 0.0f;
      }
  return w;
}

BreathingAcquisition simulate_breathing(const Phantom &phantom, const Trajectory &trajectory, const Grid &grid,
                                        int samples_per_readout, int coils, const BreathingOptions &options, double snr,
                                        std::uint64_t noise_seed) {
  if (samples_per_readout <= 0 || trajectory.size() % static_cast<std::size_t>(samples_per_readout) != 0)
    detail::invalid_argument("samples_per_readout", samples_per_readout,
                             "must be positive and divide the trajectory's " + std::to_string(trajectory.size()) + " samples");
  if (snr < 0 || !std::isfinite(snr)) detail::invalid_argument("snr", snr, "must be finite and >= 0 (0: no noise)");
  BreathingAcquisition acq;
  const auto readouts = static_cast<std::int64_t>(trajectory.size() / static_cast<std::size_t>(samples_per_readout));
  acq.trace = breathing_trace(readouts, options);
  for (double s : acq.trace) acq.motion.push_back(breathing_motion(s, trajectory.dims(), options));
  std::vector<cfloat> samples = moving_phantom_kspace(phantom, trajectory, grid, samples_per_readout, acq.motion, coils);
  if (snr > 0) add_noise(samples, snr, noise_seed);
  acq.data = KSpaceData(trajectory, std::move(samples), {}, coils);
  acq.layout = {samples_per_readout, options.readout_seconds, {}};
  return acq;
}

} // namespace mri
