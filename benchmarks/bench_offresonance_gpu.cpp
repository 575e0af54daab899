// Off-resonance on the GPU (issue 43), beside bench_offresonance_cpu:
//   BM_FieldFhd        the exact field-corrected F^H D (and F) against the uncorrected Tuned F^H D in
//                      the same run, on FHD-2D (256^2, 2^16 spiral points) and FHD-3D-S (64^3, 2^18
//                      random points), a field of -80 .. +120 Hz over a 16 ms readout; CUDA-event
//                      times of whole calls. Counters: pairs/s of each, their ratio (the issue's
//                      target: field >= 0.8 x Tuned), and the SFU bound measured in the same run
//                      (one __sincosf per pair: what any per-pair kernel is bound by).
//   BM_B0Spiral_Gpu    B0-SPIRAL end to end on the device, 20 CG iterations, SNR 30, -80 .. +120 Hz
//                      over 16 ms readouts (mri::simulate_field_acquisition): size 0 is 128^2, 4 coils,
//                      4 x 4096 spiral samples; size 1 is 256^2, 8 coils, 16 x 4096 (where setup no
//                      longer dominates). Each size: uncorrected, time-segmented (Toeplitz / direct
//                      normal), exact (size 0 only: O(N M) per iteration). Counters: psnr, L, phase
//                      seconds, and x_uncorrected (wall time over the same size's uncorrected one
//                      in this run: issue 43's GPU target is <= 2 for the segmented reconstruction).
//   BM_SegmentedNormal_Gpu  one application of the segmented Toeplitz normal (SegmentedToeplitzDevice)
//                      of B0-SPIRAL's sizes with the reconstruction's segmentation (L = 8), SENSE's
//                      coils, per path (segmented_cuda.hpp, SegmentedToeplitzPaths): 0 whole-grid
//                      transforms with a coil per product thread (the path before the pruned one),
//                      1 whole + fused product, 2 pruned + per-coil product, 3 pruned + fused (Auto
//                      in 2D), 4 and 5 pruned in place (one set of grids) + per-coil / fused.
//                      CUDA-event times: the application (median) and each stage of it
//                      (pad, forward FFT, product, inverse FFT, crop; medians), in ms; q_s: the
//                      kernels' construction (wall), q_nufft_ms: its L(L+1)/2 batched adjoint NUFFTs
//                      on the doubled grid alone (CUDA events, one call on a plan made beforehand).
// Every family sets the same counters (the CSV reporter needs one header): 0 where one does not apply.
//   build-gpu/benchmarks/bench_offresonance_gpu --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <mri/mri.hpp>

#include "exact/fhd_backend.hpp"
#include "mri_backend/recon_report.hpp"
#include "nufft/gridding_cuda.hpp"
#include "offresonance/field_fourier_cuda.hpp"
#include "offresonance/segmented_cuda.hpp"
#include "recon/device_image.hpp"
#include "sense/sense_cuda.hpp"

