// The motion estimator's data terms (mri/motion.hpp, MotionDataTerm): the Charbonnier weights
// against a float64 reference, the robust estimate equal to the quadratic one when epsilon is
// huge, issue 42's targets (the contracting Shepp-Logan volume at the default settings; gamma
// 0.3 on a translation with the robust term), and bad options.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "../../lib/motion/cpu_stages.hpp"
#include "catch.hpp"
#include "motion_test_support.hpp"
#include "mri/error.hpp"
#include "mri/motion.hpp"

using namespace mri;
namespace dm = mri::detail::motion;

namespace {

using mri::test::motion::fresh_seed;

// N volumes of uniform random values in [lo, hi).
template <std::size_t N>
std::array<dm::Volume<double>, N> random_volumes(const Grid &g, double lo, double hi,
                                                 std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::array<dm::Volume<double>, N> out;
  for (auto &c : out) {
    c = dm::Volume<double>(g);
    for (double &x : c.v)
      x = u(rng);
  }
  return out;
}

template <std::size_t N>
std::array<dm::Volume<float>, N> to_float(const std::array<dm::Volume<double>, N> &in) {
  std::array<dm::Volume<float>, N> out;
  for (std::size_t c = 0; c < N; ++c) {
    out[c] = dm::Volume<float>(in[c].grid);
    std::transform(in[c].v.begin(), in[c].v.end(), out[c].v.begin(),
                   [](double x) { return float(x); });
  }
  return out;
}

// The Shepp-Logan volume scaled to a peak of 1, as `mri motion` scales its series (the options'
// alpha assumes intensities of order 1).
RealVolume scaled_phantom(const Grid &g) {
  RealVolume v = shepp_logan_volume(g);
  const float peak = *std::max_element(v.values().begin(), v.values().end());
  for (float &x : v.values())
    x /= peak;
  return v;
}

struct Pair {
  RealVolume fixed, moving;
  DisplacementField truth;
};

Pair make_pair(const RealVolume &volume, SyntheticMotion motion, double amplitude,
               std::uint64_t seed) {
  Pair p{volume, {}, synthetic_field(volume.grid(), motion, amplitude)};
  p.moving = apply_motion(volume, p.truth);
  add_noise(p.fixed, 0.01, seed);
  add_noise(p.moving, 0.01, seed + 1);
  return p;
}

MotionOptions charbonnier(double epsilon) {
  MotionOptions o;
  o.data_term = MotionDataTerm::Charbonnier;
  o.epsilon = epsilon;
  return o;
}

constexpr std::int64_t kBorder = 3; // content entering across a face is not estimable

} // namespace

TEST_CASE("motion: Charbonnier weights match a float64 evaluation of psi'(e)", "[motion]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const Grid g(9, 7, 8);
  // Random channels need not form a positive semidefinite tensor (real ones do): that also
  // exercises the clamp of e at zero.
  const auto data = random_volumes<dm::kChannels>(g, -0.2, 0.5, rng);
  const auto w0 = random_volumes<3>(g, -1.5, 1.5, rng), w = random_volumes<3>(g, -1.5, 1.5, rng);
  const double eps = 0.3;
  dm::Tensor<float> j = to_float(data);
  dm::charbonnier_reweight(to_float(data), to_float(w0), to_float(w), j, float(1 / (eps * eps)));
  double worst = 0;
  int clamped = 0;
  for (std::int64_t v = 0; v < g.voxels(); ++v) {
    const auto J = [&](int c) { return data[c].v[std::size_t(v)]; };
    const double d[3] = {w[0].v[v] - w0[0].v[v], w[1].v[v] - w0[1].v[v], w[2].v[v] - w0[2].v[v]};
    const double m[3][3] = {{J(dm::kXX), J(dm::kXY), J(dm::kXZ)},
                            {J(dm::kXY), J(dm::kYY), J(dm::kYZ)},
                            {J(dm::kXZ), J(dm::kYZ), J(dm::kZZ)}};
    const double b[3] = {J(dm::kXT), J(dm::kYT), J(dm::kZT)};
    double e = J(dm::kTT);
    for (int a = 0; a < 3; ++a) {
      e += 2 * b[a] * d[a];
      for (int c = 0; c < 3; ++c)
        e += d[a] * m[a][c] * d[c];
    }
    clamped += e < 0;
    const double weight = 1 / std::sqrt(1 + std::max(e, 0.0) / (eps * eps));
    for (int c = 0; c < dm::kTT; ++c)
      worst = std::max(worst, std::abs(j[c].v[v] - weight * J(c)));
    CHECK(j[dm::kTT].v[v] == float(J(dm::kTT))); // untouched: no solver reads it
  }
  INFO(clamped << " voxels with e < 0");
  CHECK(clamped > 0);
  // e: ~16 float products and sums of terms <= ~3 (rounding ~2e-7 each), through a weight whose
  // derivative in e is <= 1 / (2 eps^2) = 5.6, times channels <= 0.5: ~1e-5 at most; 1e-4 bound.
  CHECK(worst < 1e-4);
}

