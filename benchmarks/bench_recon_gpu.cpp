// The GPU reconstruction on MISSION.md's named problems:
//
//   RECON-3D  128^3 3D Shepp-Logan, koosh M = 2^20 (traj::koosh(grid, 4096, 256)), SNR 50,
//             20 CG iterations, end to end (F^H D + Q on the 2x grid + CG; Q's spectrum by the
//             tensor-core Dirichlet sum, and by the Tuned kernel's Q + FFT), and with Q's spectrum
//             from the cache; one CG iteration alone (Toeplitz apply + the vector updates) for
//             each way of running the pad/multiply/crop (unfused kernels, cuFFT callbacks)
//   RECON-2D  256^2 Shepp-Logan, spiral M = 2^16 (traj::spiral(grid, 16, 4096)), SNR 50,
//             20 CG iterations end to end; and with normal = Direct (two O(N*M) sums per iteration)
//   RECON-3D-MC  RECON-3D seen by 8 simulated coils (SimulatedCoils, exact k-space), M = 2^20 per
//             coil, the true maps given, 20 CG iterations of SENSE: method = Nufft end to end, and
//             method = Exact (F^H D for 8 coils: coil-pairs/s = coils N M / fhd_s)
//   RECON-2D-MC  256^2 seen by 8 simulated coils, radial 256 spokes x 512 (one slice of the 64-slice
//             batch of docs/cli.md), SNR 30, the true maps given, 20 CG iterations, method = Nufft
//   */sense-apply  one SENSE normal application (Toeplitz), the one-coil operator composed per coil
//             (mri_backend/sense.hpp) against the coil-batched operator (cuda/sense/sense_toeplitz.hpp),
//             on RECON-2D-MC and RECON-3D-MC
//
// Timing: end to end = host wall clock of mri::reconstruct (after one untimed warm-up call in the
// same process: CUDA context, module loading, cuFFT plans and their JIT are paid there; the report
// still says what each phase took). Per-iteration and per-apply figures: CUDA events on the
// reconstruction stream (cuda::StreamTimer). Medians of the repetitions.
// Reference ceilings measured in the same run: a device-to-device copy (bytes read + written per
// second) and a plain cuFFT C2C forward + inverse of the 2x grid.
// The Amdahl split (each phase's share of the end-to-end time) is printed last.
//
//   MRI_BENCH_256=1 adds a 256^3 reconstruction (koosh 4096 x 256 = 2^20 samples, 2 CG
//   iterations, no warm-up): the large problem runs, or fails up front naming the memory it needs.
//   MRI_BENCH_DEVICES=0,1 adds RECON-3D with the exact sums split by voxel slabs over those CUDA
//   devices (ReconOptions::gpu.devices; "0,0" on one GPU), and RECON-3D-MC by the NUFFT with SENSE's
//   CG split by coils over them, each device's seconds as counters.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "bench_support.hpp"
#include "recon/device_image.hpp"
#include "exact/fhd_backend.hpp"
#include "mri_backend/sense.hpp"
#include "sense/sense_cuda.hpp"
#include "sense/sense_toeplitz.hpp"
#include "toeplitz/toeplitz_cuda.hpp"
#include "mri/mri.hpp"

