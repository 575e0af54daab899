#pragma once
// Shared by the MCIR tests: random smooth fields, the float64 trilinear warp and its transpose
// written out independently of lib/mcir (clamp-to-edge, the convention of mri::warp), and the
// problems the MCIR tests solve (random states, the breathing phantom, all states as one
// acquisition).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "mri/coil_simulation.hpp"
#include "mri/image.hpp"
#include "mri/kspace.hpp"
#include "mri/linear_operator.hpp"
#include "mri/mcir.hpp"
#include "mri/motion.hpp"
#include "mri/phantom.hpp"
#include "mri/sense.hpp"
#include "mri/trajectory.hpp"
#include "test_support.hpp"

namespace mri::test::mcir {

inline std::uint64_t fresh_seed() { return std::random_device{}(); }

// A smooth random field: per component a sum of 3 random plane waves (wavelengths 6-20 voxels) of
// peak `amplitude` voxels in total; w zero on a 2D grid.
inline DisplacementField smooth_field(const Grid &g, double amplitude, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), wavelength(6.0, 20.0), phase(0.0, 2 * M_PI);
  DisplacementField f(g);
  RealVolume *c[3] = {&f.u, &f.v, &f.w};
  for (int a = 0; a < g.dims(); ++a) {
    for (int wave = 0; wave < 3; ++wave) {
      double dir[3] = {unit(rng), unit(rng), g.dims() == 3 ? unit(rng) : 0.0};
      const double norm = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]) + 1e-12;
      const double k = 2 * M_PI / wavelength(rng), p = phase(rng), amp = amplitude / 3 * unit(rng);
      for (std::int64_t z = 0; z < g.nz(); ++z)
        for (std::int64_t y = 0; y < g.ny(); ++y)
          for (std::int64_t x = 0; x < g.nx(); ++x)
            c[a]->at(x, y, z) += static_cast<float>(
                amp * std::sin(k * (dir[0] * double(x) + dir[1] * double(y) + dir[2] * double(z)) / norm + p));
    }
  }
  return f;
}

// Clamp-to-edge trilinear stencil of position p in double: corner indices and weights.
struct Corners {
  std::int64_t index[8];
  double weight[8];
};
inline Corners corners_f64(const Grid &g, const double (&p)[3]) {
  std::int64_t i0[3], i1[3];
  double t[3];
  for (int a = 0; a < 3; ++a) {
    const double n = static_cast<double>(g.extent(a));
    const double q = std::clamp(p[a], 0.0, n - 1);
    i0[a] = static_cast<std::int64_t>(std::floor(q));
    i1[a] = std::min<std::int64_t>(i0[a] + 1, g.extent(a) - 1);
    t[a] = q - double(i0[a]);
  }
  Corners c{};
  for (int k = 0; k < 8; ++k) {
    const std::int64_t x = (k & 1) ? i1[0] : i0[0], y = (k & 2) ? i1[1] : i0[1], z = (k & 4) ? i1[2] : i0[2];
    c.index[k] = g.index(x, y, z);
    c.weight[k] = ((k & 1) ? t[0] : 1 - t[0]) * ((k & 2) ? t[1] : 1 - t[1]) * ((k & 4) ? t[2] : 1 - t[2]);
  }
  return c;
}

// The position v + u(v) (float field values, double arithmetic), w ignored on a 2D grid.
inline void position_f64(const DisplacementField &f, std::int64_t x, std::int64_t y, std::int64_t z, double (&p)[3]) {
  const std::int64_t v = f.grid().index(x, y, z);
  p[0] = double(x) + double(f.u[v]);
  p[1] = double(y) + double(f.v[v]);
  p[2] = double(z) + double(f.w[v]);
}

// Forward W x and adjoint W^H y in double; weights: empty or J(v) per voxel.
inline std::vector<cdouble> warp_f64(const DisplacementField &f, const Image &x, const std::vector<float> &weights) {
  const Grid &g = f.grid();
  std::vector<cdouble> out(x.size());
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t xx = 0; xx < g.nx(); ++xx) {
        double p[3];
        position_f64(f, xx, y, z, p);
        const Corners c = corners_f64(g, p);
        cdouble s = 0;
        for (int k = 0; k < 8; ++k)
          s += c.weight[k] * cdouble(x[c.index[k]]);
        const std::int64_t v = g.index(xx, y, z);
        out[v] = weights.empty() ? s : s * double(weights[v]);
      }
  return out;
}
inline std::vector<cdouble> warp_adjoint_f64(const DisplacementField &f, const Image &y,
                                             const std::vector<float> &weights) {
  const Grid &g = f.grid();
  std::vector<cdouble> out(y.size());
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t yy = 0; yy < g.ny(); ++yy)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        double p[3];
        position_f64(f, x, yy, z, p);
        const Corners c = corners_f64(g, p);
        const std::int64_t v = g.index(x, yy, z);
        const cdouble value = weights.empty() ? cdouble(y[v]) : cdouble(y[v]) * double(weights[v]);
        for (int k = 0; k < 8; ++k)
          out[c.index[k]] += c.weight[k] * value;
      }
  return out;
}

