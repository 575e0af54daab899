// B0-SPIRAL on the CPU (issue 43): 128^2 Shepp-Logan, 4 simulated coils, 4 spiral interleaves x
// 4096 samples over 16 ms, a smooth field of -80 .. +120 Hz, SNR 30, 20 CG iterations end to end:
// uncorrected, time-segmented (automatic L at 1e-3, least squares; Toeplitz or direct normal), and
// the operators alone (one Toeplitz normal application, segmented vs uncorrected; the exact
// field-corrected adjoint's pairs/s at 64^2), and the segmentation's host part (the fit, cached or
// not, and the host tables). Counters (every family the same set): psnr (dB), L, cg_s, q_s, pairs_per_s.
//   build/benchmarks/bench_offresonance_cpu --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include <mri/mri.hpp>

namespace {

constexpr int kInterleaves = 4, kSamples = 4096;
constexpr double kReadout = 0.016; // seconds

// B0-SPIRAL's data by the SDK's simulation (mri/offresonance.hpp), as examples/spiral_b0 makes it.
struct B0Spiral {
  mri::Grid grid{128, 128};
  mri::Image truth = mri::Phantom::shepp_logan_2d().rasterize(grid);
  std::shared_ptr<const mri::FieldMap> field = std::make_shared<const mri::FieldMap>(mri::simulated_field_map(grid, 200));
  std::shared_ptr<const mri::CoilSensitivities> maps =
      std::make_shared<const mri::CoilSensitivities>(mri::SimulatedCoils(2, 4).maps(grid));
  mri::KSpaceData data =
      mri::simulate_field_acquisition(truth, mri::traj::spiral(grid, kInterleaves, kSamples), *field,
                                      mri::readout_times(kInterleaves, kSamples, kReadout), maps.get(), 30.0);
};

// Every family sets the same counters (the CSV reporter needs one header): 0 where one does not apply.
void set_counters(benchmark::State &state, double psnr, double segments, double cg_s, double q_s, double pairs) {
  state.counters["psnr"] = psnr;
  state.counters["L"] = segments;
  state.counters["cg_s"] = cg_s;
  state.counters["q_s"] = q_s;
  state.counters["pairs_per_s"] = benchmark::Counter(pairs, benchmark::Counter::kIsIterationInvariantRate);
}

const B0Spiral &problem() {
  static const B0Spiral p;
  return p;
}

double scaled_psnr(mri::Image image, const mri::Image &truth) {
  const mri::cfloat s = mri::best_scale(image, truth);
  for (mri::cfloat &v : image.values()) v *= s;
  return mri::psnr(image, truth);
}

// Arg 0: uncorrected; 1: time-segmented, Toeplitz normal; 2: time-segmented, direct normal; 3: as
// 1 with the automatic L at 2e-2 instead of 1e-3 (L = 6 here: docs/offresonance.md, "Speed").
void BM_B0Spiral_EndToEnd(benchmark::State &state) {
  const B0Spiral &p = problem();
  mri::ReconOptions o;
  o.backend = mri::Backend::Cpu;
  o.solver.iterations = 20;
  o.solver.tolerance = 0;
  o.coils.sensitivities = p.maps;
  if (state.range(0) > 0) o.offresonance.field_map = p.field;
  if (state.range(0) == 2) o.solver.normal = mri::Normal::Direct;
  if (state.range(0) == 3) o.offresonance.segmentation.tolerance = 2e-2;
  mri::ReconResult r;
  for (auto _ : state) {
    r = mri::reconstruct(p.data, p.grid, o);
    benchmark::DoNotOptimize(r.image.data());
  }
  set_counters(state, scaled_psnr(r.image, p.truth), r.report.segments, r.report.cg_seconds, r.report.q_seconds, 0);
  constexpr const char *kLabels[] = {"uncorrected", "segmented toeplitz", "segmented direct", "segmented toeplitz 2e-2"};
  state.SetLabel(kLabels[state.range(0)]);
}
BENCHMARK(BM_B0Spiral_EndToEnd)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->UseRealTime();

// One application of the normal operator: Arg 0 the uncorrected QOperator, 1 SegmentedToeplitz.
void BM_B0Spiral_NormalApply(benchmark::State &state) {
  const B0Spiral &p = problem();
  const mri::Image x = p.truth;
  mri::Image out(p.grid);
  int segments = 0;
  if (state.range(0) == 0) {
    const mri::QOperator q = mri::QOperator::from_q(p.grid, mri::nufft_q(p.data.trajectory(), {}, p.grid));
    for (auto _ : state) q.forward(x, out);
  } else {
    const mri::SegmentedFieldOperator a(p.data.trajectory(), p.grid, *p.field, p.data.sample_times());
    const mri::SegmentedToeplitz t(a, {});
    for (auto _ : state) t.forward(x, out);
    segments = a.segmentation().segments;
  }
  benchmark::DoNotOptimize(out.data());
  set_counters(state, 0, segments, 0, 0, 0);
}
BENCHMARK(BM_B0Spiral_NormalApply)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The exact field-corrected adjoint at 64^2 x 8192 samples: pairs/s (Arg: 0 float32, 1 float64).
void BM_FieldFourier_Adjoint(benchmark::State &state) {
  const mri::Grid g(64, 64);
  const mri::Trajectory t = mri::traj::spiral(g, 4, 2048);
  const auto field = std::make_shared<const mri::FieldMap>(mri::simulated_field_map(g, 200));
  const mri::Precision precision = state.range(0) == 0 ? mri::Precision::Float32 : mri::Precision::Float64;
  const mri::FieldFourierOperator a(t, g, field, mri::readout_times(4, 2048, kReadout), {mri::Backend::Cpu, precision});
  const std::vector<mri::cfloat> y(t.size(), mri::cfloat(1.0f, 0.5f));
  mri::Image x(g);
  for (auto _ : state) a.adjoint(y, x);
  set_counters(state, 0, 0, 0, 0, static_cast<double>(g.voxels()) * static_cast<double>(t.size()));
  state.SetLabel(mri::to_string(precision));
}
BENCHMARK(BM_FieldFourier_Adjoint)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The host's part of the segmentation on B0-SPIRAL (128^2, M = 16384), what a GPU reconstruction
// pays on the host before its kernels (bench_offresonance_gpu): Arg 0 the fit (L, interpolator,
// bound) on a map that differs each iteration (one voxel moved by 1e-3 Hz: the fit cache misses);
// 1 the same fit found in the cache (the key's hash); 2 the host's O(M L) and O(N L) tables
// (make_segment_tables: what the GPU makes on the device instead).
void BM_SegmentField_Host(benchmark::State &state) {
  const B0Spiral &p = problem();
  const std::span<const float> times = p.data.sample_times();
  const mri::TimeSegmentation fit = mri::fit_segmentation(*p.field, times, {});
  std::vector<float> hz = p.field->hz();
  int iteration = 0;
  for (auto _ : state) {
    if (state.range(0) == 0) {
      state.PauseTiming();
      hz[0] = p.field->hz()[0] + 1e-3f * static_cast<float>(++iteration % 64 + 1);
      const mri::FieldMap moved(p.grid, hz);
      state.ResumeTiming();
      benchmark::DoNotOptimize(mri::fit_segmentation(moved, times, {}).segments);
    } else if (state.range(0) == 1) {
      benchmark::DoNotOptimize(mri::fit_segmentation(*p.field, times, {}).segments);
    } else {
      mri::TimeSegmentation s = fit;
      mri::make_segment_tables(s, *p.field, times);
      benchmark::DoNotOptimize(s.sample_coefficients.data());
    }
  }
  set_counters(state, 0, fit.segments, 0, 0, 0);
  static const char *labels[] = {"fit (cache miss)", "fit (cache hit)", "host tables"};
  state.SetLabel(labels[state.range(0)]);
}
BENCHMARK(BM_SegmentField_Host)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
