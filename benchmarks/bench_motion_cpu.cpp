// Motion estimation on the CPU: MOTION-3D (benchmarks/motion_problems.hpp) end to end
// with the report's per-stage wall times, and the solvers' convergence per millisecond (energy gap
// to the minimum after k iterations, and the time they took) on one 64^3 level: the measurement
// the default solver is chosen from (docs/motion.md); and the contracting Shepp-Logan phantom's
// diagnosis (BM_phantom_compression).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <string>

#include "../lib/motion/cpu_stages.hpp"
#include "../lib/motion/multigrid.hpp"
#include "motion_problems.hpp"

namespace {

namespace dm = mri::detail::motion;
using mri::MotionSolver;

void BM_motion3d_cpu(benchmark::State &state) {
  const auto solver = static_cast<MotionSolver>(state.range(0));
  static const mri::bench::MotionPair p = mri::bench::motion3d_pair();
  mri::MotionEstimator est(
      p.fixed.grid(),
      mri::bench::motion3d_options(solver, mri::MotionMemory::Cached, mri::Backend::Cpu));
  mri::bench::time_motion3d(state, est, p);
  state.SetLabel(solver == MotionSolver::Jacobi        ? "MOTION-3D jacobi"
                 : solver == MotionSolver::RedBlackSor ? "MOTION-3D sor"
                                                       : "MOTION-3D multigrid");
  state.counters["residual"] = est.report().solver_residual;
  state.counters["cycles"] = double(est.report().solver_cycles);
}
BENCHMARK(BM_motion3d_cpu)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// One level's tensor (64^3 swirl, K_rho = 15 taps, gamma = 0.1) and its energy minimum.
struct Level {
  dm::Tensor<float> j;
  double minimum = 0;
};
const Level &convergence_level() {
  static const Level level = [] {
    const auto p = mri::bench::motion3d_pair(64);
    const mri::Grid g = p.fixed.grid();
    dm::Volume<float> fixed(g), moving(g), tmp(g);
    std::copy(p.fixed.values().begin(), p.fixed.values().end(), fixed.v.begin());
    std::copy(p.moving.values().begin(), p.moving.values().end(), moving.v.begin());
    dm::Field<float> grad{dm::Volume<float>(g), dm::Volume<float>(g), dm::Volume<float>(g)};
    dm::gradients(fixed, grad, mri::MotionDerivative::Central);
    Level l;
    for (auto &c : l.j)
      c = dm::Volume<float>(g);
    dm::tensor(grad, fixed, moving, l.j);
    const auto taps = dm::gaussian_taps(7.0 / 3.0, "rho");
    for (int c = 0; c < dm::kTT; ++c)
      dm::gaussian(l.j[c], tmp, taps);
    return l;
  }();
  return level;
}

constexpr double kAlpha = 0.03, kGamma = 0.1;

dm::Field<float> solve(const dm::Tensor<float> &j, MotionSolver solver, int iterations,
                       double omega) {
  const mri::Grid g = j[0].grid;
  dm::Field<float> a{dm::Volume<float>(g), dm::Volume<float>(g), dm::Volume<float>(g)}, b = a;
  const int colours = dm::sor_colours(kGamma);
  for (int it = 0; it < iterations; ++it) {
    if (solver == MotionSolver::Jacobi) {
      dm::sweep(j, a, b, -1, colours, float(kAlpha), float(kGamma), 1.0f);
      std::swap(a, b);
    } else {
      for (int c = 0; c < colours; ++c)
        dm::sweep(j, a, a, c, colours, float(kAlpha), float(kGamma), float(omega));
    }
  }
  return a;
}

// args: solver, iterations, omega * 100. Counter gap: (E(k) - E_min) / (E(0) - E_min), E_min from
// 2000 SOR iterations.
void BM_solver_convergence(benchmark::State &state) {
  const auto solver = static_cast<MotionSolver>(state.range(0));
  const int iterations = int(state.range(1));
  const double omega = state.range(2) / 100.0;
  const Level &l = convergence_level();
  static const double minimum =
      dm::clg_energy(l.j, solve(l.j, MotionSolver::RedBlackSor, 2000, 1.9), kAlpha, kGamma);
  dm::Field<float> w;
  for (auto _ : state)
    w = solve(l.j, solver, iterations, omega);
  const double e0 = 0.0; // E(0) = 0 for w = 0
  state.counters["gap"] = (dm::clg_energy(l.j, w, kAlpha, kGamma) - minimum) / (e0 - minimum);
}
BENCHMARK(BM_solver_convergence)
    ->ArgsProduct({{0}, {10, 20, 40, 80, 160}, {100}})
    ->ArgsProduct({{1}, {5, 10, 20, 40, 80}, {100, 150, 180, 190}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// Time to one relative Euler-Lagrange residual ||b - A w|| / ||b|| = kTargetResidual from w = 0 on
// the level above with the volume term of docs/motion.md (gamma 0.3): Jacobi (checked every 10
// sweeps), SOR at omega 1.5 (checked every 2 iterations) and the multigrid (checked every cycle or
// conjugate-gradient iteration),
// each stopped at the first check at or below the target. args: solver (0 Jacobi, 1 SOR, 2
// multigrid, 3 conjugate gradients preconditioned by the V-cycle), gamma * 100. Counters: the residual reached, passes over the 64^3 grid (multigrid:
// colour passes and residual evaluations on the finest grid), V-cycles.
constexpr double kTargetResidual = 1e-3;
constexpr int kMaxSweeps = 20000;

void BM_solver_to_residual(benchmark::State &state) {
  const bool krylov = state.range(0) == 3; // the V-cycle preconditioning conjugate gradients
  const auto solver = krylov ? MotionSolver::Multigrid : static_cast<MotionSolver>(state.range(0));
  const float alpha = float(kAlpha), gamma = float(state.range(1) / 100.0);
  const Level &l = convergence_level();
  const mri::Grid g = l.j[0].grid;
  const int colours = dm::sor_colours(gamma);
  const double b2 = dm::rhs_norm2(l.j);
  double residual = 0;
  std::int64_t passes = 0, cycles = 0;
  for (auto _ : state) {
    dm::Field<float> w{dm::Volume<float>(g), dm::Volume<float>(g), dm::Volume<float>(g)}, next = w,
                     r = w;
    const auto measure = [&] {
      ++passes;
      return dm::relative_residual(dm::residual(l.j, w, r, alpha, gamma), b2);
    };
    passes = cycles = 0;
    if (solver == MotionSolver::Multigrid) {
      dm::Multigrid<float> mg(g, mri::MotionMultigridOptions{.max_cycles = 100, .krylov = krylov});
      const dm::MultigridResult result = mg.solve(l.j, w, alpha, gamma, kTargetResidual);
      residual = result.residual, passes = result.fine_passes, cycles = result.cycles;
      continue;
    }
    const int check = solver == MotionSolver::Jacobi ? 10 : 2;
    for (residual = measure(); residual > kTargetResidual && passes < kMaxSweeps;
         residual = measure())
      for (int it = 0; it < check; ++it) {
        if (solver == MotionSolver::Jacobi) {
          dm::sweep(l.j, w, next, -1, colours, alpha, gamma, 1.0f);
          std::swap(w, next);
          ++passes;
        } else {
          for (int c = 0; c < colours; ++c)
            dm::sweep(l.j, w, w, c, colours, alpha, gamma, 1.5f);
          passes += colours;
        }
      }
  }
  state.counters["residual"] = residual;
  state.counters["passes"] = double(passes);
  state.counters["cycles"] = double(cycles);
  state.SetLabel(solver == MotionSolver::Jacobi        ? "jacobi"
                 : solver == MotionSolver::RedBlackSor ? "sor 1.5"
                 : krylov                              ? "multigrid-preconditioned CG"
                                                       : "multigrid");
}
BENCHMARK(BM_solver_to_residual)
    ->ArgsProduct({{0, 1, 2, 3}, {0, 30}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// Why a contracting Shepp-Logan volume is estimated worse than a texture (docs/motion.md,
// "Piecewise-smooth anatomy"): the phantom scaled to a peak of 1 (as `mri motion` scales its
// frames), 32^3, the Compressive field of amplitude +1 (contraction) or -1 (expansion), noise
// 0.01. args: sign (+1 / -1), data term (0 quadratic, 1 Charbonnier at the default epsilon), the
// setting changed from the defaults (0 none, 1 levels = 1, 2 warps = 10, 3 alpha = 0.1, 4 alpha =
// 0.01, 5 rho = 2). Counters, EPE as a fraction of the zero-flow EPE: ratio (all voxels >= 3 from
// the faces), edge_ratio / flat_ratio (voxels whose |grad I| of the noise-free phantom is above /
// below 0.05 per voxel), interior_radial (the estimate's mean radial displacement over the
// truth's, inside r < n/3: the brain's nearly flat interior); truth_residual: the frame
// difference left when the moving frame is warped by the true field (sum of squares, over that of
// moving - fixed); energy_ratio: the quadratic energy of the estimate over that of the truth (both
// non-linearised: the frames pre-smoothed as the estimator does, trilinear warping, alpha's
// smoothness; < 1: the model prefers the estimate to the truth).
struct PhantomPair {
  mri::RealVolume clean, fixed, moving;
  mri::DisplacementField truth;
};

const PhantomPair &phantom_pair(int sign) {
  static const std::array<PhantomPair, 2> pairs = [] {
    std::array<PhantomPair, 2> out;
    const mri::Grid g(32, 32, 32);
    mri::RealVolume v = mri::shepp_logan_volume(g);
    const float peak = *std::max_element(v.values().begin(), v.values().end());
    for (float &x : v.values())
      x /= peak;
    for (int k = 0; k < 2; ++k) {
      PhantomPair &p = out[std::size_t(k)];
      p.clean = p.fixed = v;
      p.truth = mri::synthetic_field(g, mri::SyntheticMotion::Compressive, k ? -1.0 : 1.0);
      p.moving = mri::apply_motion(v, p.truth);
      mri::add_noise(p.fixed, 0.01, 1);
      mri::add_noise(p.moving, 0.01, 2);
    }
    return out;
  }();
  return pairs[sign > 0 ? 0 : 1];
}

dm::Volume<double> as_double(const mri::RealVolume &f) {
  dm::Volume<double> v(f.grid());
  std::copy(f.values().begin(), f.values().end(), v.v.begin());
  return v;
}

// sum (moving_s(x + w(x)) - fixed_s(x))^2 + alpha sum |grad w|^2 (forward differences), frames
// pre-smoothed by sigma: the energy the quadratic CLG minimises, before linearisation.
double nonlinear_energy(const PhantomPair &p, const mri::DisplacementField &w,
                        const mri::MotionOptions &o) {
  const mri::Grid &g = p.fixed.grid();
  dm::Volume<double> f1 = as_double(p.fixed), f2 = as_double(p.moving), tmp(g), moved(g);
  const auto taps = dm::gaussian_taps(o.sigma, "sigma");
  dm::gaussian(f1, tmp, taps);
  dm::gaussian(f2, tmp, taps);
  const dm::Field<double> field{as_double(w.u), as_double(w.v), as_double(w.w)};
  dm::warp(f2, field, moved);
  double e = 0;
  for (std::size_t i = 0; i < f1.v.size(); ++i)
    e += (moved.v[i] - f1.v[i]) * (moved.v[i] - f1.v[i]);
  const std::int64_t stride[3] = {1, g.nx(), g.nx() * g.ny()};
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const std::int64_t v = g.index(x, y, z), pos[3] = {x, y, z};
        for (int a = 0; a < 3; ++a)
          if (pos[a] + 1 < g.extent(a))
            for (const auto &c : field) {
              const double d = c.v[std::size_t(v + stride[a])] - c.v[std::size_t(v)];
              e += o.alpha * d * d;
            }
      }
  return e;
}

void BM_phantom_compression(benchmark::State &state) {
  const int sign = int(state.range(0));
  const PhantomPair &p = phantom_pair(sign);
  const mri::Grid &g = p.fixed.grid();
  mri::MotionOptions o;
  if (state.range(1) == 1)
    o.data_term = mri::MotionDataTerm::Charbonnier;
  switch (state.range(2)) {
  case 1: o.levels = 1; break;
  case 2: o.warps = 10; break;
  case 3: o.alpha = 0.1; break;
  case 4: o.alpha = 0.01; break;
  case 5: o.rho = 2.0; break;
  default: break;
  }
  mri::MotionEstimator est(g, o);
  mri::DisplacementField w;
  for (auto _ : state)
    w = est.estimate(p.fixed, p.moving);
  constexpr std::int64_t border = 3;
  const double centre = (g.nx() - 1) / 2.0;
  double err[2] = {0, 0}, zero[2] = {0, 0}, radial_est = 0, radial_truth = 0;
  for (std::int64_t z = border; z < g.nz() - border; ++z)
    for (std::int64_t y = border; y < g.ny() - border; ++y)
      for (std::int64_t x = border; x < g.nx() - border; ++x) {
        const std::int64_t v = g.index(x, y, z);
        const auto &f = p.clean;
        const double gx = 0.5 * (f.at(x + 1, y, z) - f.at(x - 1, y, z)),
                     gy = 0.5 * (f.at(x, y + 1, z) - f.at(x, y - 1, z)),
                     gz = 0.5 * (f.at(x, y, z + 1) - f.at(x, y, z - 1));
        const int edge = std::sqrt(gx * gx + gy * gy + gz * gz) > 0.05;
        const double d[3] = {w.u[v] - p.truth.u[v], w.v[v] - p.truth.v[v], w.w[v] - p.truth.w[v]};
        const double t[3] = {p.truth.u[v], p.truth.v[v], p.truth.w[v]};
        err[edge] += std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        zero[edge] += std::sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
        const double r[3] = {x - centre, y - centre, z - centre};
        const double radius = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
        if (radius > 0 && radius < g.nx() / 3.0) {
          radial_est += (w.u[v] * r[0] + w.v[v] * r[1] + w.w[v] * r[2]) / radius;
          radial_truth += (t[0] * r[0] + t[1] * r[1] + t[2] * r[2]) / radius;
        }
      }
  state.counters["epe"] = mri::average_endpoint_error(w, p.truth, border);
  state.counters["ratio"] = (err[0] + err[1]) / (zero[0] + zero[1]);
  state.counters["edge_ratio"] = err[1] / zero[1];
  state.counters["flat_ratio"] = err[0] / zero[0];
  state.counters["interior_radial"] = radial_est / radial_truth;
  const mri::RealVolume back = mri::warp(p.moving, p.truth);
  double left = 0, before = 0;
  for (std::size_t i = 0; i < back.size(); ++i) {
    left += double(back[i] - p.fixed[i]) * double(back[i] - p.fixed[i]);
    before += double(p.moving[i] - p.fixed[i]) * double(p.moving[i] - p.fixed[i]);
  }
  state.counters["truth_residual"] = left / before;
  mri::MotionOptions quadratic = o;
  state.counters["energy_ratio"] =
      nonlinear_energy(p, w, quadratic) / nonlinear_energy(p, p.truth, quadratic);
  static const char *settings[] = {"defaults", "levels 1", "warps 10", "alpha 0.1", "alpha 0.01",
                                   "rho 2"};
  state.SetLabel(std::string(sign > 0 ? "contraction" : "expansion") +
                 (state.range(1) ? " charbonnier " : " quadratic ") + settings[state.range(2)]);
}
BENCHMARK(BM_phantom_compression)
    ->ArgsProduct({{1, -1}, {0}, {0, 1, 2, 3, 4, 5}})
    ->ArgsProduct({{1, -1}, {1}, {0}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

} // namespace

BENCHMARK_MAIN();
