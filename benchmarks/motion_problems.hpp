#pragma once
// MISSION.md's motion problems, shared by bench_motion_cpu and bench_motion_gpu:
//   MOTION-3D   two 128^3 frames (a textured volume and its swirl-moved copy, noise 0.01),
//               3 pyramid levels, 3 warps per level, Gaussian K_rho of 15 taps (rho = 7/3),
//               CLG + volume term (gamma = 0.1), kMotionIterations solver iterations per warp
//   MOTION-SEQ  20 frames of 128^3, frame to frame (a beating sequence: compressive motion of
//               alternating sign), frames resident on the device
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "mri/motion.hpp"

namespace mri::bench {

inline constexpr int kMotionIterations = 20;

inline MotionOptions motion3d_options(MotionSolver solver, MotionMemory memory, Backend backend) {
  MotionOptions o;
  o.levels = 3;
  o.warps = 3;
  o.rho = 7.0 / 3.0; // 2 ceil(3 rho) + 1 = 15 taps
  o.gamma = 0.1;
  o.iterations = kMotionIterations;
  o.solver = solver;
  o.memory = memory;
  o.backend = backend;
  return o;
}

struct MotionPair {
  RealVolume fixed, moving;
  DisplacementField truth;
};

inline MotionPair motion3d_pair(std::int64_t n = 128) {
  const Grid g(n, n, n);
  MotionPair p{textured_volume(g, 2026), {}, synthetic_field(g, SyntheticMotion::Swirl, 1.5)};
  p.moving = apply_motion(p.fixed, p.truth);
  add_noise(p.fixed, 0.01, 1);
  add_noise(p.moving, 0.01, 2);
  return p;
}

// Per-stage times of the last estimate as benchmark counters (both backends' tables).
inline void report_stages(benchmark::State &state, const MotionReport &r) {
  state.counters["transfer_ms"] = r.transfer_ms;
  state.counters["pyramid_ms"] = r.pyramid_ms;
  state.counters["gradients_ms"] = r.gradients_ms;
  state.counters["warp_ms"] = r.warp_ms;
  state.counters["tensor_ms"] = r.tensor_ms;
  state.counters["gaussian_ms"] = r.gaussian_ms;
  state.counters["solver_ms"] = r.solver_ms;
  state.counters["solver_passes"] = double(r.solver_sweeps);
  state.counters["total_ms"] = r.total_ms;
}

// Times est.estimate(p.fixed, p.moving) per benchmark iteration (manual time: the host wall clock
// around the call, transfers included) and reports the last run's stages and endpoint error.
inline void time_motion3d(benchmark::State &state, MotionEstimator &est, const MotionPair &p) {
  DisplacementField w;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    w = est.estimate(p.fixed, p.moving);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  report_stages(state, est.report());
  state.counters["epe"] = average_endpoint_error(w, p.truth, 3);
}

} // namespace mri::bench
