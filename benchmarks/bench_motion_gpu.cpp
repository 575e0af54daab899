// Motion estimation on the GPU, MISSION.md's problems (benchmarks/motion_problems.hpp):
//   MOTION-3D   end to end per solver and memory policy: host wall time of estimate() (upload of
//               the two frames and download of the field included; one untimed warm-up call pays
//               the context and module loading), the report's per-stage CUDA-event times, and
//               the swirl's endpoint error;
//   MOTION-SEQ  20 frames of 128^3 through estimate_sequence (each frame uploaded once);
//   solver      the multigrid (to the default tolerance) against red-black SOR (MOTION-3D's
//               iterations) at 64^3 and 128^3 on MOTION-3D's pair and options, with its counters
//               (the swirl's EPE among them); the label gives the reported residual and V-cycles;
//   MOTION-CHAIN issue 42's "motion under 100 ms for all pairs": 3 states of 128^3 registered to
//               one reference at the chain's options (the defaults: multigrid to 1e-3), as the
//               chain's three estimate() calls (arg 0) and as one estimate_to_reference (arg 1),
//               with the coarse levels cycled by launches (arg 0) or in one block (arg 1); the
//               time is the wall clock of all 3 pairs; counters: the stages summed over the pairs;
//               the label: the largest residual, V-cycles, switches and the unstaged milliseconds;
//   sweep       one Jacobi sweep over 128^3 per memory policy: the bytes it must move (9 tensor
//               channels + 3 field components read, 3 written) over its CUDA-event time, against
//               a device-to-device copy measured in the same run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <map>

#include "recon/device_image.hpp"
#include "motion/motion_bench.hpp"
#include "motion_problems.hpp"

