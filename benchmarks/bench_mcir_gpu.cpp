// DeviceImageWarp (cuda/mcir/) at 128^3: forward (thread per voxel, the trilinear gather) and
// adjoint (arg 2: 0 the deterministic gather by the sorted lists, 1 float2 atomics; the lists'
// construction time is the BM_warp_lists_gpu row), with and without the Jacobian weighting (arg 0/1),
// on the breathing-like field of mcir_problems.hpp; CUDA-event time per call (manual time), and the
// CPU's ImageWarp on the same problem in the same run (bench_mcir_cpu's rows, for the ratio on one
// machine). The bytes counter: 12 (field) + 8 (image) + 8 (output) bytes per voxel, +4 with
// weights; the adjoint's atomics add a read-modify-write per corner, not counted. The device copy
// bandwidth of the same run is the copy_GBps counter (the memory ceiling).
#include <benchmark/benchmark.h>

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

} // namespace

BENCHMARK_MAIN();
