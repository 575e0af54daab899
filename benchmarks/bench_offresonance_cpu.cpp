// B0-SPIRAL on the CPU (issue 43): 128^2 Shepp-Logan, 4 simulated coils, 4 spiral interleaves x
// 4096 samples over 16 ms, a smooth field of -80 .. +120 Hz, SNR 30, 20 CG iterations end to end:
// uncorrected, time-segmented (automatic L at 1e-3, least squares; Toeplitz or direct normal), and
// the operators alone (one Toeplitz normal application, segmented vs uncorrected; the exact
// field-corrected adjoint's pairs/s at 64^2). Counters: psnr (dB), L.
//   build/benchmarks/bench_offresonance_cpu --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include <mri/mri.hpp>

namespace {

constexpr int kInterleaves = 4, kSamples = 4096;

std::vector<float> field_map(const mri::Grid &g) {
  std::vector<float> f(static_cast<std::size_t>(g.voxels()));
  for (std::int64_t y = 0; y < g.ny(); ++y)
    for (std::int64_t x = 0; x < g.nx(); ++x) {
      const double u = static_cast<double>(x) / g.nx() - 0.5, v = static_cast<double>(y) / g.ny() - 0.5;
      f[static_cast<std::size_t>(g.index(x, y))] =
          static_cast<float>(0.7 * std::exp(-30 * ((u - 0.1) * (u - 0.1) + (v + 0.15) * (v + 0.15))) + 0.3 * (u + 0.5));
    }
  const auto [lo, hi] = std::minmax_element(f.begin(), f.end());
  const float a = *lo, b = *hi;
  for (float &v : f) v = 200 * (v - a) / (b - a) - 80;
  return f;
}

std::vector<float> readout_times(int interleaves, int samples) {
  std::vector<float> t;
  for (int i = 0; i < interleaves; ++i)
    for (int s = 0; s < samples; ++s) t.push_back(0.016f * static_cast<float>(s) / static_cast<float>(samples));
  return t;
}

struct B0Spiral {
  mri::Grid grid{128, 128};
  mri::Image truth = mri::Phantom::shepp_logan_2d().rasterize(grid);
  std::shared_ptr<const mri::FieldMap> field = std::make_shared<const mri::FieldMap>(grid, field_map(grid));
  std::shared_ptr<const mri::CoilSensitivities> maps =
      std::make_shared<const mri::CoilSensitivities>(mri::SimulatedCoils(2, 4).maps(grid));
  mri::KSpaceData data = [this] {
    const mri::Trajectory t = mri::traj::spiral(grid, kInterleaves, kSamples);
    const std::vector<float> times = readout_times(kInterleaves, kSamples);
    mri::SegmentationOptions fine;
    fine.tolerance = 1e-7;
    fine.max_segments = 64;
    mri::NufftOptions accurate;
    accurate.precision = mri::Precision::Float64;
    accurate.tolerance = 1e-6;
    const mri::SegmentedFieldOperator model(t, grid, *field, times, fine, accurate);
    std::vector<mri::cfloat> y;
    for (int c = 0; c < maps->coils(); ++c) {
      mri::Image coil = truth;
      const auto s = maps->map(c);
      for (std::size_t i = 0; i < coil.size(); ++i) coil[i] *= s[i];
      const auto yc = mri::forward(model, coil);
      y.insert(y.end(), yc.begin(), yc.end());
    }
    mri::add_noise(y, 30.0, 2026);
    return mri::KSpaceData(t, std::move(y), {}, maps->coils(), times);
  }();
};

const B0Spiral &problem() {
  static const B0Spiral p;
  return p;
}

double scaled_psnr(mri::Image image, const mri::Image &truth) {
  const mri::cfloat s = mri::best_scale(image, truth);
  for (mri::cfloat &v : image.values()) v *= s;
  return mri::psnr(image, truth);
}

// Arg 0: uncorrected; 1: time-segmented, Toeplitz normal; 2: time-segmented, direct normal.
void BM_B0Spiral_EndToEnd(benchmark::State &state) {
  const B0Spiral &p = problem();
  mri::ReconOptions o;
  o.backend = mri::Backend::Cpu;
  o.solver.iterations = 20;
  o.solver.tolerance = 0;
  o.coils.sensitivities = p.maps;
  if (state.range(0) > 0) o.offresonance.field_map = p.field;
  if (state.range(0) == 2) o.solver.normal = mri::Normal::Direct;
  mri::ReconResult r;
  for (auto _ : state) {
    r = mri::reconstruct(p.data, p.grid, o);
    benchmark::DoNotOptimize(r.image.data());
  }
  state.counters["psnr"] = scaled_psnr(r.image, p.truth);
  state.counters["L"] = r.report.segments;
  state.counters["cg_s"] = r.report.cg_seconds;
  state.counters["q_s"] = r.report.q_seconds;
  state.SetLabel(state.range(0) == 0 ? "uncorrected" : state.range(0) == 1 ? "segmented toeplitz" : "segmented direct");
}
BENCHMARK(BM_B0Spiral_EndToEnd)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// One application of the normal operator: Arg 0 the uncorrected QOperator, 1 SegmentedToeplitz.
void BM_B0Spiral_NormalApply(benchmark::State &state) {
  const B0Spiral &p = problem();
  const mri::Image x = p.truth;
  mri::Image out(p.grid);
  if (state.range(0) == 0) {
    const mri::QOperator q = mri::QOperator::from_q(p.grid, mri::nufft_q(p.data.trajectory(), {}, p.grid));
    for (auto _ : state) q.forward(x, out);
  } else {
    const mri::SegmentedFieldOperator a(p.data.trajectory(), p.grid, *p.field, p.data.sample_times());
    const mri::SegmentedToeplitz t(a, {});
    for (auto _ : state) t.forward(x, out);
    state.counters["L"] = a.segmentation().segments;
  }
  benchmark::DoNotOptimize(out.data());
}
BENCHMARK(BM_B0Spiral_NormalApply)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The exact field-corrected adjoint at 64^2 x 8192 samples: pairs/s (Arg: 0 float32, 1 float64).
void BM_FieldFourier_Adjoint(benchmark::State &state) {
  const mri::Grid g(64, 64);
  const mri::Trajectory t = mri::traj::spiral(g, 4, 2048);
  const auto field = std::make_shared<const mri::FieldMap>(g, field_map(g));
  const mri::Precision precision = state.range(0) == 0 ? mri::Precision::Float32 : mri::Precision::Float64;
  const mri::FieldFourierOperator a(t, g, field, readout_times(4, 2048), {mri::Backend::Cpu, precision});
  const std::vector<mri::cfloat> y(t.size(), mri::cfloat(1.0f, 0.5f));
  mri::Image x(g);
  for (auto _ : state) a.adjoint(y, x);
  state.counters["pairs_per_s"] = benchmark::Counter(static_cast<double>(g.voxels()) * static_cast<double>(t.size()),
                                                     benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(mri::to_string(precision));
}
BENCHMARK(BM_FieldFourier_Adjoint)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
