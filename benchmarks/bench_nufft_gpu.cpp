// The CUDA gridding NUFFT (the same problems as cuFINUFFT's in bench_nufft_front_gpu; the
// comparison: docs/performance.md, "Gridding NUFFT: time against accuracy"):
//
//   NUFFT_adjoint/dims:2/method/tol  256^2, M = 2^20 uniform random
//   NUFFT_adjoint/dims:3/method/tol  128^3, M = 2^21 uniform random
//   NUFFT_adjoint_width/dims/method/W  the same with the kernel width fixed (cuFINUFFT's 4 / 6)
//   NUFFT_forward                    the same problems, interpolation (RGA plan)
//   NUFFT_plan/dims                  NufftOperator construction until the plan is ready (its
//                                    stream synchronised), host wall clock: kernel choice (kept
//                                    per problem), trajectory upload, device range check, setup,
//                                    sort, weights, offsets, cuFFT plan (kept per shape). The
//                                    trajectory is moved in: its copy (the by-value
//                                    parameter, when a caller copies) is the counter copy_ms.
//                                    cold_ms: one plan after release_gridding_cache() and with a
//                                    kernel request not seen before (pool growth, cuFFT planning,
//                                    pinned staging, kernel fit); return_ms: the constructor's
//                                    return (the sort still running); setup_ms: device part
//   NUFFT_adjoint_coils/traj/method/tol  128^3, M = 2^21 (traj 0: uniform random; 1: koosh,
//                                    8192 spokes x 256), kCoilBlock = 4 coils in one
//                                    adjoint_coils_device: RGA grids them in one coil-batched
//                                    pass, the others one coil after another (what
//                                    Gridding::Auto should take for several coils)
//   GRID2D/method                    PROPELLER 256^2 (16 x 32 x 256 = 2^17), adjoint
// method: 0 = Scatter with ScatterMethod::Global (GA, thread per sample, global atomics),
// 1 = Gather (RGA, deterministic), 2 = Scatter with ScatterMethod::Shared (SM tiles, the default
// Scatter), 3 = ScatterFixed (SMF: SM in fixed point, deterministic). tol: -log10.
//
// Time: CUDA events around one execute on device-resident data (permute, grid, cuFFT,
// deapodize/crop; transfers excluded, as cuFINUFFT's execute figures), median of 20 after a
// warm-up, reported as manual time. Counters: points/s = M / time; rel_err against the exact
// sums (float32 separable path) on the central 32^2 / 8^3 voxels (adjoint) or every 1024th
// sample (forward); W and G as chosen.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "nufft/gridding_cuda.hpp"
#include "../tests/gpu/sampled_reference.hpp"
#include "bench_support.hpp"
#include "mri/fourier.hpp"
#include "mri/nufft.hpp"
#include "mri/options.hpp"
#include "mri/trajectory.hpp"
#include "mri_backend/direct_sums.hpp"

