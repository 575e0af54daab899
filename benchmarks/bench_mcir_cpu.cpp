// ImageWarp (mri/mcir.hpp) on the CPU at 128^3: forward (the trilinear gather) and adjoint (the
// deterministic slab-coloured scatter), with and without the Jacobian weighting (arg 0/1), on the
// breathing-like field of mcir_problems.hpp. Reports voxels/s; the field, the image and the output
// move 12 + 8 + 8 bytes per voxel (+4 with weights), the bytes counter.
#include <benchmark/benchmark.h>

#include "mcir_problems.hpp"
#include "mri/mcir.hpp"

namespace {

using mri::bench::kWarpExtent;

void run_warp(benchmark::State &state, bool adjoint) {
  const mri::Grid g(kWarpExtent, kWarpExtent, kWarpExtent);
  static const mri::DisplacementField field = mri::bench::breathing_field(g);
  const bool jacobian = state.range(0) != 0;
  const mri::ImageWarp w(field, {jacobian});
  const mri::Image x = mri::bench::random_warp_image(g, 1);
  mri::Image y(g);
  for (auto _ : state) {
    if (adjoint)
      w.adjoint(x, y);
    else
      w.forward(x, y);
    benchmark::DoNotOptimize(y.data());
  }
  const double voxels = double(g.voxels());
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(voxels));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(voxels * (28 + (jacobian ? 4 : 0))));
  state.SetLabel(std::string(adjoint ? "adjoint" : "forward") + (jacobian ? " jacobian" : ""));
}

void BM_warp_forward_cpu(benchmark::State &state) { run_warp(state, false); }
void BM_warp_adjoint_cpu(benchmark::State &state) { run_warp(state, true); }
BENCHMARK(BM_warp_forward_cpu)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_warp_adjoint_cpu)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
