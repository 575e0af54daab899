// The CUDA F^H D kernel policies on MISSION.md's named problems, stage by stage:
//
//   FHD-3D-S  64^3 voxels,  M = 2^18 uniform random points  traj::uniform_random(grid, 2^18, 1)
//   FHD-3D-L  128^3 voxels, M = 2^20 koosh points            traj::koosh(grid, 4096, 256)
//   FHD-2D    256^2 voxels, M = 2^16 spiral points           traj::spiral(grid, 16, 4096)
//
// every implemented policy on each (ScatterAtomic on FHD-3D-S only), the forward paths
// (reference kernel; separable GEMM in float and double), and two bounds measured on the same
// GPU: SFU/sincos, the __sincosf throughput (a one-sincos-per-pair kernel cannot beat it: 2
// special-function ops per pair), and cuBLAS ZGEMM (complex MACs/s: SeparableGemm's bound,
// one MAC per pair), printed before the run.
//
// Timing: CUDA events around one whole adjoint on the plan's resident buffers (packing pass,
// constant uploads, partial-sum reduction included; host transfers excluded), reported with
// UseManualTime; one untimed warm-up per (problem, policy); median of the repetitions.
// Counters (per repetition, from the event times):
//   pairs/s    N * M / time (N voxels, M samples)
//   GFLOPS     13 * N * M / time / 1e9. 13 FLOPs per pair is the count of Stone et al. (2008;
//              the F^H D stages, docs/architecture.md) for the direct sum with 2 pi k
//              precomputed: phase k.x = 3 mul + 2 add, accumulation
//              re += c.re cos - c.im sin, im += c.im cos + c.re sin = 4 mul + 4 add; the sin
//              and cos themselves are not counted. Policies that do fewer operations per pair
//              (Tuned) are credited the same 13: "direct-sum-equivalent GFLOPS".
//   SFU_frac   (pairs/s) / (sincos ops/s / 2), the fraction of the one-sincos-per-pair bound
//   rel_err    ||gpu - ref|| / ||ref|| on 32 sampled voxels (forward: samples), ref a long
//              double sum over all M (tests/gpu/sampled_reference.hpp)
// SeparableGemm also runs adjoint_f64 once per problem (double in and out): its error against
// the same long double sum is printed after the table (target: <= 1e-10).
// A summary table (median time, speedup over Gather) is printed after the run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "recon/device_image.hpp"
#include "exact/fhd_backend.hpp"
#include "../tests/gpu/sampled_reference.hpp"
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace {

using mri::cfloat;
using mri::Grid;
using mri::KernelPolicy;
using mri::Trajectory;
using mri::cuda::detail::FhdPlan;
using mri::cuda::detail::ForwardPath;
using cdouble = std::complex<double>;

constexpr double kFlopsPerPair = 13.0;
constexpr int kErrorVoxels = 32;

// Tuned's SASS (variant 0, fhd_tuned.cu): 162 instructions per staged sample and thread, which
// covers 64 pairs; 152 of them on the FP32 pipe. At one warp instruction per clock per SM
// sub-partition its issue bound is (FFMA lanes/s) / (162 / 64) pairs/s.
constexpr double kTunedInstructionsPerPair = 162.0 / 64.0;

double g_sincos_ops_per_second = 0; // measured in main() before any benchmark
double g_zgemm_macs_per_second = 0; // likewise (the FHD-3D-L chunk's shape)

struct Problem {
  std::string name;
  Grid grid;
  Trajectory traj;
  std::vector<cfloat> data;
  std::vector<std::int64_t> check_voxels;
  std::vector<cdouble> check_ref; // long double adjoint at check_voxels
  std::vector<cfloat> image;      // the forward benchmarks' input (random)
  std::vector<std::int64_t> check_samples;
  std::vector<cdouble> forward_ref; // long double forward of `image` at check_samples
  std::unique_ptr<FhdPlan> plan;
  double pairs() const { return static_cast<double>(grid.voxels()) * static_cast<double>(traj.size()); }
};

Problem &problem(const std::string &name) {
  static std::map<std::string, std::unique_ptr<Problem>> problems;
  auto &slot = problems[name];
  if (slot) return *slot;
  auto p = std::make_unique<Problem>();
  p->name = name;
  if (name == "FHD-3D-S") {
    p->grid = Grid(64, 64, 64);
    p->traj = mri::traj::uniform_random(p->grid, std::size_t{1} << 18, 1);
  } else if (name == "FHD-3D-L") {
    p->grid = Grid(128, 128, 128);
    p->traj = mri::traj::koosh(p->grid, 4096, 256);
  } else {
    p->grid = Grid(256, 256);
    p->traj = mri::traj::spiral(p->grid, 16, 4096);
  }
  p->data = mri::gpu_test::random_values(p->traj.size(), 7);
  p->check_voxels = mri::gpu_test::random_indices(p->grid.voxels(), kErrorVoxels, 11);
  p->check_ref = mri::gpu_test::adjoint_at(p->traj, std::span<const cfloat>(p->data), p->grid, p->grid, p->check_voxels);
  p->plan = std::make_unique<FhdPlan>(p->traj, p->grid, p->grid);
  p->plan->upload_samples(p->data.data());
  slot = std::move(p);
  return *slot;
}

double sampled_error(Problem &p) {
  std::vector<cfloat> img(p.plan->voxels());
  p.plan->download_image(img.data());
  return mri::gpu_test::sampled_rel_l2(std::span<const cfloat>(img), p.check_voxels, p.check_ref);
}

// The forward benchmarks' input image and its long double forward at sampled samples.
void prepare_forward(Problem &p) {
  if (!p.image.empty()) return;
  p.image = mri::gpu_test::random_values(static_cast<std::size_t>(p.grid.voxels()), 13);
  p.check_samples = mri::gpu_test::random_indices(static_cast<std::int64_t>(p.traj.size()), kErrorVoxels, 17);
  p.forward_ref = mri::gpu_test::forward_at(p.traj, std::span<const cfloat>(p.image), p.grid, p.check_samples);
}

double forward_error(Problem &p) {
  std::vector<cfloat> out(p.traj.size());
  p.plan->download_samples(out.data());
  return mri::gpu_test::sampled_rel_l2(std::span<const cfloat>(out), p.check_samples, p.forward_ref);
}

// (problem, label) -> adjoint_f64 rel. error against the long double sum (SeparableGemm rows).
std::map<std::pair<std::string, std::string>, double> g_f64_error;

void check_f64(Problem &p, const std::string &label) {
  const std::vector<cdouble> c(p.data.begin(), p.data.end());
  std::vector<cdouble> out(p.plan->voxels());
  p.plan->adjoint_f64(c.data(), out.data());
  g_f64_error[{p.name, label}] =
      mri::gpu_test::sampled_rel_l2(std::span<const cdouble>(out), p.check_voxels, p.check_ref);
}

struct Record {
  std::vector<double> seconds;
  double rel_err = 0;
  double pairs = 0;
};
std::map<std::pair<std::string, std::string>, Record> g_records; // (problem, policy)
std::set<std::pair<std::string, std::string>> g_warm;

void set_counters(benchmark::State &state, double pairs, double seconds_per_iteration) {
  const double rate = pairs / seconds_per_iteration;
  state.counters["pairs/s"] = rate;
  state.counters["GFLOPS"] = kFlopsPerPair * rate * 1e-9;
  state.counters["SFU_frac"] = rate / (g_sincos_ops_per_second / 2);
}

// Every timed benchmark: one untimed warm-up per (problem, label), which also records the
// error (`error()`), then `time_ms()` per iteration (CUDA events) into the record and counters.
template <class Time, class Error>
void timed_runs(benchmark::State &state, Problem &p, const std::string &label, Time &&time_ms, Error &&error) {
  const auto key = std::make_pair(p.name, label);
  Record &rec = g_records[key];
  rec.pairs = p.pairs();
  if (g_warm.insert(key).second) {
    time_ms(); // warm-up (module load, scratch allocation, cuBLAS handle)
    rec.rel_err = error();
  }
  double total = 0;
  for (auto _ : state) {
    const double s = time_ms() * 1e-3;
    state.SetIterationTime(s);
    rec.seconds.push_back(s);
    total += s;
  }
  set_counters(state, p.pairs(), total / static_cast<double>(state.iterations()));
  state.counters["rel_err"] = rec.rel_err;
}

void bench_adjoint(benchmark::State &state, const std::string &name, KernelPolicy policy) {
  Problem &p = problem(name);
  timed_runs(state, p, mri::to_string(policy), [&] { return p.plan->time_adjoint_ms(policy); },
             [&] {
               const double err = sampled_error(p);
               if (policy == KernelPolicy::SeparableGemm) check_f64(p, mri::to_string(policy));
               return err;
             });
}

// The Tuned policy's variants (cuda/exact/fhd_tuned.cu): the ablation behind its default.
void bench_tuned_variant(benchmark::State &state, const std::string &name, int variant) {
  Problem &p = problem(name);
  timed_runs(state, p, std::string("tuned/") + mri::cuda::detail::tuned_variant_name(variant),
             [&] { return p.plan->time_tuned_variant_ms(variant); }, [&] { return sampled_error(p); });
}

// SeparableGemm with the Gauss 3M products (cublasZgemm3m): 3 real GEMMs instead of 4.
void bench_separable_3m(benchmark::State &state, const std::string &name) {
  Problem &p = problem(name);
  mri::cuda::detail::SeparableGemmConfig cfg;
  cfg.gauss_3m = true;
  p.plan->set_separable_config(cfg);
  const std::string label = "separable-gemm/zgemm3m";
  timed_runs(state, p, label, [&] { return p.plan->time_adjoint_ms(KernelPolicy::SeparableGemm); },
             [&] {
               const double err = sampled_error(p);
               check_f64(p, label);
               return err;
             });
  p.plan->set_separable_config({});
}

// Issue 11: kCoils coils' F^H D in one call (FhdPlan::adjoint_coils_device): SeparableGemm runs
// them as more GEMM columns (each phase once), the other policies coil by coil. Rates count
// coil-pairs (kCoils x N x M per call), so they compare directly with the one-coil rows. Coil 0
// is the problem's own data: its image is checked against the same long double reference.
// Host wall clock around the call and a synchronize (runs of 0.1-2 s: microseconds of overhead).
constexpr int kCoils = 8;

std::string coils_label(KernelPolicy policy, int block) {
  std::string label = "coils-" + std::to_string(kCoils) + "/" + mri::to_string(policy);
  if (block != kCoils) label += "/block-" + std::to_string(block);
  return label;
}

// `block`: coils per call (kCoils / block calls; the plan groups each call's coils per GEMM by
// the grid's size, coils_per_gemm in cuda/exact/fhd_separable_gemm.cu).
void bench_coils(benchmark::State &state, const std::string &name, KernelPolicy policy, int block) {
  Problem &p = problem(name);
  const std::size_t m = p.traj.size(), n = p.plan->voxels();
  std::vector<cfloat> c = mri::gpu_test::random_values(kCoils * m, 19);
  std::copy(p.data.begin(), p.data.end(), c.begin());
  mri::cuda::DeviceImage d_c(Grid(static_cast<std::int64_t>(c.size()), 1));
  mri::cuda::DeviceImage d_out(Grid(static_cast<std::int64_t>(kCoils * n), 1));
  d_c.upload(c.data());
  const std::string label = coils_label(policy, block);
  timed_runs(state, p, label,
             [&] {
               const auto t0 = std::chrono::steady_clock::now();
               for (int c0 = 0; c0 < kCoils; c0 += block)
                 p.plan->adjoint_coils_device(policy, d_c.data() + c0 * m, block, d_out.data() + c0 * n);
               p.plan->synchronize();
               return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
             },
             [&] {
               std::vector<cfloat> images(kCoils * n);
               d_out.download(images.data());
               return mri::gpu_test::sampled_rel_l2(std::span<const cfloat>(images).first(n), p.check_voxels,
                                                    p.check_ref); // coil 0
             });
  g_records[{p.name, label}].pairs = kCoils * p.pairs();
  state.counters["coil-pairs/s"] = kCoils * state.counters["pairs/s"];
}

void bench_forward(benchmark::State &state, const std::string &name, ForwardPath path) {
  Problem &p = problem(name);
  prepare_forward(p);
  p.plan->upload_image(p.image.data());
  timed_runs(state, p, mri::cuda::detail::to_string(path), [&] { return p.plan->time_forward_ms(path); },
             [&] { return forward_error(p); });
  p.plan->upload_samples(p.data.data()); // the forward overwrote the resident samples
}

void bench_ffma(benchmark::State &state) {
  double total = 0;
  for (auto _ : state) {
    const auto r = mri::cuda::detail::measure_ffma_throughput(1);
    state.SetIterationTime(r.median_seconds);
    total += r.ffma_per_second;
  }
  state.counters["ffma/s"] = total / static_cast<double>(state.iterations());
  state.counters["tuned_issue_bound_pairs/s"] = total / static_cast<double>(state.iterations()) / kTunedInstructionsPerPair;
}

void bench_sfu(benchmark::State &state) {
  double ops = 0, total = 0;
  for (auto _ : state) {
    const auto r = mri::cuda::detail::measure_sincos_throughput(1);
    state.SetIterationTime(r.median_seconds);
    ops += r.ops_per_launch;
    total += r.median_seconds;
  }
  state.counters["sincos_ops/s"] = ops / total;
  state.counters["bound_pairs/s"] = ops / total / 2;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void print_summary() {
  std::printf("\n## F^H D stage table (median of event-timed runs; SFU bound %.3e sincos ops/s = %.3e pairs/s)\n\n",
              g_sincos_ops_per_second, g_sincos_ops_per_second / 2);
  std::printf("| problem | policy | runs | median ms | pairs/s | GFLOPS (13/pair) | SFU frac | vs gather | rel err |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const auto &[key, rec] : g_records) {
    if (rec.seconds.empty()) continue;
    const double t = median(rec.seconds);
    const double rate = rec.pairs / t;
    std::string speedup = "-";
    const auto gather = g_records.find({key.first, "gather"});
    if (gather != g_records.end() && !gather->second.seconds.empty()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2fx", median(gather->second.seconds) / t);
      speedup = buf;
    }
    char err[32];
    std::snprintf(err, sizeof err, "%.2e", rec.rel_err);
    std::printf("| %s | %s | %zu | %.3f | %.3e | %.1f | %.3f | %s | %s |\n", key.first.c_str(), key.second.c_str(),
                rec.seconds.size(), t * 1e3, rate, kFlopsPerPair * rate * 1e-9,
                rate / (g_sincos_ops_per_second / 2), speedup.c_str(), err);
  }
  std::printf("\n## GEMM forms vs the ZGEMM bound (%.3e complex MACs/s, one MAC per pair)\n\n",
              g_zgemm_macs_per_second);
  std::printf("| problem | path | median ms | pairs/s | fraction of ZGEMM | adjoint_f64 rel err (long double) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const auto &[key, rec] : g_records) {
    if (rec.seconds.empty() || (key.second.find("separable") == std::string::npos && key.second.find("gemm") == std::string::npos))
      continue;
    const double t = median(rec.seconds);
    const auto f64 = g_f64_error.find(key);
    char err[32] = "-";
    if (f64 != g_f64_error.end()) std::snprintf(err, sizeof err, "%.2e", f64->second);
    std::printf("| %s | %s | %.3f | %.3e | %.3f | %s |\n", key.first.c_str(), key.second.c_str(), t * 1e3,
                rec.pairs / t, rec.pairs / t / g_zgemm_macs_per_second, err);
  }
  for (const char *name : {"FHD-3D-S", "FHD-3D-L", "FHD-2D"}) {
    if (!g_f64_error.count({name, "separable-gemm"})) continue;
    const auto shape = problem(name).plan->separable_shape();
    std::printf("%s SeparableGemm: rows %d x cols %d (axis %d split, low extent %d), %zu chunks of %zu samples\n",
                name, shape.rows, shape.cols, shape.split_axis, shape.split_low, shape.chunks, shape.chunk_samples);
  }
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  if (!mri::cuda_available()) {
    std::puts("SKIPPED: no usable CUDA device (bench_fhd_gpu runs on the device machine)");
    return 0;
  }
  const auto info = mri::cuda::detail::device_info();
  const auto sfu = mri::cuda::detail::measure_sincos_throughput(7);
  g_sincos_ops_per_second = sfu.ops_per_second;
  std::printf("device: %s, %d SMs, SM clock %.0f MHz; sincos throughput %.3e ops/s; Tuned runs variant %s\n",
              info.name, info.multiprocessors, info.sm_clock_khz / 1e3, sfu.ops_per_second,
              mri::cuda::detail::tuned_variant_name(mri::cuda::detail::tuned_default_variant()));
  // ZGEMM bound: a reference shape (128 x 16384 x 8192) and FHD-3D-L's chunk product (rows x cols
  // x chunk).
  {
    const auto ref = mri::cuda::detail::measure_zgemm_throughput(128, 16384, 8192);
    const auto l = mri::cuda::detail::measure_zgemm_throughput(1024, 2048, 16384);
    const auto l3m = mri::cuda::detail::measure_zgemm_throughput(1024, 2048, 16384, 5, true);
    g_zgemm_macs_per_second = l.complex_macs_per_second;
    std::printf("ZGEMM (A^T B, random operands): 128x16384x8192 %.3e complex MACs/s (%.1f TFLOP/s); "
                "1024x2048x16384 %.3e (%.1f TFLOP/s); ZGEMM3M 1024x2048x16384 %.3e MACs/s\n",
                ref.complex_macs_per_second, 8e-12 * ref.complex_macs_per_second, l.complex_macs_per_second,
                8e-12 * l.complex_macs_per_second, l3m.complex_macs_per_second);
    benchmark::AddCustomContext("zgemm_complex_macs_per_second", std::to_string(l.complex_macs_per_second));
  }
  {
    const auto ffma = mri::cuda::detail::measure_ffma_throughput(7);
    std::printf("FFMA throughput %.3e/s (implied SM clock under FP32 load %.0f MHz); Tuned's issue bound at that "
                "clock %.3e pairs/s\n",
                ffma.ffma_per_second, ffma.implied_sm_clock_hz / 1e6, ffma.ffma_per_second / kTunedInstructionsPerPair);
    benchmark::AddCustomContext("ffma_per_second", std::to_string(ffma.ffma_per_second));
  }
  benchmark::AddCustomContext("device", info.name);
  benchmark::AddCustomContext("sincos_ops_per_second", std::to_string(sfu.ops_per_second));
  benchmark::AddCustomContext("flops_per_pair", "13 (phase 3 mul + 2 add, accumulate 4 mul + 4 add; trig not counted)");

  benchmark::RegisterBenchmark("FFMA/throughput", bench_ffma)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);
  benchmark::RegisterBenchmark("SFU/sincos", bench_sfu)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);

  struct Entry {
    const char *problem;
    KernelPolicy policy;
    int iterations;
    int repetitions;
  };
  // Iterations per repetition sized so a repetition takes ~0.2-8 s on sm_90; ScatterAtomic
  // (slow by design, time unknown before the first run) last, so a timeout cuts only it.
  const Entry entries[] = {
      {"FHD-2D", KernelPolicy::Gather, 5, 3},          {"FHD-2D", KernelPolicy::Register, 10, 3},
      {"FHD-2D", KernelPolicy::ConstantChunked, 10, 3}, {"FHD-2D", KernelPolicy::SfuTrig, 20, 3},
      {"FHD-2D", KernelPolicy::Tuned, 50, 3},          {"FHD-3D-S", KernelPolicy::Gather, 2, 3},
      {"FHD-3D-S", KernelPolicy::Register, 3, 3},      {"FHD-3D-S", KernelPolicy::ConstantChunked, 3, 3},
      {"FHD-3D-S", KernelPolicy::SfuTrig, 5, 3},       {"FHD-3D-S", KernelPolicy::Tuned, 20, 3},
      {"FHD-3D-L", KernelPolicy::Gather, 1, 3},        {"FHD-3D-L", KernelPolicy::Register, 1, 3},
      {"FHD-3D-L", KernelPolicy::ConstantChunked, 1, 3}, {"FHD-3D-L", KernelPolicy::SfuTrig, 1, 3},
      {"FHD-3D-L", KernelPolicy::Tuned, 3, 3},
      {"FHD-2D", KernelPolicy::SeparableGemm, 20, 3}, {"FHD-3D-S", KernelPolicy::SeparableGemm, 10, 3},
      {"FHD-3D-L", KernelPolicy::SeparableGemm, 2, 3},
  };
  const auto add = [](const Entry &e) {
    const std::string name = std::string(e.problem) + "/" + mri::to_string(e.policy);
    benchmark::RegisterBenchmark(name.c_str(), bench_adjoint, std::string(e.problem), e.policy)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(e.iterations)
        ->Repetitions(e.repetitions);
  };
  for (const Entry &e : entries) add(e);
  benchmark::RegisterBenchmark("FHD-3D-L/separable-gemm/zgemm3m", bench_separable_3m, std::string("FHD-3D-L"))
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(2)
      ->Repetitions(3);
  for (const char *p : {"FHD-3D-S", "FHD-2D", "FHD-3D-L"})
    for (ForwardPath path : {ForwardPath::Reference, ForwardPath::GemmFloat, ForwardPath::GemmDouble}) {
      if (path == ForwardPath::Reference && std::string(p) == "FHD-3D-L") continue; // ~4 s a run
      const bool large = std::string(p) == "FHD-3D-L";
      benchmark::RegisterBenchmark((std::string(p) + "/" + mri::cuda::detail::to_string(path)).c_str(), bench_forward,
                                   std::string(p), path)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(path == ForwardPath::Reference ? 3 : (large ? 2 : 10))
          ->Repetitions(3);
    }
  for (int v = 0; v < mri::cuda::detail::tuned_variant_count(); ++v) {
    const bool per_pair = std::string(mri::cuda::detail::tuned_variant_name(v)).find("per-pair") != std::string::npos;
    for (const auto &[problem_name, iterations] :
         {std::pair<const char *, int>{"FHD-2D", 30}, {"FHD-3D-S", 10}, {"FHD-3D-L", per_pair ? 1 : 2}}) {
      const std::string name =
          std::string(problem_name) + "/tuned-variant/" + mri::cuda::detail::tuned_variant_name(v);
      benchmark::RegisterBenchmark(name.c_str(), bench_tuned_variant, std::string(problem_name), v)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(per_pair ? std::max(1, iterations / 4) : iterations)
          ->Repetitions(3);
    }
  }
  for (const auto &[problem_name, policy, iterations, block] :
       {std::tuple{"FHD-2D", KernelPolicy::SeparableGemm, 5, kCoils}, {"FHD-2D", KernelPolicy::SeparableGemm, 5, 4},
        {"FHD-2D", KernelPolicy::Tuned, 10, kCoils}, {"FHD-3D-S", KernelPolicy::SeparableGemm, 3, kCoils},
        {"FHD-3D-S", KernelPolicy::SeparableGemm, 3, 2}, {"FHD-3D-L", KernelPolicy::SeparableGemm, 1, kCoils},
        {"FHD-3D-L", KernelPolicy::Tuned, 1, kCoils}})
    benchmark::RegisterBenchmark((std::string(problem_name) + "/" + coils_label(policy, block)).c_str(), bench_coils,
                                 std::string(problem_name), policy, block)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(iterations)
        ->Repetitions(3);
  add({"FHD-3D-S", KernelPolicy::ScatterAtomic, 2, 1});

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_summary();
  return 0;
}
