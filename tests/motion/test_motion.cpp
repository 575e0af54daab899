// Motion estimation (Bruhn et al.'s combined local-global optical flow with the volume-conserving
// term of the GPU motion paper: mri/motion.hpp) on the CPU: the stages against float64 and analytic
// references, the estimator on synthetic sequences with known motion, and bad input.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../../lib/motion/cpu_stages.hpp"
#include "mri_backend/motion_driver.hpp"
#include "catch.hpp"
#include "motion_test_support.hpp"
#include "mri/error.hpp"
#include "mri/motion.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"

using namespace mri;
namespace dm = mri::detail::motion;

namespace {

using mri::test::motion::fresh_seed;
using mri::test::motion::to_volume;
template <class T> dm::Field<T> to_field(const DisplacementField &w) {
  return {to_volume<T>(w.u), to_volume<T>(w.v), to_volume<T>(w.w)};
}

double max_abs_diff(const std::vector<float> &a, const std::vector<double> &b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

// A random smooth field of peak `amplitude` voxels (random plane waves per component).
DisplacementField random_field(const Grid &g, double amplitude, std::uint64_t seed) {
  DisplacementField w(g);
  w.u = textured_volume(g, seed), w.v = textured_volume(g, seed + 1),
  w.w = textured_volume(g, seed + 2);
  for (RealVolume *c : {&w.u, &w.v, &w.w})
    for (float &x : c->values())
      x = float(amplitude * (2 * x - 1));
  return w;
}

double mean_magnitude(const DisplacementField &w) {
  return average_endpoint_error(w, DisplacementField(w.grid()));
}

MotionOptions test_options() {
  MotionOptions o;
  o.iterations = 20;
  return o;
}

} // namespace

TEST_CASE("motion: Gaussian taps are normalised, 3 std wide, at most 15", "[motion]") {
  const auto taps = dm::gaussian_taps(7.0 / 3.0, "options.rho");
  CHECK(taps.size() == 15);
  double sum = 0;
  for (double t : taps)
    sum += t;
  CHECK(sum == Approx(1.0).epsilon(1e-12));
  CHECK(taps[7] > taps[6]);
  CHECK(taps[6] == Approx(taps[8]));
  CHECK(dm::gaussian_taps(0.0, "options.sigma").size() == 1);
  CHECK_THROWS_WITH(dm::gaussian_taps(2.4, "options.rho"),
                    Catch::Contains("options.rho = 2.4") && Catch::Contains("15"));
}

TEST_CASE("motion: gradients, warping and smoothing in float32 match float64", "[motion]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid g(29, 24, 26);
  RealVolume f = textured_volume(g, seed);
  add_noise(f, 0.05, seed + 9);
  const DisplacementField w = random_field(g, 3.0, seed + 3);
  for (MotionDerivative d : {MotionDerivative::Forward, MotionDerivative::Central}) {
    dm::Field<float> gf{dm::Volume<float>(g), dm::Volume<float>(g), dm::Volume<float>(g)};
    dm::Field<double> gd{dm::Volume<double>(g), dm::Volume<double>(g), dm::Volume<double>(g)};
    dm::gradients(to_volume<float>(f), gf, d);
    dm::gradients(to_volume<double>(f), gd, d);
    // One float subtraction of values <= ~1.2: the rounding of the inputs and the result, ~2^-23.
    for (int a = 0; a < 3; ++a)
      CHECK(max_abs_diff(gf[a].v, gd[a].v) < 4e-7);
  }
  dm::Volume<float> of(g);
  dm::Volume<double> od(g);
  dm::warp(to_volume<float>(f), to_field<float>(w), of);
  dm::warp(to_volume<double>(f), to_field<double>(w), od);
  // Positions x + w up to ~32 carry float rounding ~2^-24 * 32 = 2e-6 voxels, times |grad f| <~ 1,
  // plus ~4 float roundings of the 7 lerps: < 1e-5 with room to spare.
  CHECK(max_abs_diff(of.v, od.v) < 1e-5);
  dm::Volume<float> sf = to_volume<float>(f), tf(g);
  dm::Volume<double> sd = to_volume<double>(f), td(g);
  const auto taps = dm::gaussian_taps(2.0, "rho");
  dm::gaussian(sf, tf, taps);
  dm::gaussian(sd, td, taps);
  // 3 passes of 13 taps, float accumulation of values <= ~1.2: ~40 roundings of 6e-8.
  CHECK(max_abs_diff(sf.v, sd.v) < 3e-6);
}

TEST_CASE("motion: trilinear warping reproduces a linear function exactly", "[motion]") {
  // Trilinear interpolation is exact for affine intensities: an analytic reference, not a twin.
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid g(24, 27, 25);
  RealVolume f(g);
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x)
        f.at(x, y, z) = float(0.3 * x - 0.2 * y + 0.15 * z + 1.0);
  DisplacementField w = random_field(g, 2.0, seed);
  const RealVolume out = warp(f, w);
  double worst = 0;
  std::int64_t inside = 0;
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const double X = x + w.u.at(x, y, z), Y = y + w.v.at(x, y, z), Z = z + w.w.at(x, y, z);
        if (X < 0 || Y < 0 || Z < 0 || X > g.nx() - 1 || Y > g.ny() - 1 || Z > g.nz() - 1)
          continue; // clamped
        ++inside;
        worst = std::max(worst, std::abs(out.at(x, y, z) - (0.3 * X - 0.2 * Y + 0.15 * Z + 1.0)));
      }
  CHECK(inside > g.voxels() / 2);
  CHECK(worst < 2e-5); // float positions and lerps on values ~10
}

