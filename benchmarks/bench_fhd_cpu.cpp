// FHD-2D on the CPU (MISSION.md's named problem): 256^2 voxels, M = 2^16 spiral points
// (traj::spiral(grid, 16, 4096)), random complex data / image.
//
//   FHD2D_adjoint_f32 / FHD2D_forward_f32   the fast float32 path (separable GEMM) on the
//                                           whole problem, through FourierOperator
//   FHD2D_adjoint_f64 / FHD2D_forward_f64   the float64 direct-sum reference on a 2^10-sample
//                                           subset (every 64th sample) of the same trajectory;
//                                           on the full problem it takes minutes per call
//
// Counters:
//   pairs/s    N * M / real time (kIsRate; N = voxels, M = samples of the run). One pair is
//              one voxel-sample term exp(+-i 2 pi k.x) * value; in the GEMM path it costs one
//              complex multiply-add (8 real FLOPs) plus the amortised phase tables.
//   rel_err    ||fast - reference|| / ||reference|| (L2), computed once on the subset: the
//              float32 path vs the float64 reference for the same subset trajectory. For the
//              forward this is exact per-sample accuracy of the full problem (each output
//              sample is independent of the others).
//   rel_err_full_M  (adjoint only) the same error for the full 2^16-sample sum, on the
//              central 16x16 voxels (the reference evaluated with out = 16x16, period = 256^2).
//
// Median of 5 repetitions (real time) is the figure to quote; the machine's cores are shared.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "mri/fourier.hpp"
#include "mri/trajectory.hpp"
#include "mri_backend/direct_sums.hpp"

namespace {

using namespace mri;
using bench::random_complex;
using bench::relative_error;

constexpr std::size_t kSubsetSize = 1024;

struct Fhd2d {
  Grid grid{256, 256};
  Trajectory traj;
  std::vector<cfloat> data;
  Trajectory subset;
  std::vector<cfloat> subset_data;
  Image image;
};

const Fhd2d &fhd2d() {
  static const Fhd2d p = [] {
    Fhd2d q;
    q.traj = traj::spiral(q.grid, 16, 4096);
    q.data = random_complex(q.traj.size(), 1);
    bench::SampleSubset sub = bench::every_nth_sample(q.traj, q.data, q.traj.size() / kSubsetSize, kSubsetSize);
    q.subset = Trajectory(2, std::move(sub.points));
    q.subset_data = std::move(sub.values);
    q.image = Image(q.grid, random_complex(static_cast<std::size_t>(q.grid.voxels()), 2));
    return q;
  }();
  return p;
}

constexpr OperatorOptions kFast{Backend::Cpu, Precision::Float32};
constexpr OperatorOptions kReference{Backend::Cpu, Precision::Float64};

struct Errors {
  double adjoint = 0, forward = 0, adjoint_full_m = 0;
};

const Errors &errors() {
  static const Errors e = [] {
    const Fhd2d &p = fhd2d();
    Errors r;
    const FourierOperator fast(p.subset, p.grid, kFast), ref(p.subset, p.grid, kReference);
    const Image a = adjoint(fast, p.subset_data), b = adjoint(ref, p.subset_data);
    r.adjoint = relative_error(a, b);
    const auto fa = forward(fast, p.image), fb = forward(ref, p.image);
    r.forward = relative_error(fa, fb);

    // Full M on the central 16x16 voxels (coordinates -8..7, image indices 120..135).
    const Grid centre(16, 16);
    std::vector<cfloat> reference(static_cast<std::size_t>(centre.voxels())), fast_centre;
    detail::adjoint_sum_f64(p.traj, p.data, centre, p.grid, reference.data());
    const Image full = adjoint(FourierOperator(p.traj, p.grid, kFast), p.data);
    for (std::int64_t y = 0; y < 16; ++y)
      for (std::int64_t x = 0; x < 16; ++x) fast_centre.push_back(full.at(120 + x, 120 + y));
    r.adjoint_full_m = relative_error(fast_centre, reference);
    return r;
  }();
  return e;
}

void set_pairs(benchmark::State &state, const Grid &grid, std::size_t m) {
  state.counters["pairs/s"] = benchmark::Counter(static_cast<double>(grid.voxels()) * static_cast<double>(m),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void FHD2D_adjoint_f32(benchmark::State &state) {
  const Fhd2d &p = fhd2d();
  const FourierOperator op(p.traj, p.grid, kFast);
  for (auto _ : state) {
    Image out = adjoint(op, p.data);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_pairs(state, p.grid, p.traj.size());
  state.counters["rel_err"] = errors().adjoint;
  state.counters["rel_err_full_M"] = errors().adjoint_full_m;
}

void FHD2D_forward_f32(benchmark::State &state) {
  const Fhd2d &p = fhd2d();
  const FourierOperator op(p.traj, p.grid, kFast);
  for (auto _ : state) {
    auto out = forward(op, p.image);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_pairs(state, p.grid, p.traj.size());
  state.counters["rel_err"] = errors().forward;
}

void FHD2D_adjoint_f64(benchmark::State &state) {
  const Fhd2d &p = fhd2d();
  const FourierOperator op(p.subset, p.grid, kReference);
  for (auto _ : state) {
    Image out = adjoint(op, p.subset_data);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_pairs(state, p.grid, p.subset.size());
}

void FHD2D_forward_f64(benchmark::State &state) {
  const Fhd2d &p = fhd2d();
  const FourierOperator op(p.subset, p.grid, kReference);
  for (auto _ : state) {
    auto out = forward(op, p.image);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_pairs(state, p.grid, p.subset.size());
}

} // namespace

BENCHMARK(FHD2D_adjoint_f32)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(5)->DisplayAggregatesOnly(true);
BENCHMARK(FHD2D_forward_f32)->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(5)->DisplayAggregatesOnly(true);
BENCHMARK(FHD2D_adjoint_f64)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3)->DisplayAggregatesOnly(true);
BENCHMARK(FHD2D_forward_f64)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3)->DisplayAggregatesOnly(true);

BENCHMARK_MAIN();