namespace {

using mri::Grid;
using mri::cuda::DeviceImage;
using mri::cuda::ToeplitzFft;
using mri::cuda::QOperator;
using Ops = mri::VectorOps<DeviceImage>;

struct Problem {
  std::string name;
  Grid grid;
  mri::Image truth;
  std::optional<mri::KSpaceData> data;
  std::shared_ptr<const mri::CoilSensitivities> maps; // multi-coil problems: the true maps
};

// The phantom seen by 8 simulated coils on trajectory t (exact k-space, noise at `snr`), the
// true maps given.
void add_coil_data(Problem &p, const mri::Phantom &phantom, mri::Trajectory t, double snr) {
  const mri::SimulatedCoils array(p.grid.dims(), 8);
  auto s = array.kspace(phantom, t, p.grid);
  mri::add_noise(s, snr, 1);
  p.data.emplace(std::move(t), std::move(s), std::vector<float>{}, 8);
  p.maps = std::make_shared<const mri::CoilSensitivities>(array.maps(p.grid));
  p.truth = phantom.rasterize(p.grid, 2);
}

Problem make_problem(const std::string &name) {
  Problem p;
  p.name = name;
  if (name == "RECON-3D-MC") {
    p.grid = Grid(128, 128, 128);
    add_coil_data(p, mri::Phantom::shepp_logan_3d(), mri::traj::koosh(p.grid, 4096, 256), 50.0);
  } else if (name == "RECON-2D-MC") {
    p.grid = Grid(256, 256);
    add_coil_data(p, mri::Phantom::shepp_logan_2d(), mri::traj::radial(p.grid, 256, 512), 30.0);
  } else if (name == "RECON-3D" || name == "RECON-3D-256") {
    const std::int64_t n = name == "RECON-3D" ? 128 : 256;
    p.grid = Grid(n, n, n);
    const auto phantom = mri::Phantom::shepp_logan_3d();
    auto t = mri::traj::koosh(p.grid, 4096, 256); // M = 2^20 for both sizes
    auto s = phantom.kspace(t, p.grid);
    mri::add_noise(s, 50.0, 1);
    p.data.emplace(std::move(t), std::move(s));
    if (n == 128) p.truth = phantom.rasterize(p.grid, 2);
  } else {
    p.grid = Grid(256, 256);
    const auto phantom = mri::Phantom::shepp_logan_2d();
    auto t = mri::traj::spiral(p.grid, 16, 4096);
    auto s = phantom.kspace(t, p.grid);
    mri::add_noise(s, 50.0, 1);
    p.data.emplace(std::move(t), std::move(s));
    p.truth = phantom.rasterize(p.grid);
  }
  return p;
}

Problem &problem(const std::string &name) {
  static std::map<std::string, std::unique_ptr<Problem>> problems;
  auto &slot = problems[name];
  if (!slot) slot = std::make_unique<Problem>(make_problem(name));
  return *slot;
}

// The exact sums unless a case names the NUFFT: the figures of docs/performance.md's exact rows
// (Method::Auto, the default, would pick per problem).
mri::ReconOptions recon_options() {
  mri::ReconOptions o;
  o.solver.iterations = 20;
  o.solver.tolerance = 0; // always 20 iterations
  o.backend = mri::Backend::Cuda;
  o.method = mri::Method::Exact;
  return o;
}

// The tensor-core ceiling (mma.sync, measured in main) and what the Dirichlet spectrum reaches:
// 3 products per (frequency, sample) term, over the doubled grid's L frequencies.
double g_hmma_macs_per_second = 0;

// The last report of each end-to-end benchmark, for the Amdahl table.
std::map<std::string, mri::ReconReport> g_reports;
std::map<std::string, double> g_psnr;
std::map<std::string, std::string> g_failures;

void set_phase_counters(benchmark::State &state, const mri::ReconReport &r) {
  state.counters["fhd_s"] = r.fhd_seconds;
  state.counters["q_s"] = r.q_seconds;
  state.counters["fft_setup_s"] = r.fft_setup_seconds;
  state.counters["cg_s"] = r.cg_seconds;
  state.counters["transfer_s"] = r.transfer_seconds;
  state.counters["setup_s"] = r.setup_seconds;
  state.counters["total_s"] = r.total_seconds;
  state.counters["cg_iteration_ms"] = r.iterations > 0 ? 1e3 * r.cg_seconds / r.iterations : 0;
  state.counters["device_GiB"] = static_cast<double>(r.device_bytes) / (1 << 30);
}

void end_to_end(benchmark::State &state, const std::string &problem_name, const std::string &label,
                mri::ReconOptions o, bool warm_up = true) {
  Problem &p = problem(problem_name);
  static std::map<std::string, bool> warmed;
  mri::ReconResult r;
  o.coils.sensitivities = p.maps;
  try {
    if (warm_up && !warmed[label]) mri::reconstruct(*p.data, p.grid, o); // context, modules, plans, cache entry
    warmed[label] = true;
    for (auto _ : state) {
      r = mri::reconstruct(*p.data, p.grid, o);
      benchmark::DoNotOptimize(r.image.data());
      state.SetIterationTime(r.report.total_seconds);
    }
  } catch (const mri::Error &e) {
    g_failures[label] = e.what();
    state.SkipWithError(e.what());
    return;
  }
  set_phase_counters(state, r.report);
  if (p.truth.size() > 0) {
    g_psnr[label] = mri::psnr(r.image, p.truth);
    state.counters["psnr_dB"] = g_psnr[label];
  }
  g_reports[label] = r.report;
  // Every run sets the same counters: the CSV reporter requires it (one coil: coils = 1).
  state.counters["coils"] = r.report.coils;
  state.counters["coil_s"] = r.report.coil_seconds;
  state.counters["fhd_coil_pairs/s"] = r.report.coils * static_cast<double>(p.grid.voxels()) *
                                       static_cast<double>(p.data->samples_per_coil()) / r.report.fhd_seconds;
  if (r.report.q_method == "dirichlet-tensor-cores" && r.report.q_seconds > 0) {
    const double macs = 3.0 * static_cast<double>(p.grid.doubled().voxels()) * static_cast<double>(p.data->samples_per_coil());
    state.counters["q_tensor_MAC/s"] = macs / r.report.q_seconds;
    state.counters["q_frac_of_mma_ceiling"] = macs / r.report.q_seconds / g_hmma_macs_per_second;
  }
  state.SetLabel(std::string(mri::to_string(r.report.status)) + ", " + r.report.toeplitz_fft + ", q: " +
                 r.report.q_method + ", q-cache " + mri::to_string(r.report.q_cache));
}

std::filesystem::path cache_dir() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mri_bench_qcache_" + std::to_string(::getpid()));
  return dir;
}