TEST_CASE("motion: pyramid grids halve rounding up (odd and non-power-of-two)", "[motion]") {
  const auto grids = dm::pyramid_grids(Grid(27, 33, 25), 3);
  REQUIRE(grids.size() == 3);
  CHECK(grids[1] == Grid(14, 17, 13));
  CHECK(grids[2] == Grid(7, 9, 7));
}

TEST_CASE("motion: a constant sequence gives zero flow", "[motion]") {
  const Grid g(24, 24, 24);
  const RealVolume frame = textured_volume(g, fresh_seed());
  const std::vector<RealVolume> frames(3, frame);
  MotionEstimator est(g, test_options());
  const auto fields = est.estimate_sequence(frames);
  REQUIRE(fields.size() == 2);
  for (const auto &w : fields)
    CHECK(mean_magnitude(w) == 0.0); // It = 0 and w0 = 0: r = 0 exactly
  CHECK(est.report().solver_sweeps > 0);
}

TEST_CASE("motion: metrics on known fields", "[motion]") {
  const Grid g(12, 10, 8);
  DisplacementField a(g), zero(g);
  for (float &x : a.u.values())
    x = 1.0f;
  CHECK(average_endpoint_error(a, zero) == Approx(1.0));
  CHECK(average_angular_error(a, zero) == Approx(45.0)); // (1,0,0,1) vs (0,0,0,1)
  const JacobianStats rigid =
      jacobian_stats(synthetic_field(Grid(32, 32, 32), SyntheticMotion::Rotation, 2.0));
  CHECK(rigid.fraction_nonpositive == 0.0);
  CHECK(rigid.std_log_det < 1e-3); // a rotation keeps volume: det = cos^2 + sin^2 at every voxel
  const JacobianStats squeeze =
      jacobian_stats(synthetic_field(Grid(32, 32, 32), SyntheticMotion::Compressive, 1.5));
  CHECK(squeeze.mean_det < 0.99);
  CHECK(squeeze.std_log_det > 0.02);
}

namespace {

struct Pair {
  RealVolume fixed, moving;
  DisplacementField truth;
};

// fixed: `volume` plus noise; moving: volume moved by the known field plus independent noise.
Pair make_pair(const RealVolume &volume, SyntheticMotion motion, double amplitude, double noise,
               std::uint64_t seed) {
  Pair p{volume, {}, synthetic_field(volume.grid(), motion, amplitude)};
  p.moving = apply_motion(volume, p.truth);
  add_noise(p.fixed, noise, seed);
  add_noise(p.moving, noise, seed + 1);
  return p;
}

const char *name(SyntheticMotion m) {
  switch (m) {
  case SyntheticMotion::Translation:
    return "translation";
  case SyntheticMotion::Rotation:
    return "rotation";
  case SyntheticMotion::Swirl:
    return "swirl";
  case SyntheticMotion::Compressive:
    return "compressive";
  }
  return "?";
}

} // namespace

