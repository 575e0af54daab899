// reconstruct() with sparse terms on the CUDA backend against the CPU: the one proximal solver
// template on device images (SparseOps<DeviceImage>), the same iterates within float rounding.
// Tags: [gpu][sparse] all; [small] the quick subset compute-sanitizer runs.
#include <cmath>
#include <vector>

#include "catch.hpp"
#include "mri/metrics.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

struct Case {
  SparsePenalty penalty;
  ProximalAlgorithm algorithm;
};

// `spokes` golden-angle spokes of a Shepp-Logan phantom on `grid` (2D) at SNR 30, one coil.
KSpaceData radial_data(const Grid &grid, int spokes) {
  const Trajectory t = traj::radial(grid, spokes, 2 * static_cast<int>(grid.nx()), traj::SpokeOrder::GoldenAngle);
  std::vector<cfloat> s = Phantom::shepp_logan_2d().kspace(t, grid);
  add_noise(s, 30.0, 29);
  return KSpaceData(t, std::move(s));
}

ReconOptions sparse_options(Backend backend, const Case &c) {
  ReconOptions o;
  o.backend = backend;
  o.method = Method::Exact; // the same F^H D and Q on both backends up to float rounding
  o.solver.iterations = 20;
  o.solver.tolerance = 0;
  SparseTerm t;
  t.penalty = c.penalty;
  t.lambda = 0.004;
  o.solver.terms = {t};
  o.solver.proximal.algorithm = c.algorithm;
  return o;
}

} // namespace

TEST_CASE("gpu sparse reconstruct: FISTA, ADMM and primal-dual iterate as on the CPU", "[gpu][sparse][reconstruct][small]") {
  const Case c = GENERATE(Case{SparsePenalty::L1Wavelet, ProximalAlgorithm::Fista},
                          Case{SparsePenalty::TotalVariation, ProximalAlgorithm::Fista},
                          Case{SparsePenalty::TotalVariation, ProximalAlgorithm::Admm},
                          Case{SparsePenalty::TotalVariation, ProximalAlgorithm::PrimalDual},
                          Case{SparsePenalty::L1Image, ProximalAlgorithm::Fista});
  const Grid grid(64, 64);
  const KSpaceData data = radial_data(grid, 24);
  const Image truth = Phantom::shepp_logan_2d().rasterize(grid);
  const ReconResult cpu = reconstruct(data, grid, sparse_options(Backend::Cpu, c));
  const ReconResult gpu = reconstruct(data, grid, sparse_options(Backend::Cuda, c));
  INFO(to_string(c.algorithm) << " " << to_string(c.penalty));
  CHECK(gpu.report.backend == Backend::Cuda);
  CHECK(gpu.report.solver == cpu.report.solver);
  CHECK(gpu.report.iterations == 20);
  REQUIRE(gpu.report.objective.size() == cpu.report.objective.size());
  // Float rounding differs (fused multiply-adds, reduction order): 1e-3 relative after 20
  // iterations separates it from a wrong kernel, which moves the image by O(1).
  CHECK(test::relative_error(gpu.image, cpu.image) < 1e-3);
  CHECK(std::abs(gpu.report.objective.back() - cpu.report.objective.back()) <= 1e-3 * cpu.report.objective.back());
  CHECK(std::abs(psnr(gpu.image, truth) - psnr(cpu.image, truth)) < 0.05);
  CHECK(std::abs(gpu.report.data_scale / cpu.report.data_scale - 1) < 1e-5);
}

TEST_CASE("gpu sparse reconstruct: 3D TV with SENSE-free koosh data matches the CPU", "[gpu][sparse][reconstruct]") {
  const Grid grid(32, 32, 32);
  const Trajectory t = traj::koosh(grid, 256, 64);
  std::vector<cfloat> s = Phantom::shepp_logan_3d().kspace(t, grid);
  add_noise(s, 30.0, 31);
  const KSpaceData data(t, std::move(s));
  const Case c{SparsePenalty::TotalVariation, GENERATE(ProximalAlgorithm::Admm, ProximalAlgorithm::Fista)};
  INFO(to_string(c.algorithm));
  ReconOptions cpu_o = sparse_options(Backend::Cpu, c), gpu_o = sparse_options(Backend::Cuda, c);
  cpu_o.solver.iterations = gpu_o.solver.iterations = 10;
  const ReconResult cpu = reconstruct(data, grid, cpu_o);
  const ReconResult gpu = reconstruct(data, grid, gpu_o);
  // 5e-3: in 3D ADMM's rho balancing compares residuals of each backend's rounding; a near tie
  // doubles rho an iteration apart (2.6e-3 seen on an H100), still far from a wrong kernel's O(1).
  CHECK(test::relative_error(gpu.image, cpu.image) < 5e-3);
}

TEST_CASE("gpu sparse reconstruct: L read from the cache beside Q repeats the first solve bit for bit",
          "[gpu][sparse][reconstruct][cache]") {
  const Grid grid(64, 64);
  const KSpaceData data = radial_data(grid, 24);
  test::TempDir dir("lipschitz-gpu");
  ReconOptions o = sparse_options(Backend::Cuda, Case{SparsePenalty::L1Wavelet, ProximalAlgorithm::Fista});
  o.q_cache_dir = dir.path();
  const ReconResult first = reconstruct(data, grid, o);
  const ReconResult second = reconstruct(data, grid, o);
  CHECK_FALSE(first.report.lipschitz_cached);
  CHECK(second.report.lipschitz_cached);
  CHECK(second.report.lipschitz == first.report.lipschitz);
  // The same L, so the same iterates: bit for bit where every device kernel of the solve is
  // deterministic (the reductions are); 1e-6 leaves room for an atomic sum elsewhere, far below
  // what another L does after 20 iterations.
  CHECK(test::relative_error(second.image, first.image) < 1e-6);
  // The CPU's rounding gives another estimate: its own entry (the backend is in the key).
  o.backend = Backend::Cpu;
  CHECK_FALSE(reconstruct(data, grid, o).report.lipschitz_cached);
}