void BM_Recon3D_EndToEnd(benchmark::State &state) { end_to_end(state, "RECON-3D", "RECON-3D", recon_options()); }
// The same with KernelPolicy::Tuned named: Q summed by the Tuned F^H D kernel on the 2x grid and
// transformed (the path before the tensor-core Dirichlet spectrum, which Auto takes in 3D).
void BM_Recon3D_EndToEnd_TunedQ(benchmark::State &state) {
  auto o = recon_options();
  o.gpu.policy = mri::KernelPolicy::Tuned;
  end_to_end(state, "RECON-3D", "RECON-3D (Q by tuned)", o);
}
void BM_Recon3D_EndToEnd_CachedQ(benchmark::State &state) {
  auto o = recon_options();
  o.q_cache_dir = cache_dir(); // the warm-up call stores the entry; timed calls hit it
  end_to_end(state, "RECON-3D", "RECON-3D (Q from cache)", o);
}
// The exact sums split by voxel slabs over the devices of MRI_BENCH_DEVICES (e.g. "0,1"; "0,0" on
// one GPU: the split's cost without a second device; docs/scaling.md), with each device's share
// of F^H D and Q as counters. Q by the Dirichlet spectrum (Auto, not split) or by Tuned (split).
std::vector<int> bench_devices() {
  std::vector<int> devices;
  if (const char *e = std::getenv("MRI_BENCH_DEVICES"))
    for (std::string s = e; !s.empty();) {
      const std::size_t comma = s.find(',');
      devices.push_back(std::stoi(s.substr(0, comma)));
      s = comma == std::string::npos ? "" : s.substr(comma + 1);
    }
  return devices;
}
// Each device's share of every phase as counters, and the report's note on how they split.
void device_counters(benchmark::State &state, const mri::ReconReport &r, const std::string &label) {
  for (std::size_t i = 0; i < r.device_seconds.size(); ++i) {
    state.counters["dev" + std::to_string(i) + "_fhd_s"] = r.device_seconds[i].fhd_seconds;
    state.counters["dev" + std::to_string(i) + "_q_s"] = r.device_seconds[i].q_seconds;
    state.counters["dev" + std::to_string(i) + "_cg_s"] = r.device_seconds[i].cg_seconds;
  }
  std::printf("%s: %s\n", label.c_str(), r.device_note.c_str());
}
void BM_Recon3D_Devices(benchmark::State &state, mri::KernelPolicy policy) {
  auto o = recon_options();
  o.gpu.policy = policy;
  o.gpu.devices = bench_devices();
  const std::string label = std::string("RECON-3D (devices ") + std::getenv("MRI_BENCH_DEVICES") + ", policy " +
                            mri::to_string(policy) + ")";
  end_to_end(state, "RECON-3D", label, o);
  if (!g_reports.count(label)) return; // failed: said by end_to_end
  device_counters(state, g_reports[label], label);
}
// RECON-3D-MC by the NUFFT with SENSE split by coils over MRI_BENCH_DEVICES: its F^H D
// (coil_split_fhd.hpp: each device uploads and grids its coils) and its CG (coil_split.hpp); per
// device its coils' F^H D and CG seconds, and the exchange's seconds and share of the CG phase.
void BM_Recon3DMC_Devices(benchmark::State &state) {
  auto o = recon_options();
  o.method = mri::Method::Nufft;
  o.gpu.devices = bench_devices();
  const std::string label = std::string("RECON-3D-MC (nufft, devices ") + std::getenv("MRI_BENCH_DEVICES") + ")";
  end_to_end(state, "RECON-3D-MC", label, o);
  if (!g_reports.count(label)) return;
  const mri::ReconReport &r = g_reports[label];
  device_counters(state, r, label);
  state.counters["cg_s"] = r.cg_seconds;
  state.counters["exchange_s"] = r.exchange_seconds;
  state.counters["exchange_share"] = r.cg_seconds > 0 ? r.exchange_seconds / r.cg_seconds : 0;
}

