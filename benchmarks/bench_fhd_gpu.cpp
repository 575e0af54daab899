// The CUDA F^H D kernel policies on MISSION.md's named problems, stage by stage:
//
//   FHD-3D-S  64^3 voxels,  M = 2^18 uniform random points  traj::uniform_random(grid, 2^18, 1)
//   FHD-3D-L  128^3 voxels, M = 2^20 koosh points            traj::koosh(grid, 4096, 256)
//   FHD-2D    256^2 voxels, M = 2^16 spiral points           traj::spiral(grid, 16, 4096)
//
// every implemented policy on each (ScatterAtomic on FHD-3D-S only), the forward reference
// kernel on FHD-3D-S and FHD-2D, and SFU/sincos: the __sincosf throughput of the same GPU, the
// bound a one-sincos-per-pair kernel cannot beat (2 special-function ops per pair).
//
// Timing: CUDA events around one whole adjoint on the plan's resident buffers (packing pass,
// constant uploads, partial-sum reduction included; host transfers excluded), reported with
// UseManualTime; one untimed warm-up per (problem, policy); median of the repetitions.
// Counters (per repetition, from the event times):
//   pairs/s    N * M / time (N voxels, M samples)
//   GFLOPS     13 * N * M / time / 1e9. 13 FLOPs per pair is the seeds' count for the direct
//              sum with 2 pi k precomputed: phase k.x = 3 mul + 2 add, accumulation
//              re += c.re cos - c.im sin, im += c.im cos + c.re sin = 4 mul + 4 add; the sin
//              and cos themselves are not counted. Policies that do fewer operations per pair
//              (Tuned) are credited the same 13: "direct-sum-equivalent GFLOPS".
//   SFU_frac   (pairs/s) / (sincos ops/s / 2), the fraction of the one-sincos-per-pair bound
//   rel_err    ||gpu - ref|| / ||ref|| on 32 sampled voxels, ref a float64 sum over all M
// A summary table (median time, speedup over Gather) is printed after the run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <map>
#include <memory>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../cuda/fhd_backend.hpp"
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace {

using mri::cfloat;
using mri::Grid;
using mri::KernelPolicy;
using mri::Trajectory;
using mri::cuda::detail::FhdPlan;

constexpr double kFlopsPerPair = 13.0;
constexpr int kErrorVoxels = 32;

double g_sincos_ops_per_second = 0; // measured in main() before any benchmark

struct Problem {
  std::string name;
  Grid grid;
  Trajectory traj;
  std::vector<cfloat> data;
  std::vector<std::int64_t> check_voxels;
  std::vector<std::complex<double>> check_ref; // float64 adjoint at check_voxels
  std::unique_ptr<FhdPlan> plan;
  double pairs() const { return static_cast<double>(grid.voxels()) * static_cast<double>(traj.size()); }
};

std::vector<cfloat> random_complex(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<cfloat> v(n);
  for (auto &c : v) c = {g(rng), g(rng)};
  return v;
}

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
  p->data = random_complex(p->traj.size(), 7);
  // float64 reference on sampled voxels.
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::int64_t> pick(0, p->grid.voxels() - 1);
  const Grid &g = p->grid;
  const double w[3] = {2 * std::numbers::pi / g.nx(), 2 * std::numbers::pi / g.ny(), 2 * std::numbers::pi / g.nz()};
  for (int i = 0; i < kErrorVoxels; ++i) {
    const std::int64_t v = pick(rng);
    const double x = static_cast<double>(g.coordinate(0, v % g.nx())) * w[0];
    const double y = static_cast<double>(g.coordinate(1, (v / g.nx()) % g.ny())) * w[1];
    const double z = static_cast<double>(g.coordinate(2, v / (g.nx() * g.ny()))) * w[2];
    std::complex<double> s = 0;
    for (std::size_t m = 0; m < p->traj.size(); ++m) {
      const mri::KPoint &k = p->traj[m];
      const double ph = k.kx * x + k.ky * y + k.kz * z;
      s += std::complex<double>(p->data[m]) * std::complex<double>(std::cos(ph), std::sin(ph));
    }
    p->check_voxels.push_back(v);
    p->check_ref.push_back(s);
  }
  p->plan = std::make_unique<FhdPlan>(p->traj, p->grid, p->grid);
  p->plan->upload_samples(p->data.data());
  slot = std::move(p);
  return *slot;
}

