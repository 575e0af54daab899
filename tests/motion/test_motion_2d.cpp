// 2D motion (a grid of one slice, nz = 1: radial and stack-of-stars dynamic imaging): the
// pyramid and the multigrid coarsen x and y only, the z-derivative is zero (one slice, no
// neighbours: the stencil's border rule), so the z-component of the field stays 0 exactly and
// the estimate is the 2D CLG flow.
#include <algorithm>
#include <cmath>

#include "catch.hpp"
#include "motion_test_support.hpp"
#include "mri/error.hpp"
#include "mri/motion.hpp"
#include "mri_backend/motion_multigrid_rule.hpp"

using namespace mri;
namespace dm = mri::detail::motion;
using mri::test::motion::fresh_seed;

namespace {

// An in-plane translation (no z-component: a 2D field).
DisplacementField translation_2d(const Grid &g, double dx, double dy) {
  DisplacementField f(g);
  std::fill(f.u.values().begin(), f.u.values().end(), float(dx));
  std::fill(f.v.values().begin(), f.v.values().end(), float(dy));
  return f;
}

bool all_zero(const RealVolume &v) {
  return std::all_of(v.values().begin(), v.values().end(), [](float x) { return x == 0.0f; });
}

} // namespace

TEST_CASE("motion: 2D grids coarsen in-plane only; 3D grids as before", "[motion]") {
  const std::vector<Grid> flat = dm::multigrid_grids(Grid(40, 36, 1));
  REQUIRE(flat.size() == 5); // 40x36 -> 20x18 -> 10x9 -> 5x5 -> 3x3 (extent < 4: the coarsest)
  CHECK(flat.back() == Grid(3, 3, 1));
  for (const Grid &g : flat)
    CHECK(g.nz() == 1);
  // 3D: every extent halves while all are >= 4 (unchanged); a thin 3D volume (nz 2-3) does not
  // coarsen: only a single slice is exempt.
  CHECK(dm::multigrid_grids(Grid(32, 32, 32)).back() == Grid(2, 2, 2));
  CHECK(dm::multigrid_grids(Grid(32, 32, 3)).size() == 1);
  MotionOptions o;
  CHECK_NOTHROW(MotionEstimator(Grid(40, 36, 1), o)); // coarsest pyramid level 10x9x1
  CHECK_THROWS_WITH(MotionEstimator(Grid(40, 36, 2), o), Catch::Contains("options.levels = 3"));
  CHECK_THROWS_WITH(MotionEstimator(Grid(12, 40, 1), o), Catch::Contains("options.levels = 3"));
}

// EPE bound: the 3D texture tests (test_motion.cpp) hold translations and rotations of 1-1.5
// voxels to well under a tenth of a voxel at 32^3; one slice has fewer voxels to average the
// noise over (K_rho's neighbourhood is a disc, not a ball), so the bound is 0.15 voxels and at
// most a fifth of zero flow's error (measured over three seeds: 0.044-0.081 voxels, 3-5% of zero
// flow's 1.5-1.9).
TEST_CASE("motion: 2D translation and rotation recovered, the z-component exactly 0", "[motion]") {
  const Grid g(64, 56, 1);
  const std::uint64_t seed = fresh_seed();
  const bool rotation = GENERATE(false, true);
  const double gamma = GENERATE(0.0, 0.3);
  INFO("seed " << seed << (rotation ? ", rotation" : ", translation") << ", gamma " << gamma);
  const RealVolume fixed = textured_volume(g, seed);
  const DisplacementField truth =
      rotation ? synthetic_field(g, SyntheticMotion::Rotation, 1.5) : translation_2d(g, 1.3, -0.8);
  REQUIRE(all_zero(truth.w));
  RealVolume moving = apply_motion(fixed, truth);
  add_noise(moving, 0.01, seed + 1);
  MotionOptions o;
  o.gamma = gamma;
  MotionEstimator est(g, o);
  const DisplacementField w = est.estimate(fixed, moving);
  const double epe = average_endpoint_error(w, truth, 4),
               zero = average_endpoint_error(DisplacementField(g), truth, 4);
  INFO("epe " << epe << ", zero flow " << zero << ", residual " << est.report().solver_residual
              << " in " << est.report().solver_cycles << " cycles");
  CHECK(all_zero(w.w));
  CHECK(epe < 0.15);
  CHECK(epe < 0.2 * zero);
  CHECK(est.report().solver_residual <= o.tolerance);
  CHECK(est.report().solver_nonfinite == 0);
}
