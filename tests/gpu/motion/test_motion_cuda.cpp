// The CUDA motion backend against the CPU: the same driver and the same per-voxel
// formulas (mri/detail/motion_stencil.hpp) run on both, so the fields differ only by float
// rounding: nvcc contracts a*b+c into FMAs where GCC (no -ffp-contract=fast at -O3 for C++
// without -march) rounds twice, and the Gaussian's taps sit in constant memory as float on both.
// Each rounding is ~6e-8 relative; the solver is a contraction that damps them and warping feeds
// the field back through |grad I| <~ 0.5, so the fields agree to ~1e-5 voxels in the mean. The
// tolerances (mean 1e-4, max 5e-2 voxels, endpoint error within 1%) leave an order of magnitude.
#include <random>

#include "catch.hpp"
#include "mri/motion.hpp"
#include "gpu/motion/motion_gpu_support.hpp"
#include "gpu/sampled_reference.hpp"

using namespace mri;

namespace {

using gpu_test::fresh_seed;
using gpu_test::motion::max_difference;

// One test case per solver and memory policy (grids and gamma generated inside): under
// compute-sanitizer's racecheck the shared-tile solvers take minutes per combination, and
// scripts/sanitize-gpu.sh runs test cases, not generated values, side by side.
void check_gpu_matches_cpu(MotionSolver solver, MotionMemory memory) {
  const Grid grid = GENERATE(Grid(40, 40, 40), Grid(27, 33, 25));
  const double gamma = GENERATE(0.0, 0.3);
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", solver " << int(solver)
               << ", memory " << int(memory) << ", gamma " << gamma << ", seed " << seed);
  RealVolume fixed = textured_volume(grid, seed);
  const DisplacementField truth = synthetic_field(grid, SyntheticMotion::Swirl, 1.5);
  RealVolume moving = apply_motion(fixed, truth);
  add_noise(fixed, 0.01, seed + 1);
  add_noise(moving, 0.01, seed + 2);
  MotionOptions o;
  o.solver = solver;
  o.memory = memory;
  o.gamma = gamma;
  o.rho = 7.0 / 3.0; // the 15-tap kernel of MOTION-3D
  const gpu_test::motion::GpuCpuRun run =
      gpu_test::motion::check_gpu_matches_cpu(fixed, moving, truth, o);
  // The Euler-Lagrange residual is reported by both backends (the same definition, float64
  // sums): it moves with the field, so fields within 1e-4 voxels give residuals within a few
  // percent; the 1e-5 floor covers a nearly converged solve, whose residual is the float32
  // rounding of A w - b (~1e-6 of ||b||) amplified by the point solvers' passes.
  const double r_gpu = run.gpu_report.solver_residual, r_cpu = run.cpu_report.solver_residual;
  INFO("residual gpu " << r_gpu << ", cpu " << r_cpu);
  CHECK(std::isfinite(r_gpu));
  CHECK(std::abs(r_gpu - r_cpu) <= 0.05 * r_cpu + 1e-5);
}

} // namespace

TEST_CASE("cuda motion: GPU fields match the CPU's: Jacobi with cached loads", "[gpu][motion]") {
  check_gpu_matches_cpu(MotionSolver::Jacobi, MotionMemory::Cached);
}
TEST_CASE("cuda motion: GPU fields match the CPU's: Jacobi with shared tiles", "[gpu][motion]") {
  check_gpu_matches_cpu(MotionSolver::Jacobi, MotionMemory::SharedTiles);
}
TEST_CASE("cuda motion: GPU fields match the CPU's: red-black SOR with cached loads", "[gpu][motion]") {
  check_gpu_matches_cpu(MotionSolver::RedBlackSor, MotionMemory::Cached);
}
TEST_CASE("cuda motion: GPU fields match the CPU's: red-black SOR with shared tiles", "[gpu][motion]") {
  check_gpu_matches_cpu(MotionSolver::RedBlackSor, MotionMemory::SharedTiles);
}

TEST_CASE("cuda motion: the swirl's endpoint error is within 10% of the float64 CPU reference",
          "[gpu][motion]") {
  const Grid grid(48, 48, 48);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  RealVolume fixed = textured_volume(grid, seed);
  const DisplacementField truth = synthetic_field(grid, SyntheticMotion::Swirl, 1.5);
  const RealVolume moving = apply_motion(fixed, truth);
  MotionOptions o;
  o.gamma = 0.1;
  o.precision = Precision::Float64;
  MotionEstimator reference(grid, o);
  o.precision = Precision::Float32;
  o.backend = Backend::Cuda;
  MotionEstimator gpu(grid, o);
  const double epe64 = average_endpoint_error(reference.estimate(fixed, moving), truth, 3);
  const double epe_gpu = average_endpoint_error(gpu.estimate(fixed, moving), truth, 3);
  INFO("epe float64 cpu " << epe64 << ", gpu " << epe_gpu);
  CHECK(std::abs(epe_gpu - epe64) < 0.1 * epe64);
}

TEST_CASE("cuda motion: a device-resident sequence equals its pairs", "[gpu][motion]") {
  const Grid grid(32, 32, 32);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::vector<RealVolume> frames{textured_volume(grid, seed)};
  for (int k = 1; k < 4; ++k)
    frames.push_back(
        apply_motion(frames.back(), synthetic_field(grid, SyntheticMotion::Compressive, 0.5 * k)));
  MotionOptions o;
  o.backend = Backend::Cuda;
  MotionEstimator est(grid, o);
  const auto fields = est.estimate_sequence(frames);
  REQUIRE(fields.size() == 3);
  for (std::size_t k = 0; k + 1 < frames.size(); ++k) {
    const DisplacementField pair = est.estimate(frames[k], frames[k + 1]);
    CHECK(max_difference(fields[k], pair) == 0.0); // same kernels, same order: bitwise
    CHECK(average_endpoint_error(fields[k], DisplacementField(grid)) > 0.01); // motion was found
  }
}

TEST_CASE("cuda motion: fields of 2 MB and more come down through the pinned slots intact",
          "[gpu][motion]") {
  // 100x96x61 voxels: 2.34 MB a component, two chunks of motion_backend.cu's download (2 MB
  // slots, the second partial): the field equals the CPU's within the point solvers' bounds
  // (a misplaced or stale chunk would differ by the field itself, ~1 voxel). SOR with a few
  // iterations keeps the CPU's share of the test short.
  const Grid grid(100, 96, 61);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  RealVolume fixed = textured_volume(grid, seed);
  const DisplacementField truth = synthetic_field(grid, SyntheticMotion::Swirl, 1.5);
  RealVolume moving = apply_motion(fixed, truth);
  add_noise(moving, 0.01, seed + 1);
  MotionOptions o;
  o.solver = MotionSolver::RedBlackSor;
  o.iterations = 5;
  gpu_test::motion::check_gpu_matches_cpu(fixed, moving, truth, o);
}
