// DeviceImageWarp (cuda/mcir/) at 128^3: forward (thread per voxel, the trilinear gather) and
// adjoint (arg 2: 0 the deterministic gather by the sorted lists, 1 float2 atomics; the lists'
// construction time is the BM_warp_lists_gpu row), with and without the Jacobian weighting (arg 0/1),
// on the breathing-like field of mcir_problems.hpp; CUDA-event time per call (manual time), and the
// CPU's ImageWarp on the same problem in the same run (bench_mcir_cpu's rows, for the ratio on one
// machine). The bytes counter: 12 (field) + 8 (image) + 8 (output) bytes per voxel, +4 with
// weights; the adjoint's atomics add a read-modify-write per corner, not counted. The device copy
// bandwidth of the same run is the copy_GBps counter (the memory ceiling).
// BM_mcir_solve_gpu (arg: extent 64 or 128): reconstruct_motion_corrected with backend = cuda on the
// issue's GPU problem shape: a golden-angle koosh of 8192 spokes x 2 * extent samples split into 4
// states, 8 coils with given maps, the breathing-like field scaled per state (0, 1/3, 2/3, 1), NUFFT,
// 10 CG iterations; host wall time per solve (UseRealTime), and the report's phases as counters
// (seconds): fhd (host F^H D by the device's NUFFT, with the warps of b), q (Q by the NUFFT and the
// device Toeplitz operators, warps' lists), cg, and per_iteration_ms.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mri/coil_simulation.hpp"
#include "mri/trajectory.hpp"

#include "mcir/image_warp_cuda.hpp"
#include "mcir_problems.hpp"
#include "mri/mcir.hpp"
#include "recon/device_image.hpp"

namespace {

using mri::bench::kWarpExtent;

void run_device_warp(benchmark::State &state, bool adjoint) {
  const mri::Grid g(kWarpExtent, kWarpExtent, kWarpExtent);
  static const mri::DisplacementField field = mri::bench::breathing_field(g);
  const bool jacobian = state.range(0) != 0;
  const auto form = state.range(1) == 0 ? mri::cuda::DeviceWarpAdjoint::Gather : mri::cuda::DeviceWarpAdjoint::Atomic;
  const mri::cuda::DeviceImageWarp w(mri::ImageWarp(field, {jacobian}), form);
  const mri::cuda::DeviceImage x(mri::bench::random_warp_image(g, 1));
  mri::cuda::DeviceImage y(g);
  mri::cuda::StreamTimer timer(y.stream());
  const auto apply = [&] { adjoint ? w.adjoint(x, y) : w.forward(x, y); };
  apply(); // warm-up: module loading
  for (auto _ : state) {
    timer.start();
    apply();
    state.SetIterationTime(timer.stop_ms() / 1e3);
  }
  const double voxels = double(g.voxels());
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(voxels));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(voxels * (28 + (jacobian ? 4 : 0))));
  static const double copy = mri::cuda::measure_copy_bandwidth(std::size_t(voxels) * 8);
  state.counters["copy_GBps"] = copy / 1e9;
  state.SetLabel(std::string(adjoint ? (state.range(1) == 0 ? "adjoint gather" : "adjoint atomic") : "forward") +
                 (jacobian ? " jacobian" : ""));
}

// Making the gather adjoint's lists for one field (host wall time: count, scan, fill, sort, with
// the field's upload), once per field.
void BM_warp_lists_gpu(benchmark::State &state) {
  const mri::Grid g(kWarpExtent, kWarpExtent, kWarpExtent);
  static const mri::DisplacementField field = mri::bench::breathing_field(g);
  const mri::ImageWarp host(field);
  { const mri::cuda::DeviceImageWarp warm(host); }
  for (auto _ : state) {
    const mri::cuda::DeviceImageWarp w(host, mri::cuda::DeviceWarpAdjoint::Gather);
    benchmark::DoNotOptimize(&w);
  }
}
BENCHMARK(BM_warp_lists_gpu)->Unit(benchmark::kMillisecond)->UseRealTime();