constexpr std::int64_t kBorder = 3; // content entering across a face is not estimable

struct Expect {
  SyntheticMotion motion;
  bool phantom; // Shepp-Logan (else texture)
  double bound; // interior endpoint error (voxels)
};

TEST_CASE("motion: endpoint error per synthetic motion, far below the zero-flow error",
          "[motion]") {
  // Bounds: the largest error over 200 random textures (seeds 17 + 1000003 i, these options)
  // plus ~30%: translation median 0.094, max 0.162; rotation 0.088, 0.228; swirl
  // 0.142, 0.217; compressive 0.182, 0.308 voxels. (The bounds before, 0.15 / 0.15 / 0.22 / 0.28
  // from a few seeds, were below those maxima: a CI run met rotation at 0.172.) The phantom with
  // 100 noise seeds: 0.358-0.362 and 0.256-0.258.
  // Shepp-Logan's flat interiors leave rotation and swirl to the smoothness term (an aperture
  // problem), so the phantom is tested on the motions its edges determine.
  const Expect e = GENERATE(Expect{SyntheticMotion::Translation, false, 0.21},
                            Expect{SyntheticMotion::Rotation, false, 0.30},
                            Expect{SyntheticMotion::Swirl, false, 0.28},
                            Expect{SyntheticMotion::Compressive, false, 0.40},
                            Expect{SyntheticMotion::Translation, true, 0.50},
                            Expect{SyntheticMotion::Compressive, true, 0.36});
  const std::uint64_t seed = fresh_seed();
  const Grid g(32, 32, 32);
  const Pair p = make_pair(e.phantom ? shepp_logan_volume(g) : textured_volume(g, seed), e.motion,
                           1.5, 0.01, seed);
  MotionEstimator est(g, test_options());
  const DisplacementField w = est.estimate(p.fixed, p.moving);
  const double epe = average_endpoint_error(w, p.truth, kBorder),
               zero = average_endpoint_error(DisplacementField(g), p.truth, kBorder);
  INFO("seed " << seed << ", " << name(e.motion) << (e.phantom ? " phantom" : " texture")
               << ": epe " << epe << ", zero-flow " << zero);
  CHECK(epe < e.bound);
  CHECK(epe < 0.5 * zero); // measured 0.05-0.35 of the zero-flow error
}

TEST_CASE("motion: the volume term lowers std(log det) on the incompressible swirl", "[motion]") {
  const std::uint64_t seed = fresh_seed();
  const Grid g(32, 32, 32);
  const Pair p = make_pair(textured_volume(g, seed), SyntheticMotion::Swirl, 1.5, 0.02, seed);
  MotionOptions o = test_options();
  MotionEstimator plain(g, o);
  o.gamma = 0.3;
  MotionEstimator conserving(g, o);
  const DisplacementField w0 = plain.estimate(p.fixed, p.moving),
                          w1 = conserving.estimate(p.fixed, p.moving);
  const JacobianStats s0 = jacobian_stats(w0), s1 = jacobian_stats(w1),
                      truth = jacobian_stats(p.truth);
  INFO("seed " << seed << ": std log det " << s0.std_log_det << " -> " << s1.std_log_det
               << " (truth " << truth.std_log_det << ")");
  // Measured: 0.033-0.036 -> 0.012 (the truth's own 0.0126: finite displacements of a div-free
  // field are not exactly volume-preserving).
  CHECK(s1.std_log_det < 0.6 * s0.std_log_det);
  CHECK(s1.fraction_nonpositive == 0.0);
  // The term usually helps accuracy here too (measured 0.14 -> 0.11), but not on every random
  // texture (seed 2115543432: 0.218 -> 0.225); what holds on all: it costs at most 10 %. gamma = 1
  // would over-constrain (0.15 -> 0.21): docs/motion.md's table.
  CHECK(average_endpoint_error(w1, p.truth, kBorder) < 1.1 * average_endpoint_error(w0, p.truth, kBorder));
}

