// The motion-corrected chain (reconstruct_motion_chain, mri/mcir.hpp) and the displacement-field
// files it reuses (read_nifti_displacements, mri/io/nifti.hpp): fields written and read back; the
// coil step made once and its MCIR equal to MCIR with those maps given; given fields used as they
// are; alternating rounds on a small free-breathing koosh; bad input.
#include "catch.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mcir/mcir_test_support.hpp"
#include "mri/breathing.hpp"
#include "mri/error.hpp"
#include "mri/frames.hpp"
#include "mri/io/nifti.hpp"
#include "mri/mcir.hpp"
#include "mri/phantom.hpp"
#include "mri/trajectory.hpp"
#include "test_support.hpp"

using namespace mri;
using namespace mri::test::mcir;

namespace {

// PSNR of |image| against |truth| at the best real scale, over the whole volume
// (benchmarks/cs/psnr.py's definition).
double psnr(const Image &image, const Image &truth) {
  double xt = 0, xx = 0, peak = 0;
  for (std::size_t i = 0; i < image.size(); ++i) {
    const double x = std::abs(image[i]), t = std::abs(truth[i]);
    xt += x * t, xx += x * x, peak = std::max(peak, t);
  }
  const double s = xt / xx;
  double mse = 0;
  for (std::size_t i = 0; i < image.size(); ++i) {
    const double d = s * std::abs(image[i]) - std::abs(truth[i]);
    mse += d * d;
  }
  mse /= static_cast<double>(image.size());
  return 10 * std::log10(peak * peak / mse);
}

bool bitwise_equal(const RealVolume &a, const RealVolume &b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  return true;
}

// Random multi-coil states on a small 3D grid.
std::vector<KSpaceData> random_states(const Grid &g, int states, int coils, std::uint64_t seed) {
  std::vector<KSpaceData> out;
  for (int s = 0; s < states; ++s) {
    const Trajectory t = test::random_trajectory(g, 300, seed + s);
    out.emplace_back(t, test::random_complex(t.size() * coils, seed + 10 + s), std::vector<float>{}, coils);
  }
  return out;
}

} // namespace

TEST_CASE("Displacement fields written to NIfTI read back bitwise (voxels) and to rounding (mm, RAS)",
          "[mcir][io]") {
  const Grid g(13, 10, 9);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::vector<DisplacementField> fields = {smooth_field(g, 2.5, seed), smooth_field(g, 1.5, seed + 1)};
  const std::array<double, 3> voxel{1.5, 2.0, 2.5};
  // A rotation about z by 30 degrees times the voxel sizes, placed anywhere: the RAS case.
  NiftiAffine rotated{};
  const double c = std::cos(M_PI / 6), s = std::sin(M_PI / 6);
  rotated[0] = {c * voxel[0], -s * voxel[1], 0, 10};
  rotated[1] = {s * voxel[0], c * voxel[1], 0, -20};
  rotated[2] = {0, 0, voxel[2], 5};
  test::TempDir dir("mcir_fields");
  for (DisplacementUnits units : {DisplacementUnits::Voxels, DisplacementUnits::Millimetres, DisplacementUnits::RasMillimetres}) {
    const auto path = dir.path() / "w.nii.gz";
    write_nifti_displacements(path, fields, voxel, units, rotated);
    const NiftiDisplacements read = read_nifti_displacements(path);
    REQUIRE(read.fields.size() == 2);
    CHECK(read.units == units);
    for (std::size_t f = 0; f < 2; ++f) {
      REQUIRE(read.fields[f].grid().extents() == g.extents());
      const RealVolume *got[3] = {&read.fields[f].u, &read.fields[f].v, &read.fields[f].w};
      const RealVolume *want[3] = {&fields[f].u, &fields[f].v, &fields[f].w};
      for (int a = 0; a < 3; ++a) {
        if (units == DisplacementUnits::Voxels) {
          CHECK(bitwise_equal(*got[a], *want[a]));
          continue;
        }
        // Written as float32 products with the matrix, read back through its float64 inverse: a few
        // float32 roundings of values up to ~2.5 voxels.
        double worst = 0;
        for (std::size_t i = 0; i < got[a]->size(); ++i) worst = std::max(worst, double(std::abs((*got[a])[i] - (*want[a])[i])));
        CHECK(worst < 2e-6 * 4);
      }
    }
  }
  // Not displacement fields: an image.
  write_nifti(dir.path() / "image.nii", {Image(g)}, voxel);
  CHECK_THROWS_AS(read_nifti_displacements(dir.path() / "image.nii"), IoError);
  CHECK_THROWS_AS(read_nifti_displacements(dir.path() / "missing.nii"), IoError);
}

