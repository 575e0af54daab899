// Multi-coil SENSE on the GPU against the CPU path (which tests/sense/test_sense.cpp checks against the
// normal equations summed in float64): every method and normal operator, 2D and 3D, given and
// estimated maps, coil compression, the one-coil case, and the memory estimate's coils.
// Tags: [gpu] all; [small] the quick subset compute-sanitizer runs.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_support.hpp"
#include "gpu/sampled_reference.hpp"
#include "sense/sense_toeplitz.hpp"
#include "../../../lib/sense/calibration.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/coils.hpp"
#include "mri/density.hpp"
#include "mri/error.hpp"
#include "mri/metrics.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"

using namespace mri;

namespace {

struct Simulated {
  Grid grid;
  Image truth;
  KSpaceData data;
  std::shared_ptr<const CoilSensitivities> maps;
};

Simulated simulated(const Grid &grid, int coils) {
  const bool three_d = grid.dims() == 3;
  const Phantom phantom = three_d ? Phantom::shepp_logan_3d() : Phantom::shepp_logan_2d();
  const SimulatedCoils array(grid.dims(), coils);
  const int n = static_cast<int>(grid.nx());
  Trajectory t = three_d ? traj::koosh(grid, n * n / 2, 2 * n) : traj::radial(grid, n, 2 * n);
  // Density weights keep CG well conditioned, so the two backends' float rounding stays small
  // after many iterations (unweighted 3D koosh: 0.1-2 % apart after 8 iterations on one backend
  // between methods alone).
  std::vector<float> w = three_d ? density::pipe_menon(t, grid).weights : density::radial(t, grid, n);
  std::vector<cfloat> y = array.kspace(phantom, t, grid);
  add_noise(y, 80.0, 5);
  return {grid, phantom.rasterize(grid, 2), KSpaceData(std::move(t), std::move(y), std::move(w), coils),
          std::make_shared<const CoilSensitivities>(array.maps(grid))};
}

// The same reconstruction on both backends; the first iterates agree to float32 accumulation
// order.
std::pair<ReconResult, ReconResult> on_both(const Simulated &s, ReconOptions o) {
  o.solver.tolerance = 0;
  std::vector<Image> cpu_it, gpu_it;
  o.backend = Backend::Cpu;
  o.on_iteration = [&](int, const Image &x, double) { cpu_it.push_back(x); };
  ReconResult cpu = reconstruct(s.data, s.grid, o);
  o.backend = Backend::Cuda;
  o.on_iteration = [&](int, const Image &x, double) { gpu_it.push_back(x); };
  ReconResult gpu = reconstruct(s.data, s.grid, o);
  REQUIRE(gpu_it.size() == cpu_it.size());
  for (std::size_t k = 0; k < std::min<std::size_t>(3, gpu_it.size()); ++k) {
    INFO("iterate " << k + 1);
    CHECK(test::relative_error(gpu_it[k], cpu_it[k]) < 2e-4);
  }
  return {std::move(cpu), std::move(gpu)};
}

} // namespace

TEST_CASE("gpu sense: CPU and GPU agree for every method and normal operator, 2D and 3D", "[gpu][sense]") {
  for (const Grid grid : {Grid(64, 64), Grid(24, 24, 24)}) {
    const Simulated s = simulated(grid, grid.dims() == 2 ? 8 : 4);
    for (const Method method : {Method::Exact, Method::Nufft})
      for (const Normal normal : {Normal::Toeplitz, Normal::Direct}) {
        INFO(grid.dims() << "D " << to_string(method) << " " << to_string(normal));
        ReconOptions o;
        o.solver.iterations = 8;
        o.method = method;
        o.solver.normal = normal;
        o.solver.regularizer = Regularizer::FiniteDifference;
        o.solver.lambda = 1e-3 * grid.voxels();
        o.coils.sensitivities = s.maps;
        const auto [cpu, gpu] = on_both(s, o);
        CHECK(gpu.report.backend == Backend::Cuda);
        CHECK(gpu.report.coils == s.maps->coils());
        CHECK(gpu.report.maps == "given");
        const double p_cpu = psnr(cpu.image, s.truth), p_gpu = psnr(gpu.image, s.truth);
        WARN(grid.dims() << "D " << to_string(method) << " " << to_string(normal) << ": PSNR cpu " << p_cpu
                         << " gpu " << p_gpu << " dB");
        CHECK(std::abs(p_gpu - p_cpu) <= 0.05);
        CHECK(test::relative_error(gpu.image, cpu.image) < 2e-3);
      }
  }
}

// SeparableGemm takes up to 8 coils per GEMM (more columns, each phase once): 11 coils run as a
// block of 8 and one of 3, and must still agree with the CPU's per-coil sums.
TEST_CASE("gpu sense: the exact F^H D in coil blocks (SeparableGemm) agrees with the CPU", "[gpu][sense][small]") {
  const Simulated s = simulated(Grid(48, 48), 11);
  ReconOptions o;
  o.solver.iterations = 6;
  o.method = Method::Exact;
  o.gpu.policy = KernelPolicy::SeparableGemm;
  o.solver.lambda = 1e-3 * s.grid.voxels();
  o.coils.sensitivities = s.maps;
  const auto [cpu, gpu] = on_both(s, o);
  CHECK(gpu.report.coils == 11);
  CHECK(test::relative_error(gpu.image, cpu.image) < 2e-3);
}

