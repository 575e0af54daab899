// RECON-2D on the CPU: 256^2 Shepp-Logan, spiral (the FHD-2D trajectory, 16 x 4096 = 2^16
// samples), 20 CG iterations end to end; and one CG iteration alone (Toeplitz apply on the
// 512^2 embedding + the vector updates), the figure to hold against BART's `pics` iteration.
// Coil compression: the phantom seen by 32 simulated coils (SimulatedCoils), 128^2 radial 128 x
// 256 with analytic density weights, SNR 60, true maps, method = Nufft, 30 CG iterations,
// reconstructed from all 32 coils and from V virtual coils (Arg: V): end-to-end time and PSNR.
//   build/benchmarks/bench_recon_cpu --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <mri/mri.hpp>

namespace {

struct Recon2D {
  mri::Grid grid{256, 256};
  mri::Image truth = mri::Phantom::shepp_logan_2d().rasterize(grid);
  mri::KSpaceData data = [this] {
    auto t = mri::traj::spiral(grid, 16, 4096);
    auto s = mri::Phantom::shepp_logan_2d().kspace(t, grid);
    mri::add_noise(s, 50.0, 1);
    return mri::KSpaceData(std::move(t), std::move(s));
  }();
};

const Recon2D &problem() {
  static const Recon2D p;
  return p;
}

void BM_Recon2D_EndToEnd(benchmark::State &state) {
  const Recon2D &p = problem();
  mri::ReconOptions o;
  o.solver.iterations = 20;
  o.solver.tolerance = 0; // always 20 iterations
  o.backend = mri::Backend::Cpu;
  o.method = mri::Method::Exact; // the exact sums, as docs/performance.md's row says
  mri::ReconResult r;
  for (auto _ : state) {
    r = mri::reconstruct(p.data, p.grid, o);
    benchmark::DoNotOptimize(r.image.data());
  }
  state.counters["psnr_dB"] = mri::psnr(r.image, p.truth);
  state.counters["fhd_s"] = r.report.fhd_seconds;
  state.counters["q_s"] = r.report.q_seconds;
  state.counters["cg_s"] = r.report.cg_seconds;
}
BENCHMARK(BM_Recon2D_EndToEnd)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// One CG iteration's work: A p (Toeplitz) + 2 dots + 3 vector updates.
void BM_Recon2D_CgIteration(benchmark::State &state) {
  const Recon2D &p = problem();
  const mri::QOperator q(p.data.trajectory(), {}, p.grid);
  using Ops = mri::VectorOps<mri::Image>;
  mri::Image x(p.grid), r = mri::FhDOperator(p.data.trajectory(), p.grid).apply(p.data), d = r, ad(p.grid);
  for (auto _ : state) {
    q.forward(d, ad);
    const double alpha = Ops::norm2(r) / Ops::dot(d, ad).real();
    Ops::axpy(alpha * 1e-3, d, x);
    Ops::axpy(-alpha * 1e-3, ad, r);
    Ops::xpay(r, 0.5, d);
    benchmark::DoNotOptimize(x.data());
  }
}
BENCHMARK(BM_Recon2D_CgIteration)->Unit(benchmark::kMillisecond)->UseRealTime();

struct Compression {
  static constexpr int kCoils = 32;
  mri::Grid grid{128, 128};
  mri::Image truth = mri::Phantom::shepp_logan_2d().rasterize(grid);
  mri::SimulatedCoils array{2, kCoils};
  mri::KSpaceData data = [this] {
    auto t = mri::traj::radial(grid, 128, 256);
    auto w = mri::density::radial(t, grid, 128);
    auto s = array.kspace(mri::Phantom::shepp_logan_2d(), t, grid);
    mri::add_noise(s, 60.0, 1);
    return mri::KSpaceData(std::move(t), std::move(s), std::move(w), kCoils);
  }();
  std::shared_ptr<const mri::CoilSensitivities> maps = std::make_shared<const mri::CoilSensitivities>(array.maps(grid));
};

void BM_Recon2D_CoilCompression(benchmark::State &state) {
  static const Compression p;
  mri::ReconOptions o;
  o.solver.iterations = 30;
  o.solver.tolerance = 0;
  o.backend = mri::Backend::Cpu;
  o.method = mri::Method::Nufft;
  o.solver.regularizer = mri::Regularizer::Tikhonov;
  o.solver.lambda = 1e-3 * static_cast<double>(p.grid.voxels());
  o.coils.sensitivities = p.maps;
  o.coils.virtual_coils = static_cast<int>(state.range(0));
  mri::ReconResult r;
  for (auto _ : state) {
    r = mri::reconstruct(p.data, p.grid, o);
    benchmark::DoNotOptimize(r.image.data());
  }
  state.counters["psnr_dB"] = mri::psnr(r.image, p.truth);
  state.counters["coils"] = r.report.coils;
  state.counters["energy_kept"] = r.report.coil_energy_kept;
  state.counters["coil_s"] = r.report.coil_seconds;
  state.counters["cg_s"] = r.report.cg_seconds;
}
BENCHMARK(BM_Recon2D_CoilCompression)->Arg(32)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

} // namespace

BENCHMARK_MAIN();
