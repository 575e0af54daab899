// The multigrid solver on the CUDA backend (cuda/motion/motion_multigrid.cu) against the CPU's
// (lib/motion/multigrid.cpp), and issue 42's solver targets on the GPU.
//
// Precision: the GPU computes in float32, so it is compared with the CPU's float32 path (the
// default precision), not float64: the two run the same operations in the same order (the shared
// clg_gradient / clg_update, the children's sums, trilinear prolongation, float64 reductions of
// the residual), so they differ only by FMA contraction (~6e-8 relative per rounding), which the
// cycles damp as the point solvers do (test_motion_cuda.cpp: mean 1e-4, max 5e-2 voxels, EPE
// within 1%). The stopping rule then takes the same decisions, except where a warp's residual lies
// within rounding (~1e-6 relative) of the tolerance; the V-cycle counts are compared, and where
// they differ the fields are held only to what one cycle more or less leaves: a field whose
// relative residual is below the tolerance 1e-3, i.e. ~1e-3 of the warp's update of ~1 voxel
// (mean 2e-3, max 5e-2 voxels, EPE within 2%). Against float64 the cycle counts would differ
// by design, and test_motion_cuda.cpp already bounds float32 against float64 (EPE within 10%).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "gpu/motion/motion_gpu_support.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/motion.hpp"

using namespace mri;

namespace {

using gpu_test::fresh_seed;

struct Pair {
  RealVolume fixed, moving;
  DisplacementField truth;
};

// The Shepp-Logan volume scaled to a peak of 1, as `mri motion` scales its frames (the options'
// alpha assumes intensities of order 1).
RealVolume scaled_phantom(const Grid &g) {
  RealVolume v = shepp_logan_volume(g);
  const float peak = *std::max_element(v.values().begin(), v.values().end());
  for (float &x : v.values())
    x /= peak;
  return v;
}

enum class Case { Translation, Rotation, ContractingPhantom };

Pair make_pair(Case c, const Grid &g, std::uint64_t seed) {
  const bool phantom = c == Case::ContractingPhantom;
  const SyntheticMotion motion = c == Case::Translation ? SyntheticMotion::Translation
                                 : c == Case::Rotation  ? SyntheticMotion::Rotation
                                                        : SyntheticMotion::Compressive;
  // The phantom contracts by 1 voxel (issue 42's breath-like case), the texture moves by 1.5.
  Pair p{phantom ? scaled_phantom(g) : textured_volume(g, seed), {},
         synthetic_field(g, motion, phantom ? 1.0 : 1.5)};
  p.moving = apply_motion(p.fixed, p.truth);
  add_noise(p.fixed, 0.01, seed + 1);
  add_noise(p.moving, 0.01, seed + 2);
  return p;
}

const char *name(Case c) {
  return c == Case::Translation ? "translation" : c == Case::Rotation ? "rotation" : "phantom";
}

struct Setting {
  Grid grid;
  Case c;
};

// One test case per memory policy and cycle (scripts/sanitize-gpu.sh runs test cases side by
// side; grids, motions and gamma generated inside). 27x33x25: odd extents, the coarse grids' lone
// children. The phantom at odd extents too, where the V-cycles diverged before the prolongation
// placed coarse voxels at their children's centres (docs/motion.md, "Odd extents and the
// safeguards"); at 33^3 (a lone child on every level) the CPU's V-cycles stall on some solves and
// hand over to the conjugate gradients (and at gamma 0.3 on most sizes), so the switch is
// compared too.
void check_multigrid_matches_cpu(MotionMemory memory, bool krylov) {
  const Setting setting =
      GENERATE(Setting{Grid(32, 32, 32), Case::Translation}, Setting{Grid(32, 32, 32), Case::Rotation},
               Setting{Grid(32, 32, 32), Case::ContractingPhantom},
               Setting{Grid(27, 33, 25), Case::Translation}, Setting{Grid(27, 33, 25), Case::Rotation},
               Setting{Grid(27, 33, 25), Case::ContractingPhantom},
               Setting{Grid(33, 33, 33), Case::ContractingPhantom});
  const Grid &grid = setting.grid;
  const Case c = setting.c;
  const double gamma = GENERATE(0.0, 0.3);
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", " << name(c)
               << ", memory " << int(memory) << (krylov ? ", krylov" : "") << ", gamma " << gamma
               << ", seed " << seed);
  const Pair p = make_pair(c, grid, seed);
  MotionOptions o;
  o.solver = MotionSolver::Multigrid;
  o.memory = memory;
  o.gamma = gamma;
  o.multigrid.krylov = krylov;
  const gpu_test::motion::GpuCpuRun run =
      gpu_test::motion::check_gpu_matches_cpu(p.fixed, p.moving, p.truth, o);
  CHECK(run.gpu_report.solver == MotionSolver::Multigrid);
  CHECK(run.gpu_report.solver_cycles > 0);
  const double tolerance = o.tolerance;
  INFO("residual gpu " << run.gpu_report.solver_residual << ", cpu "
                       << run.cpu_report.solver_residual << "; solves switched to CG gpu "
                       << run.gpu_report.solver_switches << ", cpu "
                       << run.cpu_report.solver_switches);
  CHECK(run.gpu_report.solver_nonfinite == 0);
  CHECK(std::isfinite(run.gpu_report.solver_residual));
  // The same cycles: the same decisions, the safeguard's switch included.
  // The finest grid's passes too: the coarse levels cycled by one block count as the launches did.
  if (run.gpu_report.solver_cycles == run.cpu_report.solver_cycles) {
    CHECK(run.gpu_report.solver_switches == run.cpu_report.solver_switches);
    CHECK(run.gpu_report.solver_sweeps == run.cpu_report.solver_sweeps);
  }
  // The CPU's multigrid meets the tolerance on these quadratic systems (tests/motion); the GPU's
  // takes the same cycles, so it meets it where the CPU does.
  if (run.cpu_report.solver_residual <= tolerance)
    CHECK(run.gpu_report.solver_residual <= tolerance);
}

} // namespace

