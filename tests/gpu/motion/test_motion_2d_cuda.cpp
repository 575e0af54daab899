// 2D motion (nz = 1) on the CUDA backend against the CPU's float32 estimate: the same code path
// as 3D (the stencils' border rule removes the z-neighbours and Iz), the same pyramid and
// multigrid grids (multigrid_grids: in-plane coarsening), so the bounds are the 3D tests'
// (motion_gpu_support.hpp; test_motion_multigrid_cuda.cpp says why), and the z-component is 0
// exactly on both.
#include <algorithm>
#include <cstdint>

#include "catch.hpp"
#include "gpu/motion/motion_gpu_support.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/motion.hpp"

using namespace mri;

TEST_CASE("cuda motion: 2D fields match the CPU's", "[gpu][motion]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  const MotionSolver solver = GENERATE(MotionSolver::Multigrid, MotionSolver::RedBlackSor);
  const double gamma = GENERATE(0.0, 0.3);
  // 96x80: the multigrid's levels of at most 64^2 voxels are cycled by one block; 67x45: odd.
  const Grid g = GENERATE(Grid(96, 80, 1), Grid(67, 45, 1));
  INFO("seed " << seed << ", grid " << g.nx() << "x" << g.ny() << ", solver " << int(solver)
               << ", gamma " << gamma);
  const RealVolume fixed = textured_volume(g, seed);
  const DisplacementField truth = synthetic_field(g, SyntheticMotion::Rotation, 1.5); // w = 0
  RealVolume moving = apply_motion(fixed, truth);
  add_noise(moving, 0.01, seed + 1);
  MotionOptions o;
  o.solver = solver;
  o.gamma = gamma;
  const gpu_test::motion::GpuCpuRun run =
      gpu_test::motion::check_gpu_matches_cpu(fixed, moving, truth, o);
  const auto zero = [](const RealVolume &v) {
    return std::all_of(v.values().begin(), v.values().end(), [](float x) { return x == 0.0f; });
  };
  CHECK(zero(run.gpu.w));
  CHECK(zero(run.cpu.w));
  if (solver == MotionSolver::Multigrid && run.cpu_report.solver_residual <= o.tolerance)
    CHECK(run.gpu_report.solver_residual <= o.tolerance);
}