void BM_Recon2D_EndToEnd(benchmark::State &state) { end_to_end(state, "RECON-2D", "RECON-2D", recon_options()); }
void BM_Recon2D_EndToEnd_CachedQ(benchmark::State &state) {
  auto o = recon_options();
  o.q_cache_dir = cache_dir();
  end_to_end(state, "RECON-2D", "RECON-2D (Q from cache)", o);
}
void BM_Recon2D_Direct(benchmark::State &state) {
  auto o = recon_options();
  o.solver.normal = mri::Normal::Direct;
  end_to_end(state, "RECON-2D", "RECON-2D (normal = direct)", o);
}
// method = Nufft: F^H D and Q by the gridding NUFFT at tolerance 1e-3 (target: RECON-3D within
// 0.1 dB of the exact method, end to end at most 50 ms); normal = Direct: the NUFFT pair per iteration.
void recon_nufft(benchmark::State &state, const std::string &problem_name, mri::Normal normal,
                 double tolerance = mri::NufftSettings{}.tolerance, mri::Gridding gridding = mri::Gridding::Auto) {
  auto o = recon_options();
  o.method = mri::Method::Nufft;
  o.solver.normal = normal;
  o.nufft.tolerance = tolerance;
  o.nufft.gridding = gridding;
  char label[160];
  std::snprintf(label, sizeof label, "%s (nufft %.0e %s, %s)", problem_name.c_str(), tolerance,
                mri::to_string(gridding), mri::to_string(normal));
  end_to_end(state, problem_name, label, o);
}
// Args: tolerance in units of 1e-3, gridding (0 Auto = gather, 1 scatter).
void BM_Recon3D_Nufft(benchmark::State &state) {
  recon_nufft(state, "RECON-3D", mri::Normal::Toeplitz, static_cast<double>(state.range(0)) * 1e-3,
              state.range(1) == 1 ? mri::Gridding::Scatter : mri::Gridding::Auto);
}
void BM_Recon3D_NufftDirect(benchmark::State &state) { recon_nufft(state, "RECON-3D", mri::Normal::Direct); }
void BM_Recon2D_Nufft(benchmark::State &state) { recon_nufft(state, "RECON-2D", mri::Normal::Toeplitz); }
void BM_Recon3DMC_Nufft(benchmark::State &state) { recon_nufft(state, "RECON-3D-MC", mri::Normal::Toeplitz); }
void BM_Recon2DMC_Nufft(benchmark::State &state) { recon_nufft(state, "RECON-2D-MC", mri::Normal::Toeplitz); }
// RECON-3D-MC with one sparse term at BART's lambda 1e-3 (ours: times sqrt(voxels)), method =
// Nufft, `iterations` of the proximal solver `algorithm` (docs/sparse.md); cg_iteration_ms is
// then one proximal iteration (with its share of the power iteration for L).
void BM_Recon3DMC_Sparse(benchmark::State &state, mri::SparsePenalty penalty, mri::ProximalAlgorithm algorithm,
                         int iterations) {
  auto o = recon_options();
  o.method = mri::Method::Nufft;
  o.solver.iterations = iterations;
  o.solver.tolerance = 0;
  mri::SparseTerm term;
  term.penalty = penalty;
  term.lambda = 1e-3 * std::sqrt(128.0 * 128.0 * 128.0);
  o.solver.terms = {term};
  o.solver.proximal.algorithm = algorithm;
  const std::string label = std::string("RECON-3D-MC (nufft, ") + mri::to_string(penalty) + ", " +
                            mri::to_string(algorithm) + ", " + std::to_string(iterations) + " iterations)";
  end_to_end(state, "RECON-3D-MC", label, o);
}