TEST_CASE("cuda motion: multigrid fields match the CPU's: cached loads", "[gpu][motion]") {
  check_multigrid_matches_cpu(MotionMemory::Cached, false);
}
TEST_CASE("cuda motion: multigrid fields match the CPU's: shared tiles", "[gpu][motion]") {
  check_multigrid_matches_cpu(MotionMemory::SharedTiles, false);
}
TEST_CASE("cuda motion: multigrid-preconditioned CG fields match the CPU's", "[gpu][motion]") {
  check_multigrid_matches_cpu(MotionMemory::Cached, true);
}

TEST_CASE("cuda motion: Auto runs the multigrid and meets its tolerance at the defaults",
          "[gpu][motion]") {
  // As the CPU's test (tests/motion/test_motion_multigrid.cpp) on the swirl and the compression at
  // 27x33x25: the reported residual (the largest over every warp and level) is below the
  // tolerance at the default options.
  const std::uint64_t seed = fresh_seed();
  const SyntheticMotion motion = GENERATE(SyntheticMotion::Swirl, SyntheticMotion::Compressive);
  const Grid g(27, 33, 25);
  INFO("seed " << seed << ", motion " << int(motion));
  const RealVolume fixed = textured_volume(g, seed);
  const DisplacementField truth = synthetic_field(g, motion, 1.5);
  RealVolume moving = apply_motion(fixed, truth);
  add_noise(moving, 0.01, seed + 1);
  for (double gamma : {0.0, 0.3}) {
    MotionOptions o;
    o.backend = Backend::Cuda;
    o.gamma = gamma;
    MotionEstimator est(g, o);
    CHECK(est.options().solver == MotionSolver::Multigrid); // Auto resolved on CUDA
    const double epe = average_endpoint_error(est.estimate(fixed, moving), truth, 3);
    const MotionReport &r = est.report();
    INFO("gamma " << gamma << ": residual " << r.solver_residual << " in " << r.solver_cycles
                  << " cycles, EPE " << epe);
    CHECK(r.solver == MotionSolver::Multigrid);
    CHECK(r.solver_cycles > 0);
    CHECK(r.solver_residual <= o.tolerance);
    if (gamma == 0 || motion != SyntheticMotion::Compressive) // the volume term resists compression
      CHECK(epe < 0.5 * average_endpoint_error(DisplacementField(g), truth, 3));
  }
}