TEST_CASE("motion: the Charbonnier term with a huge epsilon is the quadratic one", "[motion]") {
  // psi'(e) = 1 / sqrt(1 + e / eps^2) = 1 - e / (2 eps^2) + ...: at eps = 1e6 and e <~ 1 the
  // weight is 1 - 5e-13, which rounds to 1 in float, so every weighted system is the quadratic
  // one and only rounding may differ (the robust path copies the tensor, nothing else).
  // Tolerance 1e-6 voxels: float rounding of fields of ~1.5 voxels, with room.
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid g(24, 24, 24);
  const Pair p = make_pair(textured_volume(g, seed), SyntheticMotion::Swirl, 1.5, seed + 7);
  // The multigrid with two solves per warp: the second starts from the first's field, which
  // already meets the tolerance, so it adds one residual evaluation and no cycle. SOR runs a fixed
  // number of iterations per solve, so it is compared at one solve per warp.
  for (const auto [solver, reweightings] : {std::pair{MotionSolver::Auto, 2},
                                            std::pair{MotionSolver::RedBlackSor, 1}}) {
    MotionOptions quadratic;
    quadratic.solver = solver;
    quadratic.gamma = 0.1;
    MotionOptions robust = charbonnier(1e6);
    robust.solver = solver, robust.gamma = 0.1, robust.reweightings = reweightings;
    MotionEstimator a(g, quadratic), b(g, robust);
    const DisplacementField wa = a.estimate(p.fixed, p.moving), wb = b.estimate(p.fixed, p.moving);
    const double difference = average_endpoint_error(wa, wb);
    INFO("solver " << int(solver) << ": mean |difference| " << difference << ", EPE "
                   << average_endpoint_error(wa, p.truth, kBorder));
    CHECK(difference <= 1e-6);
    CHECK(b.report().solver_cycles == a.report().solver_cycles);
  }
}

TEST_CASE("motion: a contracting Shepp-Logan volume, default settings, EPE <= 60% of zero flow",
          "[motion]") {
  // Issue 42's target, on the phantom scaled as `mri motion` scales its frames, amplitude 1.
  // Measured (docs/motion.md, "Piecewise-smooth anatomy"): 35% / 41% of the zero-flow EPE
  // (quadratic / Charbonnier) at 28^3, 38% / 43% at 32^3. The opposite motion
  // (expansion) is not held to the target: 93% quadratic, 73-92% Charbonnier at 32^3 (the docs
  // say why). 28^3: below the stages' threshold for threads, so seconds under a loaded CI.
  const std::uint64_t seed = fresh_seed();
  const Grid g(28, 28, 28);
  const Pair p = make_pair(scaled_phantom(g), SyntheticMotion::Compressive, 1.0, seed);
  const double zero = average_endpoint_error(DisplacementField(g), p.truth, kBorder);
  for (MotionDataTerm term : {MotionDataTerm::Quadratic, MotionDataTerm::Charbonnier}) {
    MotionOptions o;
    o.data_term = term;
    MotionEstimator est(g, o);
    const double epe = average_endpoint_error(est.estimate(p.fixed, p.moving), p.truth, kBorder);
    INFO("seed " << seed << ", data term " << int(term) << ": EPE " << epe << ", zero-flow "
                 << zero);
    CHECK(epe <= 0.6 * zero);
  }
}

TEST_CASE("motion: with the Charbonnier term, gamma 0.3 does not hurt a translation", "[motion]") {
  // Issue 42's volume-term target (EPE with gamma 0.3 at most 1.1x gamma 0's on divergence-free
  // motion), for the robust term at its default epsilon; the quadratic term's is
  // test_motion_multigrid.cpp's. Measured at 32^3 (docs/motion.md): 0.047 -> 0.036 voxels.
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid g(24, 24, 24);
  const Pair p = make_pair(textured_volume(g, seed), SyntheticMotion::Translation, 1.5, seed + 3);
  MotionOptions o = charbonnier(MotionOptions{}.epsilon);
  MotionEstimator plain(g, o);
  o.gamma = 0.3;
  MotionEstimator conserving(g, o);
  const double epe0 = average_endpoint_error(plain.estimate(p.fixed, p.moving), p.truth, kBorder),
               epe1 =
                   average_endpoint_error(conserving.estimate(p.fixed, p.moving), p.truth, kBorder);
  // The multigrid does not always meet its tolerance on the weighted systems at gamma 0.3
  // (5 of 9 runs left 1.5e-3 to 0.033 after 20 cycles; docs/motion.md): not asserted, the field
  // is.
  INFO("EPE gamma 0: " << epe0 << ", gamma 0.3: " << epe1 << ", residual "
                       << conserving.report().solver_residual);
  CHECK(epe1 <= 1.1 * epe0); // measured 0.65-0.81x in 9 runs
}

TEST_CASE("motion: bad data-term options name the option", "[motion][bad-input]") {
  const Grid g(24, 24, 24);
  const auto bad = [&](auto mutate, const char *text) {
    MotionOptions o = charbonnier(0.03);
    mutate(o);
    CHECK_THROWS_AS(MotionEstimator(g, o), InvalidArgument);
    CHECK_THROWS_WITH(MotionEstimator(g, o), Catch::Contains(text));
  };
  bad([](MotionOptions &o) { o.epsilon = 0; }, "options.epsilon = 0");
  bad([](MotionOptions &o) { o.epsilon = -0.5; }, "options.epsilon = -0.5");
  bad([](MotionOptions &o) { o.epsilon = std::nan(""); }, "options.epsilon = nan");
  bad([](MotionOptions &o) { o.epsilon = std::numeric_limits<double>::infinity(); },
      "options.epsilon = inf");
  bad([](MotionOptions &o) { o.reweightings = 0; }, "options.reweightings = 0");
  bad([](MotionOptions &o) { o.data_term = static_cast<MotionDataTerm>(9); },
      "options.data_term = 9");
}
