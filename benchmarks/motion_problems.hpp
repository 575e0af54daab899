#pragma once
// MISSION.md's motion problems, shared by bench_motion_cpu and bench_motion_gpu:
//   MOTION-3D   two 128^3 frames (a textured volume and its swirl-moved copy, noise 0.01),
//               3 pyramid levels, 3 warps per level, Gaussian K_rho of 15 taps (rho = 7/3),
//               CLG + volume term (gamma = 0.1), kMotionIterations solver iterations per warp
//   MOTION-SEQ  20 frames of 128^3, frame to frame (a beating sequence: compressive motion of
//               alternating sign), frames resident on the device
//   MOTION-CHAIN issue 42's GPU target's motion: 4 states of 128^3, states 1..3 registered to
//               state 0 (the reference, the moving frame of each pair, as lib/mcir/motion_chain.cpp
//               runs it) at the chain's options (MotionOptions' defaults)
#include <benchmark/benchmark.h>

#include <algorithm>
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

// MOTION-CHAIN's states: the Shepp-Logan volume scaled to a peak of 1 (as the chain's
// normalised_magnitude) as the reference, and states_s = the reference warped by a compression
// of amplitude 0.5 s voxels (a breath's depth by state), so reference(x + truth_s(x)) = state_s(x);
// noise 0.01 on each.
struct MotionChainStates {
  RealVolume reference;
  std::vector<RealVolume> states;       // states 1..3
  std::vector<DisplacementField> truth; // state s -> reference
};

inline MotionChainStates motion_chain_states(std::int64_t n = 128) {
  const Grid g(n, n, n);
  MotionChainStates c{shepp_logan_volume(g), {}, {}};
  const float peak = *std::max_element(c.reference.values().begin(), c.reference.values().end());
  for (float &x : c.reference.values())
    x /= peak;
  for (int s = 1; s <= 3; ++s) {
    c.truth.push_back(synthetic_field(g, SyntheticMotion::Compressive, 0.5 * s));
    c.states.push_back(warp(c.reference, c.truth.back()));
    add_noise(c.states.back(), 0.01, 10 + s);
  }
  add_noise(c.reference, 0.01, 10);
  return c;
}

// The stage times, cycles, switches and non-finite stops of several calls added, the largest
// residual kept (one report for the chain's pairs).
inline void add_report(MotionReport &sum, const MotionReport &r) {
  sum.transfer_ms += r.transfer_ms, sum.pyramid_ms += r.pyramid_ms;
  sum.gradients_ms += r.gradients_ms, sum.warp_ms += r.warp_ms, sum.tensor_ms += r.tensor_ms;
  sum.gaussian_ms += r.gaussian_ms, sum.solver_ms += r.solver_ms, sum.total_ms += r.total_ms;
  sum.solver_sweeps += r.solver_sweeps, sum.solver_cycles += r.solver_cycles;
  sum.solver_switches += r.solver_switches, sum.solver_nonfinite += r.solver_nonfinite;
  sum.solver_residual = std::max(sum.solver_residual, r.solver_residual);
}

// The wall time of a report not in any stage (validation, host allocation, launch gaps between
// stages).
inline double unstaged_ms(const MotionReport &r) {
  return r.total_ms - (r.transfer_ms + r.pyramid_ms + r.gradients_ms + r.warp_ms + r.tensor_ms +
                       r.gaussian_ms + r.solver_ms);
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
