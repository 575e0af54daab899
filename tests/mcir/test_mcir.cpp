// reconstruct_motion_corrected (mri/mcir.hpp): zero motion is the plain SENSE reconstruction of all
// the data; known motion put in the model beats the motion-averaged reconstruction; bad input.
#include "catch.hpp"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "mcir/mcir_test_support.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/error.hpp"
#include "mri/linear_operator.hpp"
#include "mri/mcir.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri/sense.hpp"
#include "mri/trajectory.hpp"
#include "recon_test_options.hpp"
#include "test_support.hpp"

using namespace mri;
using namespace mri::test::mcir;

namespace {

// ||s a - b|| / ||b|| at the best complex scale s (the reconstructions' scale is the data's).
double best_scale_error(const Image &a, const Image &b) {
  cdouble ab = 0;
  double aa = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += std::conj(cdouble(a[i])) * cdouble(b[i]);
    aa += std::norm(cdouble(a[i]));
  }
  const cdouble s = ab / aa;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(s * cdouble(a[i]) - cdouble(b[i]));
    den += std::norm(cdouble(b[i]));
  }
  return std::sqrt(num / den);
}

} // namespace

TEST_CASE("MCIR with zero fields is the plain SENSE reconstruction of all the data", "[mcir]") {
  // Q and F^H D are linear in the samples (the exact sums, and the NUFFT's gridding and FFT alike):
  // sum_s Q_s = Q of all samples and sum_s b_s = b, so the two normal equations are one; they
  // differ by float rounding (each state's Q and F^H D in float32, summed in another order),
  // which 15 CG iterations carry into the image at ~1e-6 (measured: 4e-7 in 2D, 1.4e-6 in 3D). 2D: exact sums, maps
  // estimated from all the data; 3D: the NUFFT, maps estimated and the coils compressed to 2 from all the data.
  struct Case {
    Grid grid;
    Method method;
    int virtual_coils, calibration;
  };
  for (const Case &c : {Case{Grid(24, 20), Method::Exact, 0, 12}, Case{Grid(12, 10, 8), Method::Nufft, 2, 0}}) {
    const Grid &g = c.grid;
    const std::uint64_t seed = fresh_seed();
    INFO("grid " << g.nx() << "x" << g.ny() << "x" << g.nz() << ", seed " << seed);
    const std::vector<KSpaceData> states = random_states(g, seed);
    ReconOptions o = test::tikhonov_fixed_iterations(15, c.method);
    o.coils.estimation.calibration = c.calibration; // maps estimated once from all the data, by both
    o.coils.virtual_coils = c.virtual_coils;
    const ReconResult plain = reconstruct(concatenated(states), g, o);
    // One field zero, one absent, one zero with Jacobian weighting (the identity too).
    const std::vector<DisplacementField> fields = {DisplacementField(g), DisplacementField{}, DisplacementField(g)};
    const MotionCorrectedResult mc = reconstruct_motion_corrected(states, g, fields, o, {{true}});
    CHECK(mc.motion.states == 3);
    CHECK(mc.motion.reference_states == 3);
    CHECK(mc.report.iterations == 15);
    CHECK(mc.report.maps == plain.report.maps);
    CHECK(mc.report.coils == plain.report.coils);
    CHECK(test::relative_error(mc.image, plain.image) < 2e-5);
  }
}

TEST_CASE("MCIR with the true fields beats the motion-averaged reconstruction", "[mcir]") {
  // A 2D Shepp-Logan moved per state by a smooth field of up to ~3 voxels, each state sampled by
  // its own golden-angle spokes through the exact SENSE operator (4 coils) plus noise; the truth is
  // the reference state. Reconstructing all spokes without a motion model blurs the edges; MCIR
  // with the true fields puts every spoke where its state had the object.
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const BreathingPhantom p = breathing_phantom(seed);
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.method = Method::Nufft;
  o.solver.iterations = 20;
  o.solver.lambda = 1e-2;
  o.solver.regularizer = Regularizer::Tikhonov;
  o.coils.sensitivities = p.maps;
  const ReconResult averaged = reconstruct(concatenated(p.states), p.grid, o);
  const ReconResult reference_only = reconstruct(p.states[0], p.grid, o);
  const MotionCorrectedResult mc = reconstruct_motion_corrected(p.states, p.grid, p.fields, o);
  const double e_avg = best_scale_error(averaged.image, p.truth),
               e_ref = best_scale_error(reference_only.image, p.truth), e_mc = best_scale_error(mc.image, p.truth);
  INFO("relative error: averaged " << e_avg << ", reference state alone " << e_ref << ", mcir " << e_mc);
  CHECK(mc.motion.reference_states == 1);
  CHECK(mc.report.residuals.size() == static_cast<std::size_t>(mc.report.iterations) + 1);
  // Measured over fresh seeds: averaged ~0.51, reference alone ~0.23, MCIR ~0.13 (11 and 5 dB).
  CHECK(e_mc < 0.4 * e_avg);
  CHECK(e_mc < 0.75 * e_ref);
}

TEST_CASE("MCIR refuses fields of the wrong count or grid, NaN in a field, mismatched states", "[mcir][bad-input]") {
  const Grid g(12, 10);
  const Trajectory t = test::random_trajectory(g, 50, 3);
  const KSpaceData one(t, test::random_complex(t.size(), 4));
  const std::vector<KSpaceData> states = {one, one};
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.solver.iterations = 2;
  CHECK_THROWS_WITH(reconstruct_motion_corrected(states, g, {DisplacementField(g)}, o),
                    test::contains("fields.size()"));
  CHECK_THROWS_WITH(reconstruct_motion_corrected(states, g, {DisplacementField(g), DisplacementField(Grid(12, 11))}, o),
                    test::contains("fields[1].grid()"));
  DisplacementField nan_field(g);
  nan_field.u[7] = NAN;
  CHECK_THROWS_WITH(reconstruct_motion_corrected(states, g, {DisplacementField{}, nan_field}, o),
                    test::contains("fields[1].u[7]"));
  const KSpaceData two_coils(t, test::random_complex(2 * t.size(), 5), {}, 2);
  CHECK_THROWS_WITH(reconstruct_motion_corrected({one, two_coils}, g, {DisplacementField{}, DisplacementField{}}, o),
                    test::contains("states[1].coils()"));
  CHECK_THROWS_WITH(reconstruct_motion_corrected({}, g, {}, o), test::contains("states.size()"));
  ReconOptions devices = o;
  devices.gpu.devices = {0};
  CHECK_THROWS_AS(reconstruct_motion_corrected(states, g, {DisplacementField{}, DisplacementField{}}, devices),
                  Unsupported);
  if (!cuda_available()) {
    ReconOptions cuda = o;
    cuda.backend = Backend::Cuda;
    CHECK_THROWS_AS(reconstruct_motion_corrected(states, g, {DisplacementField{}, DisplacementField{}}, cuda),
                    Unsupported);
  }
}