double sampled_error(Problem &p) {
  std::vector<cfloat> img(p.plan->voxels());
  p.plan->download_image(img.data());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < p.check_voxels.size(); ++i) {
    const std::complex<double> r(img[static_cast<std::size_t>(p.check_voxels[i])]);
    if (!std::isfinite(r.real()) || !std::isfinite(r.imag())) return INFINITY;
    num += std::norm(r - p.check_ref[i]);
    den += std::norm(p.check_ref[i]);
  }
  return std::sqrt(num / den);
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

void bench_adjoint(benchmark::State &state, const std::string &name, KernelPolicy policy) {
  Problem &p = problem(name);
  const auto key = std::make_pair(name, std::string(mri::to_string(policy)));
  Record &rec = g_records[key];
  rec.pairs = p.pairs();
  if (g_warm.insert(key).second) {
    p.plan->time_adjoint_ms(policy); // warm-up (module load, scratch allocation)
    rec.rel_err = sampled_error(p);
  }
  double total = 0;
  for (auto _ : state) {
    const double s = p.plan->time_adjoint_ms(policy) * 1e-3;
    state.SetIterationTime(s);
    rec.seconds.push_back(s);
    total += s;
  }
  set_counters(state, p.pairs(), total / static_cast<double>(state.iterations()));
  state.counters["rel_err"] = rec.rel_err;
}

// The Tuned policy's variants (cuda/fhd_tuned.cu): the ablation behind its default.
void bench_tuned_variant(benchmark::State &state, const std::string &name, int variant) {
  Problem &p = problem(name);
  const auto key = std::make_pair(name, std::string("tuned/") + mri::cuda::detail::tuned_variant_name(variant));
  Record &rec = g_records[key];
  rec.pairs = p.pairs();
  if (g_warm.insert(key).second) {
    p.plan->time_tuned_variant_ms(variant);
    rec.rel_err = sampled_error(p);
  }
  double total = 0;
  for (auto _ : state) {
    const double s = p.plan->time_tuned_variant_ms(variant) * 1e-3;
    state.SetIterationTime(s);
    rec.seconds.push_back(s);
    total += s;
  }
  set_counters(state, p.pairs(), total / static_cast<double>(state.iterations()));
  state.counters["rel_err"] = rec.rel_err;
}

void bench_forward(benchmark::State &state, const std::string &name) {
  Problem &p = problem(name);
  const auto key = std::make_pair(name, std::string("forward-reference"));
  Record &rec = g_records[key];
  rec.pairs = p.pairs();
  if (g_warm.insert(key).second) p.plan->time_forward_ms();
  double total = 0;
  for (auto _ : state) {
    const double s = p.plan->time_forward_ms() * 1e-3;
    state.SetIterationTime(s);
    rec.seconds.push_back(s);
    total += s;
  }
  set_counters(state, p.pairs(), total / static_cast<double>(state.iterations()));
  p.plan->upload_samples(p.data.data()); // the forward overwrote the resident samples
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
    char err[32] = "-";
    if (key.second != "forward-reference") std::snprintf(err, sizeof err, "%.2e", rec.rel_err);
    std::printf("| %s | %s | %zu | %.3f | %.3e | %.1f | %.3f | %s | %s |\n", key.first.c_str(), key.second.c_str(),
                rec.seconds.size(), t * 1e3, rate, kFlopsPerPair * rate * 1e-9,
                rate / (g_sincos_ops_per_second / 2), speedup.c_str(), err);
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
  benchmark::AddCustomContext("device", info.name);
  benchmark::AddCustomContext("sincos_ops_per_second", std::to_string(sfu.ops_per_second));
  benchmark::AddCustomContext("flops_per_pair", "13 (phase 3 mul + 2 add, accumulate 4 mul + 4 add; trig not counted)");

  benchmark::RegisterBenchmark("SFU/sincos", bench_sfu)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);

  struct Entry {
    const char *problem;
    KernelPolicy policy;
    int iterations;
    int repetitions;
  };
  // Iterations per repetition sized so a repetition takes ~0.2-8 s on an H200; ScatterAtomic
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
  for (const char *p : {"FHD-3D-S", "FHD-2D"})
    benchmark::RegisterBenchmark((std::string(p) + "/forward-reference").c_str(), bench_forward, std::string(p))
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3)
        ->Repetitions(3);
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
  add({"FHD-3D-S", KernelPolicy::ScatterAtomic, 2, 1});

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_summary();
  return 0;
}