TEST_CASE("motion: float32 fields match the float64 reference", "[motion]") {
  const std::uint64_t seed = fresh_seed();
  const Grid g(32, 32, 32);
  const Pair p = make_pair(textured_volume(g, seed), SyntheticMotion::Swirl, 1.5, 0.01, seed);
  MotionOptions o = test_options();
  o.gamma = 0.5;
  MotionEstimator f32(g, o);
  o.precision = Precision::Float64;
  MotionEstimator f64(g, o);
  const DisplacementField a = f32.estimate(p.fixed, p.moving), b = f64.estimate(p.fixed, p.moving);
  const double epe32 = average_endpoint_error(a, p.truth, kBorder),
               epe64 = average_endpoint_error(b, p.truth, kBorder);
  INFO("seed " << seed << ": epe float32 " << epe32 << ", float64 " << epe64);
  // Float rounding (~1e-7 relative) is damped by the contracting solver; warping feeds the field
  // back through |grad I| ~ 0.3. Measured mean difference 2e-7 voxels; 1e-4 leaves room for other
  // compilers' contraction choices and is still 1000x inside the 10% of the error checked below.
  CHECK(average_endpoint_error(a, b) < 1e-4);
  CHECK(std::abs(epe32 - epe64) < 0.1 * epe64);
}

TEST_CASE("motion: the pyramid on odd and non-power-of-two sizes", "[motion]") {
  const std::uint64_t seed = fresh_seed();
  const Grid g = GENERATE(Grid(27, 33, 25), Grid(40, 24, 31));
  const Pair p = make_pair(textured_volume(g, seed), SyntheticMotion::Translation, 2.5, 0.01, seed);
  MotionOptions o = test_options();
  MotionEstimator est(g, o);
  const DisplacementField w = est.estimate(p.fixed, p.moving);
  const double epe = average_endpoint_error(w, p.truth, kBorder);
  INFO("seed " << seed << ", grid " << g.nx() << "x" << g.ny() << "x" << g.nz() << ": epe " << epe);
  // A 3.1-voxel translation: measured 0.10-0.16 over 12 random textures (at 3.7 voxels, 0.15-0.36).
  CHECK(epe < 0.3);
}

TEST_CASE("motion: Jacobi and red-black SOR lower the energy to the same minimum", "[motion]") {
  const std::uint64_t seed = fresh_seed();
  const Grid g(24, 24, 24);
  const Pair p = make_pair(textured_volume(g, seed), SyntheticMotion::Swirl, 1.0, 0.01, seed);
  dm::Field<double> grad{dm::Volume<double>(g), dm::Volume<double>(g), dm::Volume<double>(g)};
  const dm::Volume<double> fixed = to_volume<double>(p.fixed), moving = to_volume<double>(p.moving);
  dm::gradients(fixed, grad, MotionDerivative::Central);
  dm::Tensor<double> j;
  for (auto &c : j)
    c = dm::Volume<double>(g);
  dm::tensor(grad, fixed, moving, j);
  const double alpha = 0.03, gamma = 0.1;
  const int colours = dm::sor_colours(gamma);
  const auto solve = [&](bool jacobi, int iterations, double omega) {
    dm::Field<double> a{dm::Volume<double>(g), dm::Volume<double>(g), dm::Volume<double>(g)}, b = a;
    for (int it = 0; it < iterations; ++it) {
      if (jacobi) {
        dm::sweep(j, a, b, -1, colours, alpha, gamma, 1.0);
        std::swap(a, b);
      } else {
        for (int c = 0; c < colours; ++c)
          dm::sweep(j, a, a, c, colours, alpha, gamma, omega);
      }
    }
    return a;
  };
  const double e0 = dm::clg_energy(j, solve(true, 0, 1.0), alpha, gamma);
  const double jacobi = dm::clg_energy(j, solve(true, 1500, 1.0), alpha, gamma);
  const double sor = dm::clg_energy(j, solve(false, 300, 1.8), alpha, gamma);
  const double sor_short = dm::clg_energy(j, solve(false, 10, 1.8), alpha, gamma);
  const double jacobi_short = dm::clg_energy(j, solve(true, 10, 1.0), alpha, gamma);
  INFO("seed " << seed);
  CHECK(sor < e0);
  CHECK(std::abs(jacobi - sor) < 1e-3 * std::abs(e0 - sor)); // both reach the minimum
  // Equal updates per voxel (10): SOR is closer to the minimum. (Per pass over memory, 4 colour
  // passes against 4 Jacobi sweeps, Jacobi was ahead: the GPU's choice, docs/motion.md.)
  CHECK(sor_short - sor < jacobi_short - sor); // measured gaps ~5 against ~9
}

