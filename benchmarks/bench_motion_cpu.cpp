// Motion estimation on the CPU: MOTION-3D (benchmarks/motion_problems.hpp) end to end
// with the report's per-stage wall times, and the solvers' convergence per millisecond (energy gap
// to the minimum after k iterations, and the time they took) on one 64^3 level: the measurement
// the default solver is chosen from (docs/motion.md).
#include <benchmark/benchmark.h>

#include <chrono>

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

} // namespace

BENCHMARK_MAIN();