void run_host_warp(benchmark::State &state, bool adjoint) {
  const mri::Grid g(kWarpExtent, kWarpExtent, kWarpExtent);
  static const mri::DisplacementField field = mri::bench::breathing_field(g);
  const mri::ImageWarp w(field, {state.range(0) != 0});
  const mri::Image x = mri::bench::random_warp_image(g, 1);
  mri::Image y(g);
  for (auto _ : state) {
    adjoint ? w.adjoint(x, y) : w.forward(x, y);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * g.voxels());
  state.SetLabel(std::string(adjoint ? "adjoint cpu" : "forward cpu") + (state.range(0) ? " jacobian" : ""));
}

void BM_warp_forward_gpu(benchmark::State &state) { run_device_warp(state, false); }
void BM_warp_adjoint_gpu(benchmark::State &state) { run_device_warp(state, true); }
void BM_warp_forward_cpu(benchmark::State &state) { run_host_warp(state, false); }
void BM_warp_adjoint_cpu(benchmark::State &state) { run_host_warp(state, true); }
// args: jacobian weighting, adjoint form (0 gather, 1 atomic).
BENCHMARK(BM_warp_forward_gpu)->Args({0, 0})->Args({1, 0})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_warp_adjoint_gpu)->ArgsProduct({{0, 1}, {0, 1}})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_warp_forward_cpu)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_warp_adjoint_cpu)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

struct McirProblem {
  std::vector<mri::KSpaceData> states;
  std::vector<mri::DisplacementField> fields;
  std::shared_ptr<const mri::CoilSensitivities> maps;
};

McirProblem mcir_problem(const mri::Grid &g, int coils, int states) {
  McirProblem p;
  const int spokes = 8192, readout = static_cast<int>(2 * g.nx());
  const mri::Trajectory all = mri::traj::koosh(g, spokes, readout, mri::traj::SpokeOrder::GoldenAngle);
  const std::size_t per_state = all.size() / static_cast<std::size_t>(states);
  const mri::DisplacementField full = mri::bench::breathing_field(g);
  for (int s = 0; s < states; ++s) {
    const auto first = all.points().begin() + static_cast<std::ptrdiff_t>(s * per_state);
    std::vector<mri::KPoint> points(first, first + static_cast<std::ptrdiff_t>(per_state));
    std::mt19937_64 rng(static_cast<std::uint64_t>(s));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<mri::cfloat> samples(per_state * static_cast<std::size_t>(coils));
    for (mri::cfloat &v : samples) v = {normal(rng), normal(rng)};
    p.states.emplace_back(mri::Trajectory(3, std::move(points)), std::move(samples), std::vector<float>{}, coils);
    mri::DisplacementField f(g);
    const float scale = static_cast<float>(s) / static_cast<float>(states - 1);
    for (std::size_t i = 0; i < f.u.size(); ++i) {
      f.u[i] = scale * full.u[i];
      f.v[i] = scale * full.v[i];
      f.w[i] = scale * full.w[i];
    }
    p.fields.push_back(s == 0 ? mri::DisplacementField() : std::move(f));
  }
  p.maps = std::make_shared<const mri::CoilSensitivities>(mri::SimulatedCoils(3, coils).maps(g));
  return p;
}

void BM_mcir_solve_gpu(benchmark::State &state) {
  const std::int64_t n = state.range(0);
  const mri::Grid g(n, n, n);
  const McirProblem p = mcir_problem(g, 8, 4);
  mri::ReconOptions o;
  o.backend = mri::Backend::Cuda;
  o.method = mri::Method::Nufft;
  o.solver.iterations = 10;
  o.solver.tolerance = 0;
  o.coils.sensitivities = p.maps;
  (void)mri::reconstruct_motion_corrected(p.states, g, p.fields, o); // warm-up: modules, plans' setup caches
  mri::MotionCorrectedResult r;
  for (auto _ : state)
    r = mri::reconstruct_motion_corrected(p.states, g, p.fields, o);
  state.counters["fhd_s"] = r.report.fhd_seconds;
  state.counters["q_s"] = r.report.q_seconds;
  state.counters["cg_s"] = r.report.cg_seconds;
  state.counters["per_iteration_ms"] = 1e3 * r.report.cg_seconds / std::max(1, r.report.iterations);
  state.SetLabel(std::to_string(n) + "^3, 8 coils, 4 states, " + r.report.q_method + ", " + r.report.toeplitz_fft);
}
BENCHMARK(BM_mcir_solve_gpu)->Arg(64)->Arg(128)->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
