// Synthetic sequences with known motion (tests, benchmarks, example): analytic fields, textured and
// Shepp-Logan volumes, and the moving frame produced from a fixed frame and a field.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "mri/detail/motion_stencil.hpp"
#include "mri/error.hpp"
#include "mri/motion.hpp"
#include "mri/phantom.hpp"

namespace mri {
namespace {

// Voxel (x, y, z) relative to the volume's centre.
struct Centred {
  double x, y, z;
};
Centred centred(const Grid &g, std::int64_t x, std::int64_t y, std::int64_t z) {
  return {x - (g.nx() - 1) / 2.0, y - (g.ny() - 1) / 2.0, z - (g.nz() - 1) / 2.0};
}

// The three displacement components of `motion` at centred position p. R: the window's radius.
void field_at(SyntheticMotion motion, double amplitude, double R, double quarter, const Centred &p,
              double (&d)[3]) {
  const double r2 = (p.x * p.x + p.y * p.y + p.z * p.z) / (R * R), window = std::exp(-0.5 * r2);
  switch (motion) {
  case SyntheticMotion::Translation:
    d[0] = amplitude, d[1] = -0.6 * amplitude, d[2] = 0.4 * amplitude;
    return;
  case SyntheticMotion::Rotation: { // rigid rotation about z by amplitude / (n/4) radians
    const double t = amplitude / quarter;
    d[0] = std::cos(t) * p.x - std::sin(t) * p.y - p.x,
    d[1] = std::sin(t) * p.x + std::cos(t) * p.y - p.y, d[2] = 0;
    return;
  }
  case SyntheticMotion::Swirl: { // curl of (0, 0, psi), psi = s exp(-r^2 / 2R^2): div = 0 exactly
    const double s = amplitude * R * std::exp(0.5); // |grad psi| peaks at s / R e^-1/2 = amplitude
    d[0] = -s * p.y / (R * R) * window, d[1] = s * p.x / (R * R) * window, d[2] = 0;
    return;
  }
  case SyntheticMotion::Compressive: { // -k p exp(-r^2 / 2R^2): contraction towards the centre
    const double k =
        amplitude * std::exp(0.5) / R; // |d| peaks at r = R with k R e^-1/2 = amplitude
    d[0] = -k * p.x * window, d[1] = -k * p.y * window, d[2] = -k * p.z * window;
    return;
  }
  }
}

} // namespace

DisplacementField synthetic_field(const Grid &grid, SyntheticMotion motion, double amplitude) {
  if (!std::isfinite(amplitude))
    detail::invalid_argument("amplitude", amplitude, "must be finite");
  DisplacementField f(grid);
  const double R = std::min({grid.nx(), grid.ny(), grid.nz()}) / 5.0, quarter = grid.nx() / 4.0;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t z = 0; z < grid.nz(); ++z)
    for (std::int64_t y = 0; y < grid.ny(); ++y)
      for (std::int64_t x = 0; x < grid.nx(); ++x) {
        double d[3] = {0, 0, 0};
        field_at(motion, amplitude, R, quarter, centred(grid, x, y, z), d);
        f.u.at(x, y, z) = float(d[0]), f.v.at(x, y, z) = float(d[1]), f.w.at(x, y, z) = float(d[2]);
      }
  return f;
}

RealVolume textured_volume(const Grid &grid, std::uint64_t seed) {
  // 12 plane waves with wavelengths 5..14 voxels in random directions: gradients in every
  // direction everywhere (no aperture problem at the scale of K_rho), smooth enough to warp.
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  struct Wave {
    double k[3], phase;
  };
  std::vector<Wave> waves(12);
  for (Wave &w : waves) {
    const double n[3] = {normal(rng), normal(rng), normal(rng)};
    const double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) + 1e-12;
    const double k = 2 * M_PI / (5.0 + 9.0 * uni(rng));
    for (int a = 0; a < 3; ++a)
      w.k[a] = k * n[a] / len;
    w.phase = 2 * M_PI * uni(rng);
  }
  RealVolume v(grid);
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t z = 0; z < grid.nz(); ++z)
    for (std::int64_t y = 0; y < grid.ny(); ++y)
      for (std::int64_t x = 0; x < grid.nx(); ++x) {
        double s = 0;
        for (const Wave &w : waves)
          s += std::sin(w.k[0] * x + w.k[1] * y + w.k[2] * z + w.phase);
        v.at(x, y, z) = float(0.5 + 0.5 * s / std::sqrt(2.0 * waves.size()) * 1.5);
      }
  return v;
}

RealVolume shepp_logan_volume(const Grid &grid) {
  const Image phantom = Phantom::shepp_logan_3d().rasterize(grid, 2);
  const RealVolume texture = textured_volume(grid, 7);
  RealVolume v(grid);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = std::abs(phantom[i]) + 0.1f * (texture[i] - 0.5f);
  return v;
}