namespace {

using namespace mri;
using bench::random_complex;
using bench::relative_error;

constexpr int kReps = 20;

struct Problem {
  Grid grid;
  Trajectory traj;
  std::vector<cfloat> data;
  Image image;
};

const Problem &problem(int dims) {
  static const Problem p2 = [] {
    Problem q{Grid(256, 256), {}, {}, {}};
    q.traj = traj::uniform_random(q.grid, std::size_t{1} << 20, 7);
    q.data = random_complex(q.traj.size(), 1);
    q.image = Image(q.grid, random_complex(static_cast<std::size_t>(q.grid.voxels()), 2));
    return q;
  }();
  static const Problem p3 = [] {
    Problem q{Grid(128, 128, 128), {}, {}, {}};
    q.traj = traj::uniform_random(q.grid, std::size_t{1} << 21, 8);
    q.data = random_complex(q.traj.size(), 3);
    q.image = Image(q.grid, random_complex(static_cast<std::size_t>(q.grid.voxels()), 4));
    return q;
  }();
  return dims == 3 ? p3 : p2;
}

using gpu_test::cuda_nufft;

double adjoint_error(const Problem &p, const Image &nufft) {
  const std::int64_t c = p.grid.dims() == 3 ? 8 : 32;
  const Grid centre(c, c, p.grid.dims() == 3 ? c : 1);
  std::vector<cfloat> exact(static_cast<std::size_t>(centre.voxels())), mine(exact.size());
  detail::adjoint_sum_f32(p.traj, p.data, centre, p.grid, exact.data());
  for (std::int64_t z = 0; z < centre.nz(); ++z)
    for (std::int64_t y = 0; y < c; ++y)
      for (std::int64_t x = 0; x < c; ++x)
        mine[static_cast<std::size_t>(centre.index(x, y, z))] =
            nufft.at(x + p.grid.nx() / 2 - c / 2, y + p.grid.ny() / 2 - c / 2,
                     p.grid.dims() == 3 ? z + p.grid.nz() / 2 - c / 2 : 0);
  return relative_error(mine, exact);
}

double forward_error(const Problem &p, const std::vector<cfloat> &nufft) {
  const bench::SampleSubset sub = bench::every_nth_sample(p.traj, nufft, 1024);
  std::vector<cfloat> exact(sub.points.size());
  detail::forward_sum_f32(Trajectory(p.grid.dims(), sub.points), p.image, exact.data());
  return relative_error(sub.values, exact);
}

Gridding gridding_of(std::int64_t method) {
  return method == 1 ? Gridding::Gather : method == 3 ? Gridding::ScatterFixed : Gridding::Scatter;
}

void set_method(cuda::detail::NufftDevicePlan &plan, std::int64_t method) {
  plan.set_scatter_method(method == 0 ? cuda::detail::ScatterMethod::Global : cuda::detail::ScatterMethod::Shared);
}

// False, with the benchmark marked skipped and why, where no CUDA device is usable.
bool gpu_usable(benchmark::State &state) {
  if (cuda_available()) return true;
  state.SkipWithError("no usable CUDA device");
  return false;
}

// The timed loop of a device execute: `time_ms()` (an event-timed median of kReps runs) is each
// iteration's manual time; then points/s = `points` / that time.
template <class TimeMs> void time_device(benchmark::State &state, std::size_t points, TimeMs &&time_ms) {
  double ms = 0;
  for (auto _ : state) {
    ms = time_ms();
    state.SetIterationTime(ms * 1e-3);
  }
  state.counters["points/s"] = static_cast<double>(points) / (ms * 1e-3);
}

// One adjoint of problem range(0) with method range(1) and options o: time, error, W, G.
void time_adjoint(benchmark::State &state, const NufftOptions &o) {
  const Problem &p = problem(static_cast<int>(state.range(0)));
  const NufftOperator op(p.traj, p.grid, o);
  auto &plan = cuda::detail::device_plan_of(op);
  set_method(plan, state.range(1));
  plan.upload_samples(p.data.data());
  time_device(state, p.traj.size(), [&] { return plan.time_adjoint_ms(o.gridding, kReps); });
  Image out(p.grid);
  plan.download_image(out.data());
  state.counters["rel_err"] = adjoint_error(p, out);
  state.counters["W"] = op.kernel().width;
  state.counters["G"] = static_cast<double>(op.oversampled_grid().nx());
}

// range(0): dims, range(1): method, range(2): -log10(tol)
void NUFFT_adjoint(benchmark::State &state) {
  if (!gpu_usable(state)) return;
  time_adjoint(state, cuda_nufft(std::pow(10.0, -static_cast<double>(state.range(2))), gridding_of(state.range(1))));
}
BENCHMARK(NUFFT_adjoint)
    ->ArgNames({"dims", "method", "tol"})
    ->ArgsProduct({{2}, {0, 1, 2, 3}, {3, 5}})
    ->ArgsProduct({{3}, {0, 1, 2, 3}, {3, 5}})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

const Trajectory &koosh_3d() {
  static const Trajectory t = traj::koosh(Grid(128, 128, 128), 8192, 256);
  return t;
}

// range(0): trajectory (0 uniform, 1 koosh), range(1): method, range(2): -log10(tol). Time of
// kCoilBlock coils; points/s counts each coil's samples.
void NUFFT_adjoint_coils(benchmark::State &state) {
  if (!gpu_usable(state)) return;
  const Problem &p = problem(3);
  const Trajectory &t = state.range(0) == 0 ? p.traj : koosh_3d();
  const NufftOptions o = cuda_nufft(std::pow(10.0, -static_cast<double>(state.range(2))), gridding_of(state.range(1)));
  const NufftOperator op(t, p.grid, o);
  auto &plan = cuda::detail::device_plan_of(op);
  set_method(plan, state.range(1));
  plan.upload_samples(p.data.data());
  constexpr int kCoils = cuda::detail::NufftDevicePlan::kCoilBlock;
  time_device(state, kCoils * t.size(), [&] { return plan.time_adjoint_coils_ms(o.gridding, kReps); });
  state.counters["W"] = op.kernel().width;
}
BENCHMARK(NUFFT_adjoint_coils)
    ->ArgNames({"traj", "method", "tol"})
    ->ArgsProduct({{0, 1}, {1, 2, 3}, {3, 5}})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// cuFINUFFT's widths for 1e-3 / 1e-5 (4 / 6), whatever the tolerance -> width table picks:
// range(2) = W, tolerance 1e-3 for W <= 4 (the polynomial fit's accuracy), 1e-5 above.
void NUFFT_adjoint_width(benchmark::State &state) {
  if (!gpu_usable(state)) return;
  NufftOptions o = cuda_nufft(state.range(2) <= 4 ? 1e-3 : 1e-5, gridding_of(state.range(1)));
  o.width = static_cast<int>(state.range(2));
  time_adjoint(state, o);
}
BENCHMARK(NUFFT_adjoint_width)
    ->ArgNames({"dims", "method", "W"})
    ->ArgsProduct({{2}, {0, 1, 2}, {4}})
    ->ArgsProduct({{3}, {0, 1, 2}, {4, 6}})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void NUFFT_forward(benchmark::State &state) {
  if (!gpu_usable(state)) return;
  const Problem &p = problem(static_cast<int>(state.range(0)));
  const double tol = std::pow(10.0, -static_cast<double>(state.range(1)));
  const NufftOperator op(p.traj, p.grid, cuda_nufft(tol, Gridding::Gather));
  auto &plan = cuda::detail::device_plan_of(op);
  plan.upload_image(p.image.data());
  time_device(state, p.traj.size(), [&] { return plan.time_forward_ms(kReps); });
  std::vector<cfloat> out(p.traj.size());
  plan.download_samples(out.data());
  state.counters["rel_err"] = forward_error(p, out);
  state.counters["W"] = op.kernel().width;
}
BENCHMARK(NUFFT_forward)
    ->ArgNames({"dims", "tol"})
    ->ArgsProduct({{2, 3}, {3, 5}})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void NUFFT_plan(benchmark::State &state) {
  if (!gpu_usable(state)) return;
  const int dims = static_cast<int>(state.range(0));
  const Problem &p = problem(dims);
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  { const NufftOperator warm(p.traj, p.grid, cuda_nufft(1e-3, Gridding::Gather)); } // CUDA/cuFFT first-use costs
  double cold = 0;
  {
    cuda::detail::release_gridding_cache();
    Trajectory t = p.traj;
    const auto t0 = Clock::now();
    // A tolerance not requested before (same kernel width): the kernel fit runs again.
    const NufftOperator op(std::move(t), p.grid, cuda_nufft(1.01e-3 + 1e-5 * dims, Gridding::Gather));
    cuda::detail::device_plan_of(op).synchronize();
    cold = ms(t0, Clock::now());
  }
  double copy = 0, ret = 0, setup = 0;
  for (auto _ : state) {
    const auto c0 = Clock::now();
    Trajectory t = p.traj;
    const auto t0 = Clock::now();
    const NufftOperator op(std::move(t), p.grid, cuda_nufft(1e-3, Gridding::Gather));
    const auto t1 = Clock::now();
    cuda::detail::device_plan_of(op).synchronize();
    const auto t2 = Clock::now();
    state.SetIterationTime(ms(t0, t2) * 1e-3);
    copy += ms(c0, t0);
    ret += ms(t0, t1);
    setup = cuda::detail::device_plan_of(op).setup_ms();
  }
  // cuFINUFFT's setpts reads device arrays: the plan from points already on the device.
  const cuda::detail::DevicePoints points(p.traj);
  constexpr int kFromDevice = 10;
  double from_device = 0;
  for (int r = 0; r < kFromDevice; ++r) {
    const auto t0 = Clock::now();
    const auto plan = cuda::detail::make_device_nufft_plan(points.data(), points.size(), p.grid,
                                                     cuda_nufft(1e-3, Gridding::Gather), {1, 1, 1});
    plan->synchronize();
    from_device += ms(t0, Clock::now());
  }
  state.counters["from_device_ms"] = from_device / kFromDevice;
  const double n = static_cast<double>(state.iterations());
  state.counters["copy_ms"] = copy / n;
  state.counters["return_ms"] = ret / n;
  state.counters["cold_ms"] = cold;
  state.counters["setup_ms"] = setup;
}
BENCHMARK(NUFFT_plan)->ArgName("dims")->Arg(2)->Arg(3)->Iterations(10)->UseManualTime()->Unit(benchmark::kMillisecond);

void GRID2D(benchmark::State &state) {
  if (!gpu_usable(state)) return;
  static const Trajectory t = traj::propeller(Grid(256, 256), 16, 32, 256);
  static const std::vector<cfloat> data = random_complex(t.size(), 5);
  const Gridding g = gridding_of(state.range(0));
  const NufftOperator op(t, Grid(256, 256), cuda_nufft(1e-3, g));
  auto &plan = cuda::detail::device_plan_of(op);
  set_method(plan, state.range(0));
  plan.upload_samples(data.data());
  time_device(state, t.size(), [&] { return plan.time_adjoint_ms(g, kReps); });
}
BENCHMARK(GRID2D)->ArgName("method")->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