namespace {

using mri::cuda::detail::FhdPlan;
using mri::cuda::detail::FieldFourierPlan;
using mri::cuda::detail::FieldKernel;

constexpr double kReadout = 0.016; // seconds

std::vector<float> field_map(const mri::Grid &g) { return mri::simulated_field_map(g, 200).hz(); }

// The counters of every family (one header for the CSV reporter).
struct Counters {
  double tuned_pairs = 0, field_pairs = 0, field_forward_pairs = 0, sfu_bound_pairs = 0, kernel_pairs = 0;
  double psnr = 0, segments = 0, setup_s = 0, fhd_s = 0, q_s = 0, cg_s = 0, other_s = 0, x_uncorrected = 0;
  double transfer_s = 0, coil_s = 0, fft_setup_s = 0, report_total_s = 0;
  double apply_ms = 0, pad_ms = 0, forward_ms = 0, product_ms = 0, inverse_ms = 0, crop_ms = 0, q_nufft_ms = 0;
  void set(benchmark::State &state) const {
    state.counters["tuned_pairs/s"] = tuned_pairs;
    state.counters["field_pairs/s"] = field_pairs;
    state.counters["field_forward_pairs/s"] = field_forward_pairs;
    state.counters["field/tuned"] = tuned_pairs > 0 ? field_pairs / tuned_pairs : 0;
    state.counters["sfu_bound_pairs/s"] = sfu_bound_pairs;
    state.counters["field/sfu_bound"] = sfu_bound_pairs > 0 ? field_pairs / sfu_bound_pairs : 0;
    state.counters["pairs/s"] = kernel_pairs;
    state.counters["psnr"] = psnr;
    state.counters["L"] = segments;
    state.counters["setup_s"] = setup_s;
    state.counters["fhd_s"] = fhd_s;
    state.counters["q_s"] = q_s;
    state.counters["cg_s"] = cg_s;
    state.counters["other_s"] = other_s;
    state.counters["transfer_s"] = transfer_s;
    state.counters["coil_s"] = coil_s;
    state.counters["fft_setup_s"] = fft_setup_s;
    state.counters["report_total_s"] = report_total_s;
    state.counters["apply_ms"] = apply_ms;
    state.counters["pad_ms"] = pad_ms;
    state.counters["forward_ms"] = forward_ms;
    state.counters["product_ms"] = product_ms;
    state.counters["inverse_ms"] = inverse_ms;
    state.counters["crop_ms"] = crop_ms;
    state.counters["q_nufft_ms"] = q_nufft_ms;
    state.counters["x_uncorrected"] = x_uncorrected;
  }
};

mri::Trajectory random_points(const mri::Grid &g, std::size_t m) {
  std::mt19937_64 rng(43);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<mri::KPoint> p(m);
  for (auto &k : p) k = {u(rng) * static_cast<float>(g.nx()), u(rng) * static_cast<float>(g.ny()), u(rng) * static_cast<float>(g.nz())};
  return mri::Trajectory(3, std::move(p)).wrapped(g);
}

struct FhdProblem {
  const char *name;
  mri::Grid grid;
  mri::Trajectory trajectory;
  std::vector<float> times;
};

const FhdProblem &fhd_problem(int which) {
  static const FhdProblem p2{"FHD-2D", mri::Grid(256, 256),
                             mri::traj::spiral(mri::Grid(256, 256), 16, 4096).wrapped(mri::Grid(256, 256)),
                             mri::readout_times(16, 4096, kReadout)};
  static const FhdProblem p3{"FHD-3D-S", mri::Grid(64, 64, 64), random_points(mri::Grid(64, 64, 64), 1u << 18),
                             mri::readout_times(64, 4096, kReadout)};
  return which == 0 ? p2 : p3;
}

// Arg 0: FHD-2D, 1: FHD-3D-S. Each iteration times the uncorrected Tuned adjoint, the field
// adjoint (SfuTrig) and the field forward (SfuTrig) once each; the reported time is the field
// adjoint's.
void BM_FieldFhd(benchmark::State &state) {
  const FhdProblem &p = fhd_problem(static_cast<int>(state.range(0)));
  const std::vector<float> hz = field_map(p.grid);
  FhdPlan plain(p.trajectory, p.grid, p.grid);
  FieldFourierPlan field(p.trajectory, p.grid, hz, p.times);
  const std::vector<mri::cfloat> y(p.trajectory.size(), mri::cfloat(1.0f, 0.5f));
  const std::vector<mri::cfloat> x(static_cast<std::size_t>(p.grid.voxels()), mri::cfloat(0.5f, -0.25f));
  plain.upload_samples(y.data());
  field.upload_samples(y.data());
  field.upload_image(x.data());
  double tuned_ms = 0, field_ms = 0, forward_ms = 0;
  for (auto _ : state) {
    const double t = plain.time_adjoint_ms(mri::KernelPolicy::Tuned);
    const double f = field.time_adjoint_ms(FieldKernel::SfuTrig, 1);
    const double fw = field.time_forward_ms(FieldKernel::SfuTrig, 1);
    tuned_ms += t, field_ms += f, forward_ms += fw;
    state.SetIterationTime(f / 1e3);
  }
  const double pairs = static_cast<double>(p.grid.voxels()) * static_cast<double>(p.trajectory.size());
  const double n = static_cast<double>(state.iterations());
  const double tuned_rate = pairs * n / (tuned_ms / 1e3), field_rate = pairs * n / (field_ms / 1e3);
  const auto sfu = mri::cuda::detail::measure_sincos_throughput(3);
  Counters c;
  c.tuned_pairs = tuned_rate;
  c.field_pairs = field_rate;
  c.field_forward_pairs = pairs * n / (forward_ms / 1e3);
  c.sfu_bound_pairs = sfu.ops_per_second / 2;
  c.set(state);
  state.SetLabel(p.name);
}
BENCHMARK(BM_FieldFhd)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

// Every field kernel once per iteration on FHD-2D (pairs/s each), for the policy table.
void BM_FieldKernels(benchmark::State &state) {
  const FhdProblem &p = fhd_problem(0);
  FieldFourierPlan field(p.trajectory, p.grid, field_map(p.grid), p.times);
  const std::vector<mri::cfloat> y(p.trajectory.size(), mri::cfloat(1.0f, 0.5f));
  field.upload_samples(y.data());
  const auto kernel = static_cast<FieldKernel>(state.range(0));
  double ms = 0;
  for (auto _ : state) {
    const double t = field.time_adjoint_ms(kernel, 1);
    ms += t;
    state.SetIterationTime(t / 1e3);
  }
  const double pairs = static_cast<double>(p.grid.voxels()) * static_cast<double>(p.trajectory.size());
  Counters c;
  c.kernel_pairs = pairs * static_cast<double>(state.iterations()) / (ms / 1e3);
  c.set(state);
  state.SetLabel(mri::cuda::detail::to_string(kernel));
}
BENCHMARK(BM_FieldKernels)->Arg(0)->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

// B0-SPIRAL: size 0 as bench_offresonance_cpu's problem (128^2, 4 coils, 4 x 4096 samples); size 1
// 256^2, 8 coils, 16 x 4096 samples (FHD-2D's spiral), each readout 16 ms.
struct B0Spiral {
  int interleaves;
  mri::Grid grid;
  mri::Image truth;
  std::shared_ptr<const mri::FieldMap> field;
  std::shared_ptr<const mri::CoilSensitivities> maps;
  mri::KSpaceData data;