TEST_CASE("motion: two reconstructed frames of a translating phantom (the MRI case)", "[motion]") {
  // Koosh k-space of the analytic phantom and of the phantom moved by d (shift theorem), each
  // reconstructed by CG (NUFFT), then motion-estimated: the known field is the constant d.
  const Grid g(24, 24, 24);
  const std::array<double, 3> d{1.5, -1.0, 0.5};
  const auto phantom = Phantom::shepp_logan_3d();
  const Trajectory traj = traj::koosh(g, 1152, 48);
  std::vector<cfloat> s1 = phantom.kspace(traj, g), s2 = s1;
  shift_kspace(s2, traj, g, d);
  const std::uint64_t seed = fresh_seed();
  add_noise(s1, 50, seed);
  add_noise(s2, 50, seed + 1);
  ReconOptions recon;
  recon.method = Method::Nufft;
  recon.backend = Backend::Cpu;
  const RealVolume f1 = normalised_magnitude(reconstruct(KSpaceData(traj, s1), g, recon).image);
  const RealVolume f2 = normalised_magnitude(reconstruct(KSpaceData(traj, s2), g, recon).image);
  MotionEstimator est(g, test_options());
  const DisplacementField w = est.estimate(f1, f2);
  DisplacementField truth(g);
  std::fill(truth.u.values().begin(), truth.u.values().end(), float(d[0]));
  std::fill(truth.v.values().begin(), truth.v.values().end(), float(d[1]));
  std::fill(truth.w.values().begin(), truth.w.values().end(), float(d[2]));
  const double epe = average_endpoint_error(w, truth, kBorder);
  INFO("seed " << seed << ": epe " << epe << " of a 1.87-voxel motion");
  CHECK(epe < 0.3); // measured 0.13-0.15 (a 1.87-voxel motion: zero flow would score 1.87)
}

TEST_CASE("motion: a beating sequence, frame to frame, recovers each pair's motion", "[motion]") {
  // 4 frames of a random texture: contraction, relaxation, contraction. Bound: the texture's
  // compressive bound of the single-pair test above (0.28 voxels at amplitude 1.5; measured
  // 0.12 at amplitude 1 for either sign). On the Shepp-Logan phantom the relaxation pairs are
  // not recovered (EPE 0.45-0.52 against a zero-flow 0.42-0.49 at 32^3 and 48^3; docs/motion.md).
  const Grid g(32, 32, 32);
  const std::uint64_t seed = fresh_seed();
  SyntheticSequence seq = beating_sequence(textured_volume(g, seed), 4, 1.0);
  REQUIRE(seq.frames.size() == 4);
  REQUIRE(seq.truth.size() == 3);
  for (std::size_t k = 0; k < seq.frames.size(); ++k)
    add_noise(seq.frames[k], 0.01, seed + k);
  // The truth alternates: relaxation undoes contraction (opposite fields).
  CHECK(seq.truth[1].u[g.index(8, 16, 16)] == -seq.truth[0].u[g.index(8, 16, 16)]);
  CHECK(seq.truth[0].u[g.index(8, 16, 16)] != 0);
  MotionEstimator est(g, test_options());
  const std::vector<DisplacementField> w = est.estimate_sequence(seq.frames);
  REQUIRE(w.size() == 3);
  for (std::size_t k = 0; k < w.size(); ++k) {
    const double epe = average_endpoint_error(w[k], seq.truth[k], kBorder),
                 zero = average_endpoint_error(DisplacementField(g), seq.truth[k], kBorder);
    INFO("seed " << seed << ", pair " << k << ": epe " << epe << ", zero-flow " << zero);
    CHECK(epe < 0.28);
    CHECK(epe < 0.5 * zero);
  }
  CHECK_THROWS_WITH(beating_sequence(seq.frames[0], 1, 1.0), Catch::Contains("frames = 1"));
  CHECK_THROWS_WITH(beating_sequence(seq.frames[0], 3, std::nan("")), Catch::Contains("amplitude = nan"));
}