void BM_Recon3DMC_Exact(benchmark::State &state) {
  end_to_end(state, "RECON-3D-MC", "RECON-3D-MC (exact)", recon_options(), false);
}
void BM_Recon3D_256(benchmark::State &state) {
  auto o = recon_options();
  o.solver.iterations = 2;
  end_to_end(state, "RECON-3D-256", "256^3 koosh M=2^20 (2 CG iterations)", o, false);
}
void BM_Recon3D_256_Nufft(benchmark::State &state) {
  auto o = recon_options();
  o.method = mri::Method::Nufft; // Q's NUFFT grid: 1024^3 points (8 GiB)
  end_to_end(state, "RECON-3D-256", "256^3 koosh M=2^20 (nufft 1e-3, 20 CG iterations)", o, false);
}

// One CG iteration of RECON-3D: apply + dot + fused update/norm + xpay, on the operator whose
// pad/multiply/crop run as `fft`; also the apply alone and the vector work alone.
struct Recon3DIteration {
  std::unique_ptr<QOperator> op[4]; // Unfused, Pruned, Callbacks, PrunedCallback
  std::unique_ptr<DeviceImage> x, r, p, ap;
};
// Held in a unique_ptr released before main returns: device memory must not outlive the runtime.
std::unique_ptr<Recon3DIteration> g_iteration;
Recon3DIteration &recon3d_iteration() {
  if (!g_iteration) {
    auto it = std::make_unique<Recon3DIteration>();
    Problem &pr = problem("RECON-3D");
    it->op[0] = std::make_unique<QOperator>(pr.data->trajectory(), std::span<const float>{}, pr.grid,
                                                   mri::KernelPolicy::Auto, ToeplitzFft::Unfused);
    const std::vector<float> spectrum = it->op[0]->spectrum();
    it->op[1] = std::make_unique<QOperator>(pr.grid, spectrum, ToeplitzFft::Pruned);
    it->op[2] = std::make_unique<QOperator>(pr.grid, spectrum, ToeplitzFft::Callbacks);
    it->op[3] = std::make_unique<QOperator>(pr.grid, spectrum, ToeplitzFft::PrunedCallback);
    const mri::Image rhs = mri::FhDOperator(pr.data->trajectory(), pr.grid, {mri::Backend::Cuda}).apply(*pr.data);
    it->r = std::make_unique<DeviceImage>(rhs);
    it->p = std::make_unique<DeviceImage>(rhs);
    it->x = std::make_unique<DeviceImage>(pr.grid);
    it->ap = std::make_unique<DeviceImage>(pr.grid);
    Ops::zero(*it->x);
    g_iteration = std::move(it);
  }
  return *g_iteration;
}