// max |a - b| / max |b|.
inline double max_relative(const Image &a, const std::vector<cdouble> &b) {
  double diff = 0, peak = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(cdouble(a[i]) - b[i]));
    peak = std::max(peak, std::abs(b[i]));
  }
  return diff / peak;
}

// 3 states of 260 random samples each (uniform random trajectories), 3 coils of random samples, on g.
inline std::vector<KSpaceData> random_states(const Grid &g, std::uint64_t seed) {
  const int coils = 3;
  std::vector<KSpaceData> states;
  for (int s = 0; s < 3; ++s) {
    const Trajectory t = random_trajectory(g, 260, seed + s);
    states.emplace_back(t, random_complex(t.size() * coils, seed + 10 + s), std::vector<float>{}, coils);
  }
  return states;
}

// The states' data concatenated as one acquisition (coil-major), what reconstruct takes.
inline KSpaceData concatenated(const std::vector<KSpaceData> &states) {
  std::vector<KPoint> points;
  std::vector<cfloat> samples;
  const int coils = states[0].coils();
  for (const KSpaceData &d : states)
    points.insert(points.end(), d.trajectory().points().begin(), d.trajectory().points().end());
  for (int c = 0; c < coils; ++c)
    for (const KSpaceData &d : states) {
      const std::size_t m = d.samples_per_coil();
      samples.insert(samples.end(), d.samples().begin() + c * m, d.samples().begin() + (c + 1) * m);
    }
  return KSpaceData(Trajectory(states[0].trajectory().dims(), std::move(points)), std::move(samples), {}, coils);
}

// Spokes s, s + S, s + 2S ... of a 2D radial trajectory of `readout` samples a spoke: state s of S
// interleaved states.
inline Trajectory state_spokes(const Trajectory &all, int states, int s, int readout) {
  std::vector<KPoint> points;
  const std::size_t spokes = all.size() / static_cast<std::size_t>(readout);
  for (std::size_t i = static_cast<std::size_t>(s); i < spokes; i += static_cast<std::size_t>(states))
    for (int r = 0; r < readout; ++r)
      points.push_back(all[i * static_cast<std::size_t>(readout) + r]);
  return Trajectory(2, std::move(points));
}

// A breathing 2D Shepp-Logan on 48^2 in 4 states. State 0 is the reference (zero field); state
// s > 0 is moved by a dilation along y about the centre (0.05 s voxels per voxel) plus a smooth
// random field of peak 0.6 s voxels, up to ~3 voxels in all. Each state is sampled by its own 16
// golden-angle spokes (every 4th, 96 samples each) through the exact SENSE operator of 4
// simulated coils, plus noise at SNR 50. The truth is the reference state's image.
struct BreathingPhantom {
  Grid grid{48, 48};
  Image truth;
  std::shared_ptr<const CoilSensitivities> maps;
  std::vector<KSpaceData> states;
  std::vector<DisplacementField> fields; // the true fields
};

inline BreathingPhantom breathing_phantom(std::uint64_t seed) {
  const int states_n = 4, readout = 96, spokes_per_state = 16, coils = 4;
  BreathingPhantom p;
  const Grid &g = p.grid;
  p.truth = Phantom::shepp_logan_2d().rasterize(g, 2);
  p.maps = std::make_shared<const CoilSensitivities>(SimulatedCoils(2, coils).maps(g));
  const Trajectory all = traj::radial(g, states_n * spokes_per_state, readout, traj::SpokeOrder::GoldenAngle);
  for (int s = 0; s < states_n; ++s) {
    DisplacementField f = s == 0 ? DisplacementField(g) : smooth_field(g, 0.6 * s, seed + s);
    if (s > 0)
      for (std::int64_t y = 0; y < g.ny(); ++y)
        for (std::int64_t x = 0; x < g.nx(); ++x)
          f.v.at(x, y) += static_cast<float>(0.05 * s * (double(y) - 0.5 * double(g.ny())));
    const Image state_image = mri::forward(ImageWarp(f), p.truth);
    const Trajectory t = state_spokes(all, states_n, s, readout);
    std::vector<cfloat> y = mri::forward(SenseOperator(t, g, p.maps), state_image);
    add_noise(y, 50.0, seed + 100 + s);
    p.states.emplace_back(t, std::move(y), std::vector<float>{}, coils);
    p.fields.push_back(std::move(f));
  }
  return p;
}

} // namespace mri::test::mcir
