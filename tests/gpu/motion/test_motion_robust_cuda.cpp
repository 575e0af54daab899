// The Charbonnier data term (mri/motion.hpp, MotionDataTerm) on the CUDA backend against the
// CPU's: the same driver, the same per-voxel weight (mri::detail::motion::charbonnier_weight) and
// the same solver passes, so the fields differ only by float rounding (FMA contraction, as in
// test_motion_cuda.cpp). The weights add a square root per voxel whose input carries that
// rounding (relative ~1e-7), so the tolerances of the quadratic term's comparison apply: mean
// 1e-4, max 5e-2 voxels, endpoint error within 1% (the multigrid: its bounds,
// test_motion_multigrid_cuda.cpp; the default solver, so the robust term's default on CUDA).
#include <algorithm>
#include <cmath>

#include "catch.hpp"
#include "gpu/motion/motion_gpu_support.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/motion.hpp"

using namespace mri;

namespace {

void check_charbonnier_gpu_matches_cpu(MotionSolver solver) {
  const Grid grid = GENERATE(Grid(40, 40, 40), Grid(27, 33, 25));
  const double gamma = GENERATE(0.0, 0.3);
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", solver " << int(solver)
               << ", gamma " << gamma << ", seed " << seed);
  RealVolume fixed = textured_volume(grid, seed);
  const DisplacementField truth = synthetic_field(grid, SyntheticMotion::Translation, 1.5);
  RealVolume moving = apply_motion(fixed, truth);
  add_noise(fixed, 0.01, seed + 1);
  add_noise(moving, 0.01, seed + 2);
  MotionOptions o;
  o.solver = solver;
  o.gamma = gamma;
  o.data_term = MotionDataTerm::Charbonnier;
  o.reweightings = 2; // the second solve's weights come from the first's field: both stages run
  gpu_test::motion::check_gpu_matches_cpu(fixed, moving, truth, o);
}

} // namespace

TEST_CASE("cuda motion: Charbonnier fields match the CPU's: Jacobi", "[gpu][motion]") {
  check_charbonnier_gpu_matches_cpu(MotionSolver::Jacobi);
}

TEST_CASE("cuda motion: Charbonnier fields match the CPU's: red-black SOR", "[gpu][motion]") {
  check_charbonnier_gpu_matches_cpu(MotionSolver::RedBlackSor);
}

TEST_CASE("cuda motion: Charbonnier fields match the CPU's: multigrid", "[gpu][motion]") {
  check_charbonnier_gpu_matches_cpu(MotionSolver::Multigrid);
}