// The chain's registration of every state to one reference: the reference is prepared once, and
// each pair starts from zero motion with the same plans, so the fields are those of estimate(),
// bitwise (the same operations on the same data in the same order).
TEST_CASE("motion: estimate_to_reference equals estimate per frame, bitwise", "[motion]") {
  const Grid g(20, 18, 16);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const RealVolume reference = textured_volume(g, seed);
  std::vector<RealVolume> frames;
  for (double amplitude : {0.7, -1.1}) {
    frames.push_back(apply_motion(reference, synthetic_field(g, SyntheticMotion::Swirl, amplitude)));
    add_noise(frames.back(), 0.01, seed + frames.size());
  }
  MotionOptions o;
  o.levels = 2;
  MotionEstimator est(g, o);
  const std::vector<DisplacementField> together = est.estimate_to_reference(frames, reference);
  const MotionReport all = est.report();
  REQUIRE(together.size() == frames.size());
  std::int64_t cycles = 0;
  double largest = 0;
  for (std::size_t k = 0; k < frames.size(); ++k) {
    const DisplacementField alone = est.estimate(frames[k], reference);
    cycles += est.report().solver_cycles;
    largest = std::max(largest, est.report().solver_residual);
    CHECK(together[k].u.values() == alone.u.values());
    CHECK(together[k].v.values() == alone.v.values());
    CHECK(together[k].w.values() == alone.w.values());
    CHECK(mean_magnitude(alone) > 0.01); // a real estimate, not zeros
  }
  CHECK(all.solver_cycles == cycles);
  CHECK(all.solver_residual == largest);
  REQUIRE(est.pair_reports().size() == frames.size());
  CHECK(est.pair_reports()[0].solver_cycles + est.pair_reports()[1].solver_cycles == cycles);
  CHECK(std::max(est.pair_reports()[0].solver_residual, est.pair_reports()[1].solver_residual) ==
        largest);
  CHECK_THROWS_WITH(est.estimate_to_reference({}, reference), Catch::Contains("frames.size() = 0"));
  CHECK_THROWS_WITH(est.estimate_to_reference(frames, textured_volume(Grid(20, 18, 15), 1)),
                    Catch::Contains("reference.grid() = 20x18x15"));
}

TEST_CASE("motion: bad input names the argument and the value", "[motion][bad-input]") {
  const Grid g(24, 24, 24);
  const auto bad = [&](auto mutate, const char *text) {
    MotionOptions o;
    mutate(o);
    CHECK_THROWS_WITH(MotionEstimator(g, o), Catch::Contains(text));
  };
  bad([](MotionOptions &o) { o.alpha = -1; }, "options.alpha = -1");
  bad([](MotionOptions &o) { o.gamma = std::nan(""); }, "options.gamma = nan");
  bad([](MotionOptions &o) { o.rho = 3.0; }, "options.rho = 3");
  bad([](MotionOptions &o) { o.sigma = -0.5; }, "options.sigma = -0.5");
  bad([](MotionOptions &o) { o.omega = 2.0; }, "options.omega = 2");
  bad([](MotionOptions &o) { o.warps = 0; }, "options.warps = 0");
  bad([](MotionOptions &o) { o.levels = 4; }, "options.levels = 4"); // 24 -> 12 -> 6 -> 3 < 4
  CHECK_THROWS_AS(MotionEstimator(g, MotionOptions{.levels = 4}), InvalidArgument);
  MotionEstimator est(g, MotionOptions{});
  const RealVolume frame = textured_volume(g, 1);
  CHECK_THROWS_WITH(est.estimate(frame, textured_volume(Grid(24, 24, 25), 1)),
                    Catch::Contains("moving.grid() = 24x24x25"));
  RealVolume broken = frame;
  broken[77] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(est.estimate(broken, frame), Catch::Contains("fixed[77] = inf"));
  const std::vector<RealVolume> one(1, frame);
  CHECK_THROWS_WITH(est.estimate_sequence(one), Catch::Contains("frames.size() = 1"));
  MotionOptions cuda64;
  cuda64.backend = Backend::Cuda;
  cuda64.precision = Precision::Float64;
  CHECK_THROWS_AS(MotionEstimator(g, cuda64), Unsupported);
}