TEST_CASE("gpu sense: estimated maps and coil compression run the same on both backends", "[gpu][sense][small]") {
  const Simulated s = simulated(Grid(48, 48), 6);
  ReconOptions o;
  o.solver.iterations = 6;
  o.method = Method::Nufft;
  o.solver.lambda = 2;
  o.coils.virtual_coils = 4;
  const auto [cpu, gpu] = on_both(s, o);
  CHECK(gpu.report.acquired_coils == 6);
  CHECK(gpu.report.coils == 4);
  CHECK(gpu.report.maps.rfind("estimated", 0) == 0);
  CHECK(gpu.report.coil_energy_kept == cpu.report.coil_energy_kept);
  CHECK(test::relative_error(gpu.image, cpu.image) < 2e-3);
}

TEST_CASE("gpu sense: maps estimated with device NUFFTs equal the CPU estimate", "[gpu][sense][small]") {
  // reconstruct on the GPU takes its calibration images with device NUFFTs (same kernel and
  // oversampling as the CPU plan, float32 both): the maps may differ only by float summation
  // order, far below the NUFFT tolerance (1e-3) that bounds either.
  const Simulated s = simulated(Grid(64, 56), 8);
  for (const MapEstimate method : {MapEstimate::Direct, MapEstimate::Espirit}) {
    SensitivityOptions o;
    o.method = method;
    const CoilSensitivities cpu = detail::estimate_sensitivities_on(s.data, s.grid, o, Backend::Cpu),
                            gpu = detail::estimate_sensitivities_on(s.data, s.grid, o, Backend::Cuda);
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < cpu.values().size(); ++i) {
      diff += std::norm(cpu.values()[i] - gpu.values()[i]);
      norm += std::norm(cpu.values()[i]);
    }
    const double e = std::sqrt(diff / norm);
    WARN(to_string(method) << " maps, device vs CPU calibration images: relative difference " << e);
    CHECK(e < 1e-4);
  }
  ReconOptions r;
  r.method = Method::Exact;
  r.backend = Backend::Cuda;
  r.solver.iterations = 2;
  CHECK(reconstruct(s.data, s.grid, r).report.maps.find("calibration images on cuda") != std::string::npos);
}

TEST_CASE("gpu sense: one coil with all-ones maps equals the single-coil GPU reconstruction", "[gpu][sense][small]") {
  const Grid grid(32, 32);
  const Trajectory t = test::random_trajectory(grid, 2000, gpu_test::fresh_seed());
  const KSpaceData data(t, test::random_complex(t.size(), 2), test::random_weights(t.size(), 3));
  for (const Method method : {Method::Exact, Method::Nufft}) {
    INFO(to_string(method));
    ReconOptions o;
    o.backend = Backend::Cuda;
    o.method = method;
    o.solver.iterations = 10;
    o.solver.regularizer = Regularizer::FiniteDifference;
    o.solver.lambda = 3;
    const ReconResult single = reconstruct(data, grid, o);
    o.coils.sensitivities = std::make_shared<const CoilSensitivities>(grid, 1, std::vector<cfloat>(grid.voxels(), 1.0f));
    const ReconResult sense = reconstruct(data, grid, o);
    // The regulariser runs after the operator instead of fused into its crop: float rounding only.
    CHECK(test::relative_error(sense.image, single.image) < 1e-5);
  }
}

TEST_CASE("gpu sense: the memory estimate counts the coils and refuses up front", "[gpu][sense][bad-input][small]") {
  const Simulated s = simulated(Grid(32, 32), 8);
  ReconOptions o;
  o.method = Method::Exact;
  o.backend = Backend::Cuda;
  o.solver.iterations = 2;
  o.coils.sensitivities = s.maps;
  const std::size_t with_coils = reconstruct(s.data, s.grid, o).report.device_bytes;
  o.coils.virtual_coils = 2;
  const std::size_t with_two = reconstruct(s.data, s.grid, o).report.device_bytes;
  // Six fewer maps of 32^2 complex floats and six fewer padded grids of the coil-batched Toeplitz
  // operator (all coils in one pass here), with the estimate's 5% margin (plus the F^H D plan's
  // share, which depends on the free memory at the time: a few KiB).
  const std::size_t fewer = 6u * 32 * 32 * 8 + cuda::detail::sense_batch_bytes(s.grid, 8) -
                            cuda::detail::sense_batch_bytes(s.grid, 2);
  CHECK(with_coils - with_two >= 6u * 32 * 32 * 8);
  CHECK(with_coils - with_two < fewer + fewer / 20 + 16384);
  o.coils.virtual_coils = 0;
  o.gpu.memory_limit = with_coils - 1;
  try {
    reconstruct(s.data, s.grid, o);
    FAIL("a limit one byte below the estimate must refuse");
  } catch (const Unsupported &e) {
    CHECK_THAT(std::string(e.what()), test::contains("8 coils") && test::contains("needs about"));
  }
}