namespace {

using mri::MotionMemory;
using mri::MotionSolver;

void BM_motion3d_gpu(benchmark::State &state) {
  const auto solver = static_cast<MotionSolver>(state.range(0));
  const auto memory = static_cast<MotionMemory>(state.range(1));
  static const mri::bench::MotionPair p = mri::bench::motion3d_pair();
  mri::MotionOptions o = mri::bench::motion3d_options(solver, memory, mri::Backend::Cuda);
  o.iterations = int(state.range(2));
  mri::MotionEstimator est(p.fixed.grid(), o);
  est.estimate(p.fixed, p.moving); // warm-up
  mri::bench::time_motion3d(state, est, p);
  state.SetLabel(std::string("MOTION-3D ") + (solver == MotionSolver::Jacobi ? "jacobi " : "sor ") +
                 (memory == MotionMemory::Cached ? "cached" : "shared-tiles"));
}
// args: solver, memory, iterations. MOTION-3D states kMotionIterations (20); Jacobi at 80 makes
// as many passes over memory as 4-colour SOR at 20 (the equal-time comparison on the GPU).
BENCHMARK(BM_motion3d_gpu)
    ->ArgsProduct({{0, 1}, {0, 1}, {mri::bench::kMotionIterations}})
    ->Args({0, 0, 4 * mri::bench::kMotionIterations})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// args: solver (1 SOR, 2 multigrid), n. Counters: MOTION-3D's (the CSV reporter aborts on a
// counter one family has and another lacks); the residual and cycles go in the label.
void BM_motion_solver_gpu(benchmark::State &state) {
  const auto solver = static_cast<MotionSolver>(state.range(0));
  const std::int64_t n = state.range(1);
  static std::map<std::int64_t, mri::bench::MotionPair> pairs;
  auto it = pairs.find(n);
  if (it == pairs.end())
    it = pairs.emplace(n, mri::bench::motion3d_pair(n)).first;
  const mri::bench::MotionPair &p = it->second;
  const mri::MotionOptions o =
      mri::bench::motion3d_options(solver, MotionMemory::Cached, mri::Backend::Cuda);
  mri::MotionEstimator est(p.fixed.grid(), o);
  est.estimate(p.fixed, p.moving); // warm-up: the plans' allocations
  mri::bench::time_motion3d(state, est, p);
  char label[128];
  std::snprintf(label, sizeof label, "solver %s %lld^3 residual %.2g cycles %lld",
                solver == MotionSolver::Multigrid ? "multigrid" : "sor", (long long)n,
                est.report().solver_residual, (long long)est.report().solver_cycles);
  state.SetLabel(label);
}
BENCHMARK(BM_motion_solver_gpu)
    ->ArgsProduct({{int(MotionSolver::RedBlackSor), int(MotionSolver::Multigrid)}, {64, 128}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

void BM_motion_chain_gpu(benchmark::State &state) {
  const bool together = state.range(0) == 1, block = state.range(1) == 1;
  static const mri::bench::MotionChainStates c = mri::bench::motion_chain_states(128);
  mri::MotionOptions o; // the chain's: lib/mcir/motion_chain.cpp takes MotionChainOptions::motion
  o.backend = mri::Backend::Cuda;
  // The multigrid plans are made on each level's first solve: in the warm-up.
  mri::cuda::detail::motion::set_coarse_block_cycles(block);
  mri::MotionEstimator est(c.reference.grid(), o);
  est.estimate_to_reference(c.states, c.reference); // warm-up: the plans' allocations
  mri::cuda::detail::motion::set_coarse_block_cycles(true);
  std::vector<mri::DisplacementField> fields(c.states.size());
  mri::MotionReport all;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    all = mri::MotionReport{};
    if (together) {
      fields = est.estimate_to_reference(c.states, c.reference);
      all = est.report();
    } else
      for (std::size_t s = 0; s < c.states.size(); ++s) {
        fields[s] = est.estimate(c.states[s], c.reference);
        mri::bench::add_report(all, est.report());
      }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  mri::bench::report_stages(state, all);
  double epe = 0;
  for (std::size_t s = 0; s < fields.size(); ++s)
    epe += mri::average_endpoint_error(fields[s], c.truth[s], 3) / double(fields.size());
  state.counters["epe"] = epe;
  char label[192];
  std::snprintf(label, sizeof label,
                "MOTION-CHAIN 128^3 3 pairs %s%s residual %.2g cycles %lld switches %lld "
                "unstaged_ms %.2f",
                together ? "estimate_to_reference" : "estimate x3",
                block ? "" : " (coarse levels by launches)", all.solver_residual,
                (long long)all.solver_cycles, (long long)all.solver_switches,
                mri::bench::unstaged_ms(all));
  state.SetLabel(label);
}
// args: estimate x3 (0) or estimate_to_reference (1); coarse levels by launches (0) or in one
// block (1, the default).
BENCHMARK(BM_motion_chain_gpu)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

void BM_motion_seq_gpu(benchmark::State &state) {
  static const mri::SyntheticSequence seq = mri::beating_sequence(mri::shepp_logan_volume(mri::Grid(128, 128, 128)), 20, 1.0);
  const std::vector<mri::RealVolume> &frames = seq.frames;
  mri::MotionOptions o = mri::bench::motion3d_options(static_cast<MotionSolver>(state.range(0)),
                                                      MotionMemory::Cached, mri::Backend::Cuda);
  mri::MotionEstimator est(frames[0].grid(), o);
  est.estimate(frames[0], frames[1]); // warm-up
  std::vector<mri::DisplacementField> fields;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    fields = est.estimate_sequence(frames);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  mri::bench::report_stages(state, est.report());
  double epe = 0;
  for (std::size_t k = 0; k < fields.size(); ++k)
    epe += mri::average_endpoint_error(fields[k], seq.truth[k], 3) / double(fields.size());
  state.counters["epe_mean"] = epe;
  state.SetLabel("MOTION-SEQ 20 frames");
}
BENCHMARK(BM_motion_seq_gpu)
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

void BM_sweep_gpu(benchmark::State &state) {
  const auto memory = static_cast<MotionMemory>(state.range(0));
  const mri::Grid g(128, 128, 128);
  static const double copy_bw = mri::cuda::measure_copy_bandwidth(std::size_t(256) << 20);
  double ms = 0;
  for (auto _ : state) {
    ms = mri::cuda::detail::motion::time_solver_sweep_ms(g, memory, 50);
    state.SetIterationTime(ms / 1e3);
  }
  const double bytes = mri::cuda::detail::motion::solver_sweep_bytes(g);
  state.counters["bytes"] = bytes;
  state.counters["GBps"] = bytes / (ms / 1e3) / 1e9;
  state.counters["copy_GBps"] = copy_bw / 1e9;
  state.counters["fraction_of_copy"] = bytes / (ms / 1e3) / copy_bw;
  state.SetLabel(memory == MotionMemory::Cached ? "sweep cached" : "sweep shared-tiles");
}
BENCHMARK(BM_sweep_gpu)
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(3);

} // namespace

BENCHMARK_MAIN();