  B0Spiral(int n, int coils, int interleaves_)
      : interleaves(interleaves_), grid(n, n), truth(mri::Phantom::shepp_logan_2d().rasterize(grid)),
        field(std::make_shared<const mri::FieldMap>(mri::simulated_field_map(grid, 200))),
        maps(std::make_shared<const mri::CoilSensitivities>(mri::SimulatedCoils(2, coils).maps(grid))),
        data(mri::simulate_field_acquisition(truth, mri::traj::spiral(grid, interleaves, 4096), *field,
                                             mri::readout_times(interleaves, 4096, kReadout), maps.get(), 30.0)) {}
};

const B0Spiral &b0_problem(int size) {
  static const B0Spiral small(128, 4, 4);
  if (size == 0) return small;
  static const B0Spiral large(256, 8, 16);
  return large;
}

double scaled_psnr(mri::Image image, const mri::Image &truth) {
  const mri::cfloat s = mri::best_scale(image, truth);
  for (mri::cfloat &v : image.values()) v *= s;
  return mri::psnr(image, truth);
}

// Args (variant, size): variant 0 uncorrected; 1 time-segmented, Toeplitz normal; 2 time-segmented,
// direct normal; 3 exact. The uncorrected run of a size comes first (registration order) and leaves
// its mean wall time for the others' x_uncorrected.
void BM_B0Spiral_Gpu(benchmark::State &state) {
  static double uncorrected_seconds[2] = {0, 0};
  const int variant = static_cast<int>(state.range(0)), size = static_cast<int>(state.range(1));
  const B0Spiral &p = b0_problem(size);
  mri::ReconOptions o;
  o.backend = mri::Backend::Cuda;
  o.method = variant == 3 ? mri::Method::Exact : mri::Method::Nufft;
  o.solver.iterations = 20;
  o.solver.tolerance = 0;
  o.coils.sensitivities = p.maps;
  if (variant > 0) o.offresonance.field_map = p.field;
  if (variant >= 2) o.solver.normal = mri::Normal::Direct;
  mri::ReconResult r = mri::reconstruct(p.data, p.grid, o); // warm-up: plans, the plugin, the fit cache
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    r = mri::reconstruct(p.data, p.grid, o);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(r.image.data());
  }
  const double mean = seconds / static_cast<double>(state.iterations());
  if (variant == 0) uncorrected_seconds[size] = mean;
  Counters c;
  c.psnr = scaled_psnr(r.image, p.truth);
  c.segments = r.report.segments;
  c.setup_s = r.report.setup_seconds;
  c.fhd_s = r.report.fhd_seconds;
  c.q_s = r.report.q_seconds;
  c.cg_s = r.report.cg_seconds;
  // the last call's wall time outside its setup, F^H D, Q and CG phases (transfers, the host's
  // checks, the operators' teardown)
  c.other_s = seconds / static_cast<double>(state.iterations()) -
              (r.report.setup_seconds + r.report.fhd_seconds + r.report.q_seconds + r.report.cg_seconds);
  // what "other" holds, as the report splits it (its total against the wall time: the teardown)
  c.transfer_s = r.report.transfer_seconds;
  c.coil_s = r.report.coil_seconds;
  c.fft_setup_s = r.report.fft_setup_seconds;
  c.report_total_s = r.report.total_seconds;
  c.x_uncorrected = uncorrected_seconds[size] > 0 ? mean / uncorrected_seconds[size] : 0;
  c.set(state);
  static const char *labels[] = {"uncorrected", "segmented toeplitz", "segmented direct", "exact"};
  state.SetLabel(std::string(labels[variant]) + (size == 0 ? " 128^2x4" : " 256^2x8"));
}
BENCHMARK(BM_B0Spiral_Gpu)
    ->Args({0, 0})->Args({1, 0})->Args({2, 0})->Args({3, 0})
    ->Args({0, 1})->Args({1, 1})->Args({2, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Args (path, size, coils a pass): path as SegmentedToeplitzPaths above (0 whole/per-coil,
// 1 whole/fused, 2 pruned/per-coil, 3 pruned/fused, 4 pruned-in-place/per-coil, 5
// pruned-in-place/fused), size as BM_B0Spiral_Gpu's, coils a pass as SegmentedToeplitzPaths::coil_batch
// (0: the default rule; the sweep asks whether passes small enough for the L2 cache pay).
void BM_SegmentedNormal_Gpu(benchmark::State &state) {
  using namespace mri::cuda::detail;
  const int path = static_cast<int>(state.range(0)), size = static_cast<int>(state.range(1));
  const int coil_batch = static_cast<int>(state.range(2));
  const B0Spiral &p = b0_problem(size);
  const std::vector<float> times = mri::readout_times(p.interleaves, 4096, kReadout);
  const mri::TimeSegmentation fit = mri::fit_segmentation(*p.field, times, {});
  mri::ReconOptions o;
  o.backend = mri::Backend::Cuda;
  const mri::NufftOptions nufft = mri::detail::recon_nufft_options(o, mri::Backend::Cuda);
  const mri::Trajectory &traj = p.data.trajectory();
  const auto plan = make_device_nufft_plan(traj, p.grid, nufft);
  const SegmentedFieldDevice op(fit, times, p.field->hz(), plan, p.grid, mri::Gridding::Gather);
  const DevicePoints points(traj);
  const DeviceCoils coils(*p.maps, mri::Regularizer::None, 0, mri::cuda::default_stream());
  const SegmentedFft ffts[] = {SegmentedFft::Whole, SegmentedFft::Pruned, SegmentedFft::PrunedInPlace};
  const SegmentedToeplitzPaths paths{ffts[path / 2], path % 2 == 0 ? SegmentedProduct::PerCoil : SegmentedProduct::Fused,
                                     coil_batch};
  const SegmentedToeplitzDevice t(op, points.data(), p.data.weights(), nufft, mri::Gridding::Gather, &coils,
                                  mri::Regularizer::None, 0, paths);
  const mri::Image x0(p.grid, std::vector<mri::cfloat>(static_cast<std::size_t>(p.grid.voxels()), mri::cfloat(0.5f, -0.25f)));
  mri::cuda::DeviceImage x(x0, op.stream()), out(p.grid, op.stream());
  t.apply(x, out); // warm-up
  mri::cuda::StreamTimer timer(op.stream());
  std::vector<double> total, pad, forward, product, inverse, crop;
  for (auto _ : state) {
    timer.start();
    t.apply(x, out);
    const double ms = timer.stop_ms();
    total.push_back(ms);
    state.SetIterationTime(ms / 1e3);
    const SegmentedStageTimes s = t.apply_timed(x, out);
    pad.push_back(s.pad), forward.push_back(s.forward), product.push_back(s.product), inverse.push_back(s.inverse),
        crop.push_back(s.crop);
  }
  // Q's adjoint NUFFTs alone, as the kernels' construction runs them: the pairs' coefficient
  // vectors (ones: the time does not depend on the values) on the doubled grid's plan
  const mri::Grid padded = p.grid.doubled();
  const auto q_plan = make_device_nufft_plan(points.data(), traj.size(), padded, nufft, {2.0f, 2.0f, 0.0f});
  const int pairs = fit.segments * (fit.segments + 1) / 2;
  const mri::Grid coef_grid(static_cast<std::int64_t>(traj.size()), pairs);
  const mri::cuda::DeviceImage coef(mri::Image(coef_grid, std::vector<mri::cfloat>(static_cast<std::size_t>(coef_grid.voxels()),
                                                                                   mri::cfloat(1.0f, 0.0f))),
                                    q_plan->stream());
  mri::cuda::DeviceImage q(mri::Grid(padded.voxels(), pairs), q_plan->stream());
  q_plan->adjoint_coils_device(coef.data(), pairs, q.data(), mri::Gridding::Gather); // warm-up
  mri::cuda::StreamTimer q_timer(q_plan->stream());
  q_timer.start();
  q_plan->adjoint_coils_device(coef.data(), pairs, q.data(), mri::Gridding::Gather);
  Counters c;
  c.q_nufft_ms = q_timer.stop_ms();
  c.q_s = t.kernel_seconds();
  c.segments = fit.segments;
  c.apply_ms = median(total);
  c.pad_ms = median(pad);
  c.forward_ms = median(forward);
  c.product_ms = median(product);
  c.inverse_ms = median(inverse);
  c.crop_ms = median(crop);
  c.set(state);
  static const char *labels[] = {"whole/per-coil",  "whole/fused",           "pruned/per-coil",
                                 "pruned/fused",    "pruned-in-place/per-coil", "pruned-in-place/fused"};
  state.SetLabel(std::string(labels[path]) + (size == 0 ? " 128^2x4" : " 256^2x8") + ", " +
                 std::to_string(t.coil_batch()) + " coil(s) a pass");
}
BENCHMARK(BM_SegmentedNormal_Gpu)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {0, 1}, {0}})
    ->ArgsProduct({{3, 5}, {0, 1}, {1, 2, 4}})
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);

} // namespace

BENCHMARK_MAIN();
