// Motion estimation on the CPU: MOTION-3D (benchmarks/motion_problems.hpp) end to end
// with the report's per-stage wall times, and the solvers' convergence per millisecond (energy gap
// to the minimum after k iterations, and the time they took) on one 64^3 level: the measurement
// the default solver is chosen from (docs/motion.md).
#include <benchmark/benchmark.h>

#include <chrono>

#include "../lib/motion/cpu_stages.hpp"
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
  state.SetLabel(solver == MotionSolver::Jacobi ? "MOTION-3D jacobi" : "MOTION-3D sor");
}
BENCHMARK(BM_motion3d_cpu)
    ->Arg(0)
    ->Arg(1)
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

} // namespace

BENCHMARK_MAIN();