RealVolume warp(const RealVolume &volume, const DisplacementField &field) {
  if (!(volume.grid() == field.grid()))
    detail::invalid_argument("field.grid().voxels()", field.grid().voxels(),
                             "differs from the volume's grid");
  const Grid &g = volume.grid();
  RealVolume out(g);
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const std::int64_t v = g.index(x, y, z);
        out[v] =
            detail::motion::trilinear(volume.data(), g.nx(), g.ny(), g.nz(), float(x) + field.u[v],
                                      float(y) + field.v[v], float(z) + field.w[v]);
      }
  return out;
}

RealVolume apply_motion(const RealVolume &fixed, const DisplacementField &field) {
  // moving(y) = fixed(p) where p + field(p) = y: p by the fixed-point iteration p <- y - field(p)
  // (a contraction while |grad field| < 1), then trilinear sampling of fixed at p.
  if (!(fixed.grid() == field.grid()))
    detail::invalid_argument("field.grid().voxels()", field.grid().voxels(),
                             "differs from the volume's grid");
  const Grid &g = fixed.grid();
  DisplacementField inverse(g);
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const float q[3] = {float(x), float(y), float(z)};
        float p[3] = {q[0], q[1], q[2]};
        for (int it = 0; it < 12; ++it) { // error shrinks ~|grad field| (< 0.3) per step
          const RealVolume *c[3] = {&field.u, &field.v, &field.w};
          float next[3];
          for (int a = 0; a < 3; ++a)
            next[a] = q[a] - detail::motion::trilinear(c[a]->data(), g.nx(), g.ny(), g.nz(), p[0],
                                                       p[1], p[2]);
          for (int a = 0; a < 3; ++a)
            p[a] = next[a];
        }
        const std::int64_t v = g.index(x, y, z);
        inverse.u[v] = p[0] - q[0], inverse.v[v] = p[1] - q[1], inverse.w[v] = p[2] - q[2];
      }
  return warp(fixed, inverse);
}

RealVolume normalised_magnitude(const Image &image) {
  // |z| as sqrt(re^2 + im^2) in double: no overflow for any float, correctly rounded to float, and
  // vectorisable (std::abs's hypotf is not), in parallel: the chain registers every state through
  // this on the host.
  RealVolume v(image.grid());
  const auto n = static_cast<std::int64_t>(v.size());
  const cfloat *in = image.values().data();
  float *out = v.values().data();
  float peak = 0;
#pragma omp parallel for simd schedule(static) reduction(max : peak)
  for (std::int64_t i = 0; i < n; ++i) {
    const double re = in[i].real(), im = in[i].imag();
    out[i] = static_cast<float>(std::sqrt(re * re + im * im));
    peak = std::max(peak, out[i]);
  }
  if (peak > 0) {
    const float scale = peak;
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) out[i] /= scale;
  }
  return v;
}

void shift_kspace(std::vector<cfloat> &samples, const Trajectory &trajectory, const Grid &grid,
                  const std::array<double, 3> &d) {
  if (samples.size() != trajectory.size())
    detail::invalid_argument("samples.size()", samples.size(),
                             "differs from the trajectory's size");
  for (int a = 0; a < 3; ++a)
    if (!std::isfinite(d[a]))
      detail::invalid_argument("d", d[a], "must be finite");
  for (std::size_t m = 0; m < samples.size(); ++m) {
    const KPoint &k = trajectory[m];
    const double phase = -2 * M_PI *
                         (k.kx * d[0] / double(grid.nx()) + k.ky * d[1] / double(grid.ny()) +
                          k.kz * d[2] / double(grid.nz()));
    samples[m] *= cfloat(float(std::cos(phase)), float(std::sin(phase)));
  }
}

void add_noise(RealVolume &volume, double std, std::uint64_t seed) {
  if (!std::isfinite(std) || std < 0)
    detail::invalid_argument("std", std, "must be finite and >= 0");
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, std);
  for (float &x : volume.values())
    x += float(g(rng));
}

SyntheticSequence beating_sequence(const RealVolume &first, int frames, double amplitude) {
  if (frames < 2)
    detail::invalid_argument("frames", frames, "must be at least 2");
  if (!std::isfinite(amplitude))
    detail::invalid_argument("amplitude", amplitude, "must be finite");
  const Grid &grid = first.grid();
  const DisplacementField squeeze = synthetic_field(grid, SyntheticMotion::Compressive, amplitude);
  const DisplacementField relax = synthetic_field(grid, SyntheticMotion::Compressive, -amplitude);
  SyntheticSequence s{{first}, {}};
  for (int k = 0; k + 1 < frames; ++k) {
    s.truth.push_back(k % 2 ? relax : squeeze);
    s.frames.push_back(apply_motion(s.frames.back(), s.truth.back()));
  }
  return s;
}

} // namespace mri