void BM_Recon3D_CgIteration(benchmark::State &state) {
  Recon3DIteration &it = recon3d_iteration();
  const QOperator &op = *it.op[state.range(0)];
  mri::cuda::StreamTimer timer;
  const double rr = Ops::norm2(*it.r);
  std::vector<double> apply_ms, vector_ms;
  for (auto _ : state) {
    timer.start();
    op.apply(*it.p, *it.ap);
    const double a_ms = timer.stop_ms();
    timer.start();
    const double pap = Ops::dot(*it.p, *it.ap).real();
    const double alpha = 1e-3 * rr / pap; // a small step keeps the vectors bounded over many repeats
    const double rr_next = Ops::update_norm2(alpha, *it.p, *it.ap, *it.x, *it.r);
    Ops::xpay(*it.r, 0.5 * rr_next / rr, *it.p);
    const double v_ms = timer.stop_ms();
    apply_ms.push_back(a_ms);
    vector_ms.push_back(v_ms);
    state.SetIterationTime((a_ms + v_ms) * 1e-3);
  }
  std::sort(apply_ms.begin(), apply_ms.end());
  std::sort(vector_ms.begin(), vector_ms.end());
  state.counters["apply_ms"] = apply_ms[apply_ms.size() / 2];
  state.counters["vectors_ms"] = vector_ms[vector_ms.size() / 2];
  state.SetLabel(op.fft_note());
}

// One SENSE normal application of a multi-coil problem: its Toeplitz operator (Q from the
// trajectory), the true maps on the device, and both ways of applying them.
struct SenseApply {
  std::unique_ptr<QOperator> toeplitz;
  std::unique_ptr<mri::cuda::detail::DeviceCoils> coils;
  std::unique_ptr<DeviceImage> x, out;
};
std::map<std::string, std::unique_ptr<SenseApply>> g_sense_apply; // released before main returns
SenseApply &sense_apply(const std::string &name) {
  auto &slot = g_sense_apply[name];
  if (!slot) {
    Problem &pr = problem(name);
    slot = std::make_unique<SenseApply>();
    slot->toeplitz = std::make_unique<QOperator>(pr.data->trajectory(), std::span<const float>{}, pr.grid);
    slot->coils = std::make_unique<mri::cuda::detail::DeviceCoils>(*pr.maps, mri::Regularizer::None, 0.0,
                                                                   slot->toeplitz->stream());
    slot->x = std::make_unique<DeviceImage>(
        mri::Image(pr.grid, mri::bench::random_complex(static_cast<std::size_t>(pr.grid.voxels()), 7)));
    slot->out = std::make_unique<DeviceImage>(pr.grid);
  }
  return *slot;
}

// Args: 0 the one-coil operator composed per coil, else the coil-batched operator with that many
// coils per pass.
void BM_SenseApply(benchmark::State &state, const std::string &name) {
  SenseApply &a = sense_apply(name);
  const auto one_coil = [&](const DeviceImage &in, DeviceImage &out) { a.toeplitz->apply(in, out); };
  using Composed = mri::detail::SenseNormal<DeviceImage, mri::cuda::detail::DeviceCoils, decltype(one_coil)>;
  std::optional<Composed> composed;
  std::optional<mri::cuda::detail::SenseToeplitz> batched;
  if (state.range(0) == 0)
    composed.emplace(*a.coils, one_coil, *a.x);
  else
    batched.emplace(*a.coils, *a.toeplitz, static_cast<int>(state.range(0)));
  mri::cuda::StreamTimer timer(a.toeplitz->stream());
  for (auto _ : state) {
    timer.start();
    if (composed)
      (*composed)(*a.x, *a.out);
    else
      batched->forward(*a.x, *a.out);
    state.SetIterationTime(timer.stop_ms() * 1e-3);
  }
  state.SetLabel(composed ? "one-coil operator per coil (" + a.toeplitz->fft_note() + ")"
                          : std::to_string(state.range(0)) + " coils per batched transform");
}