TEST_CASE("The chain makes the coil maps once; its MCIR equals MCIR with those maps given", "[mcir]") {
  // Both reconstructions take the chain's maps ("given" in their reports), estimated from all the
  // states' data and the coils compressed 3 -> 2 as each would have done alone: the frames equal
  // reconstruct_frames and the MCIR image reconstruct_motion_corrected, each estimating its own
  // maps, to float rounding (the same operations on the same data; measured bitwise), and the MCIR
  // image equals reconstruct_motion_corrected on the compressed states with the chain's maps.
  const Grid g(12, 10, 8);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const std::vector<KSpaceData> states = random_states(g, 3, 3, seed);
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.method = Method::Nufft;
  o.solver.iterations = 8;
  o.solver.tolerance = 0;
  o.solver.lambda = 1e-3;
  o.solver.regularizer = Regularizer::Tikhonov;
  o.coils.virtual_coils = 2;
  MotionChainOptions chain;
  chain.fields = {DisplacementField{}, smooth_field(g, 1.5, seed + 1), smooth_field(g, 2.0, seed + 2)};
  const MotionChainResult r = reconstruct_motion_chain(states, g, o, chain);
  REQUIRE(r.maps);
  REQUIRE(r.compression);
  CHECK(r.coils.maps.rfind("estimated", 0) == 0);
  CHECK(r.coils.coils == 2);
  CHECK(r.states.report.maps == "given");
  CHECK(r.mcir.report.maps == "given");
  REQUIRE(r.rounds.size() == 1);
  CHECK(r.rounds[0].fields_given);
  CHECK(r.rounds[0].motion.empty());

  std::vector<KSpaceData> compressed;
  for (const KSpaceData &d : states) compressed.push_back(r.compression->apply(d));
  ReconOptions given = o;
  given.coils.sensitivities = r.maps;
  given.coils.virtual_coils = 0;
  const MotionCorrectedResult explicit_maps = reconstruct_motion_corrected(compressed, g, chain.fields, given);
  CHECK(test::relative_error(r.mcir.image, explicit_maps.image) == 0.0);
  const MotionCorrectedResult own_maps = reconstruct_motion_corrected(states, g, chain.fields, o);
  CHECK(test::relative_error(r.mcir.image, own_maps.image) < 1e-6);
  const FramesResult frames = reconstruct_frames(states, g, o);
  for (std::size_t s = 0; s < states.size(); ++s) CHECK(test::relative_error(r.states.frames[s], frames.frames[s]) < 1e-6);
  CHECK(r.fields.size() == 3);
  CHECK(bitwise_equal(r.fields[2].v, chain.fields[2].v));
}

TEST_CASE("Alternating motion estimation and MCIR on a free-breathing koosh: round 2 is no worse", "[mcir]") {
  // A 24^3 Shepp-Logan breathing (4 voxels superior-inferior, 5% anterior-posterior stretch),
  // sampled exactly in k-space by a golden-means koosh of 1200 spokes x 48 with 4 coils at SNR 30,
  // sorted into 3 amplitude bins by the true trace. Round 1 registers the states' reconstructions;
  // round 2 registers W_s x refined on each state's data to the MCIR image x.
  const Grid g(24, 24, 24);
  const int readout = 48, spokes = 1200, coils = 4;
  BreathingOptions breathing;
  breathing.readout_seconds = 0.02; // 24 s: about 6 breaths
  const Phantom phantom = Phantom::shepp_logan_3d();
  const Trajectory t = traj::koosh(g, spokes, readout, traj::SpokeOrder::GoldenAngle);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const BreathingAcquisition acq = simulate_breathing(phantom, t, g, readout, coils, breathing, 30, seed);
  const std::vector<KSpaceData> states = split_frames(acq.data, acq.layout, bin_by_amplitude(acq.trace, 3));
  const Image truth = moved_phantom_image(phantom, g, breathing_motion(0.0, 3, breathing));
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.solver.iterations = 10;
  MotionChainOptions chain;
  chain.rounds = 2;
  const MotionChainResult r = reconstruct_motion_chain(states, g, o, chain);
  chain.rounds = 1;
  const MotionChainResult one = reconstruct_motion_chain(states, g, o, chain);
  REQUIRE(r.rounds.size() == 2);
  const double p1 = psnr(one.mcir.image, truth), p2 = psnr(r.mcir.image, truth);
  double best_state = 0;
  for (const Image &s : r.states.frames) best_state = std::max(best_state, psnr(s, truth));
  INFO("PSNR: best state " << best_state << ", round 1 " << p1 << ", round 2 " << p2 << "; field change round 2: mean "
                           << r.rounds[1].mean_field_change << ", max " << r.rounds[1].max_field_change);
  CHECK(r.rounds[1].motion.size() == 2);
  CHECK(r.rounds[1].mean_field_change > 0);
  CHECK(r.rounds[0].mcir_residual > 0);
  CHECK(r.rounds[0].data_residual > 0);
  CHECK(r.rounds[0].data_residual < 1);
  // Round 1 of the two-round run is the one-round run.
  CHECK(one.rounds[0].mean_field_change == r.rounds[0].mean_field_change);
  // The chain keeps the round with the lower data residual (round 1 unless round 2 fits better).
  CHECK(r.rounds[r.best_round - 1].data_residual <= r.rounds[0].data_residual);
  CHECK(p2 >= p1 - 0.05);
  WARN("PSNR: best state " << best_state << ", round 1 " << p1 << ", round 2 " << p2);
}

TEST_CASE("The chain refuses bad rounds, a lone state, bad fields", "[mcir][bad-input]") {
  const Grid g(12, 10, 8);
  const std::vector<KSpaceData> states = random_states(g, 2, 2, 7);
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.solver.iterations = 2;
  MotionChainOptions c;
  c.rounds = 0;
  CHECK_THROWS_WITH(reconstruct_motion_chain(states, g, o, c), test::contains("chain.rounds"));
  c.rounds = 2;
  c.refine_iterations = -1;
  CHECK_THROWS_WITH(reconstruct_motion_chain(states, g, o, c), test::contains("chain.refine_iterations"));
  CHECK_THROWS_WITH(reconstruct_motion_chain({states[0]}, g, o, {}), test::contains("states.size()"));
  MotionChainOptions wrong;
  wrong.fields = {DisplacementField{}};
  CHECK_THROWS_WITH(reconstruct_motion_chain(states, g, o, wrong), test::contains("fields.size()"));
  DisplacementField nan_field(g);
  nan_field.w[5] = NAN;
  wrong.fields = {DisplacementField{}, nan_field};
  CHECK_THROWS_WITH(reconstruct_motion_chain(states, g, o, wrong), test::contains("fields[1].w[5]"));
}