TEST_CASE("cuda motion: gamma 0.3 does not hurt divergence-free motion at the defaults",
          "[gpu][motion]") {
  // Issue 42's target on the GPU: EPE with gamma = 0.3 at most 1.1x gamma = 0's on
  // divergence-free motion, default settings (Auto: the multigrid). The CPU's float32 multigrid,
  // which the GPU's follows, measured at this size and these settings (4 seeds): translation
  // 0.75-0.78x, swirl 0.82-0.88x. A rotation is not divergence-free as a displacement (a finite
  // rotation by theta has div w = 2 (cos theta - 1) < 0, the volume term's linearisation
  // penalises it): 1.13-1.26x there, so it is not among these cases.
  const std::uint64_t seed = fresh_seed();
  const SyntheticMotion motion = GENERATE(SyntheticMotion::Translation, SyntheticMotion::Swirl);
  const Grid g(32, 32, 32);
  INFO("seed " << seed << ", motion " << int(motion));
  RealVolume fixed = textured_volume(g, seed);
  const DisplacementField truth = synthetic_field(g, motion, 1.5);
  RealVolume moving = apply_motion(fixed, truth);
  add_noise(fixed, 0.01, seed + 1);
  add_noise(moving, 0.01, seed + 2);
  const auto epe = [&](double gamma, double &residual) {
    MotionOptions o;
    o.backend = Backend::Cuda;
    o.gamma = gamma;
    MotionEstimator est(g, o);
    const double e = average_endpoint_error(est.estimate(fixed, moving), truth, 3);
    residual = est.report().solver_residual;
    return e;
  };
  double r0 = 0, r1 = 0;
  const double epe0 = epe(0.0, r0), epe1 = epe(0.3, r1);
  INFO("EPE gamma 0: " << epe0 << " (residual " << r0 << "), gamma 0.3: " << epe1 << " (residual "
                       << r1 << ")");
  CHECK(r0 <= MotionOptions{}.tolerance);
  CHECK(r1 <= MotionOptions{}.tolerance);
  CHECK(epe1 <= 1.1 * epe0);
}

TEST_CASE("cuda motion: estimate_to_reference equals estimate per frame, bitwise", "[gpu][motion]") {
  // The chain's registration of every state to one reference (uploaded and decimated once): each
  // pair starts from zero motion with the same plans and the device's reductions are in a fixed
  // order, so the fields are estimate()'s bitwise.
  const Grid g(40, 36, 34);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const RealVolume reference = textured_volume(g, seed);
  std::vector<RealVolume> frames;
  for (double amplitude : {0.8, -1.2, 1.5}) {
    frames.push_back(apply_motion(reference, synthetic_field(g, SyntheticMotion::Compressive, amplitude)));
    add_noise(frames.back(), 0.01, seed + frames.size());
  }
  MotionOptions o;
  o.backend = Backend::Cuda;
  MotionEstimator est(g, o);
  const std::vector<DisplacementField> together = est.estimate_to_reference(frames, reference);
  const MotionReport all = est.report();
  REQUIRE(together.size() == frames.size());
  std::int64_t cycles = 0;
  for (std::size_t k = 0; k < frames.size(); ++k) {
    const DisplacementField alone = est.estimate(frames[k], reference);
    cycles += est.report().solver_cycles;
    CHECK(gpu_test::motion::max_difference(together[k], alone) == 0.0);
    CHECK(est.report().solver_residual <= o.tolerance);
  }
  CHECK(all.solver_cycles == cycles);
  CHECK(all.backend == Backend::Cuda);
}