void BM_Cufft_C2C_Pair(benchmark::State &state) {
  const Grid g = state.range(0) == 3 ? Grid(256, 256, 256) : Grid(512, 512);
  double ms = 0;
  for (auto _ : state) {
    ms = mri::cuda::time_cufft_pair_ms(g, 9);
    state.SetIterationTime(ms * 1e-3);
  }
  state.counters["pair_ms"] = ms;
}

void BM_CopyBandwidth(benchmark::State &state) {
  double bw = 0;
  for (auto _ : state) {
    bw = mri::cuda::measure_copy_bandwidth(std::size_t{1} << 30);
    state.SetIterationTime(2.0 * (1 << 30) / bw);
  }
  state.counters["bytes_per_s"] = bw;
}

void print_amdahl() {
  std::printf("\n## Amdahl split (share of the end-to-end time; seconds)\n");
  std::printf("%-40s %8s %8s %8s %8s %8s %8s %8s %8s  %s\n", "problem", "total", "F^H D", "Q", "FFT set", "CG",
              "xfer", "setup", "it ms", "status / PSNR");
  for (const auto &[label, r] : g_reports) {
    const double t = r.total_seconds;
    const auto pct = [&](double s) { return 100.0 * s / t; };
    std::printf("%-40s %8.4f %7.1f%% %7.1f%% %7.1f%% %7.1f%% %7.1f%% %7.1f%% %8.3f  %s", label.c_str(), t,
                pct(r.fhd_seconds), pct(r.q_seconds), pct(r.fft_setup_seconds), pct(r.cg_seconds),
                pct(r.transfer_seconds), pct(r.setup_seconds),
                r.iterations > 0 ? 1e3 * r.cg_seconds / r.iterations : 0.0, mri::to_string(r.status));
    if (g_psnr.count(label)) std::printf(", %.2f dB", g_psnr[label]);
    if (!r.q_method.empty()) std::printf(", q: %s", r.q_method.c_str());
    std::printf("\n");
    std::printf("%-40s %8s %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f\n", "", "(s)", r.fhd_seconds, r.q_seconds,
                r.fft_setup_seconds, r.cg_seconds, r.transfer_seconds, r.setup_seconds);
  }
  for (const auto &[label, why] : g_failures) std::printf("%-40s FAILED UP FRONT: %s\n", label.c_str(), why.c_str());
}

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (!mri::cuda_available()) {
    std::puts("no usable CUDA device: nothing to measure");
    return 0;
  }
  const auto info = mri::cuda::detail::device_info();
  g_hmma_macs_per_second = mri::cuda::detail::measure_hmma_throughput(7).macs_per_second;
  std::printf("device: %s, %d SMs; cuFFT callbacks built: %s; mma.sync m16n8k16 f16 ceiling %.3e MAC/s (%.0f TFLOP/s)\n",
              info.name, info.multiprocessors, mri::cuda::toeplitz_callbacks_built() ? "yes" : "no",
              g_hmma_macs_per_second, 2e-12 * g_hmma_macs_per_second);
  benchmark::RegisterBenchmark("Copy/1GiB", BM_CopyBandwidth)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("cuFFT-C2C-fwd+inv/256^3", BM_Cufft_C2C_Pair)->Arg(3)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("cuFFT-C2C-fwd+inv/512^2", BM_Cufft_C2C_Pair)->Arg(2)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D/cg-iteration/unfused", BM_Recon3D_CgIteration)->Arg(0)->UseManualTime()->Iterations(50)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D/cg-iteration/pruned", BM_Recon3D_CgIteration)->Arg(1)->UseManualTime()->Iterations(50)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D/cg-iteration/pruned-callback", BM_Recon3D_CgIteration)->Arg(3)->UseManualTime()->Iterations(50)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D/cg-iteration/callbacks", BM_Recon3D_CgIteration)->Arg(2)->UseManualTime()->Iterations(50)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D/end-to-end", BM_Recon3D_EndToEnd)->UseManualTime()->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D/end-to-end-tuned-Q", BM_Recon3D_EndToEnd_TunedQ)->UseManualTime()->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D/end-to-end-cached-Q", BM_Recon3D_EndToEnd_CachedQ)->UseManualTime()->Iterations(1)->Repetitions(5)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-2D/end-to-end", BM_Recon2D_EndToEnd)->UseManualTime()->Iterations(1)->Repetitions(10)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-2D/end-to-end-cached-Q", BM_Recon2D_EndToEnd_CachedQ)->UseManualTime()->Iterations(1)->Repetitions(10)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D/nufft", BM_Recon3D_Nufft)->Args({1, 0})->Args({1, 1})->Args({10, 1})->UseManualTime()->Iterations(1)->Repetitions(5)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D/nufft-direct-normal", BM_Recon3D_NufftDirect)->UseManualTime()->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-2D/nufft", BM_Recon2D_Nufft)->UseManualTime()->Iterations(1)->Repetitions(10)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-2D/direct-normal", BM_Recon2D_Direct)->UseManualTime()->Iterations(1)->Repetitions(1)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D-MC/nufft", BM_Recon3DMC_Nufft)->UseManualTime()->Iterations(1)->Repetitions(5)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D-MC/nufft-wavelet-fista-50", BM_Recon3DMC_Sparse, mri::SparsePenalty::L1Wavelet, mri::ProximalAlgorithm::Fista, 50)->UseManualTime()->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D-MC/nufft-tv-fista-50", BM_Recon3DMC_Sparse, mri::SparsePenalty::TotalVariation, mri::ProximalAlgorithm::Fista, 50)->UseManualTime()->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D-MC/nufft-tv-pd-50", BM_Recon3DMC_Sparse, mri::SparsePenalty::TotalVariation, mri::ProximalAlgorithm::PrimalDual, 50)->UseManualTime()->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D-MC/nufft-tv-admm-10", BM_Recon3DMC_Sparse, mri::SparsePenalty::TotalVariation, mri::ProximalAlgorithm::Admm, 10)->UseManualTime()->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-2D-MC/nufft", BM_Recon2DMC_Nufft)->UseManualTime()->Iterations(1)->Repetitions(10)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  for (const char *mc : {"RECON-2D-MC", "RECON-3D-MC"})
    benchmark::RegisterBenchmark((std::string(mc) + "/sense-apply").c_str(), BM_SenseApply, std::string(mc))->Arg(0)->Arg(4)->Arg(8)->UseManualTime()->Iterations(20)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RECON-3D-MC/exact", BM_Recon3DMC_Exact)->UseManualTime()->Iterations(1)->Repetitions(1)->Unit(benchmark::kMillisecond);
  if (!bench_devices().empty()) {
    for (const mri::KernelPolicy p : {mri::KernelPolicy::Auto, mri::KernelPolicy::Tuned})
      benchmark::RegisterBenchmark((std::string("RECON-3D/devices/") + mri::to_string(p)).c_str(), BM_Recon3D_Devices, p)->UseManualTime()->Iterations(1)->Repetitions(3)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("RECON-3D-MC/nufft/devices", BM_Recon3DMC_Devices)->UseManualTime()->Iterations(1)->Repetitions(5)->ReportAggregatesOnly(true)->Unit(benchmark::kMillisecond);
  }
  if (const char *e = std::getenv("MRI_BENCH_256"); e && std::string(e) == "1") {
    benchmark::RegisterBenchmark("RECON-3D-256/end-to-end", BM_Recon3D_256)->UseManualTime()->Iterations(1)->Repetitions(1)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("RECON-3D-256/nufft", BM_Recon3D_256_Nufft)->UseManualTime()->Iterations(1)->Repetitions(1)->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  print_amdahl();
  std::fflush(stdout);
  g_iteration.reset();
  g_sense_apply.clear();
  mri::cuda::release_toeplitz_plans();
  std::error_code ec;
  std::filesystem::remove_all(cache_dir(), ec);
  benchmark::Shutdown();
  return 0;
}
