// reconstruct_motion_corrected with backend = cuda (each state's F^H D and Q on the device, the
// warps and CG on the host) against backend = cpu on one problem: 3 states of random k-space, 3
// coils with given maps, smooth fields. Both solve the same normal equations; the device's exact
// sums differ from the host's by float rounding (~1e-6 relative), which 10 CG iterations carry
// into the image at well below 1e-3 (the tolerance).
// Tags: [gpu][mcir].
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "catch.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/mcir.hpp"
#include "test_support.hpp"

using namespace mri;
using gpu_test::fresh_seed;

TEST_CASE("MCIR with the device's F^H D and Q equals the CPU's", "[gpu][mcir]") {
  const Grid g(32, 28);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const int coils = 3;
  std::vector<KSpaceData> states;
  std::vector<DisplacementField> fields;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> amp(-2.0, 2.0);
  for (int s = 0; s < 3; ++s) {
    const Trajectory t = test::random_trajectory(g, 500, seed + s);
    states.emplace_back(t, test::random_complex(t.size() * coils, seed + 10 + s), std::vector<float>{}, coils);
    DisplacementField f(g);
    const double a = s == 0 ? 0.0 : amp(rng), b = s == 0 ? 0.0 : amp(rng);
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        f.u.at(x, y) = static_cast<float>(a * std::sin(2 * M_PI * double(y) / double(g.ny())));
        f.v.at(x, y) = static_cast<float>(b * std::cos(2 * M_PI * double(x) / double(g.nx())));
      }
    fields.push_back(std::move(f));
  }
  ReconOptions o;
  o.method = Method::Exact;
  o.solver.iterations = 10;
  o.solver.tolerance = 0;
  o.solver.lambda = 1e-3;
  o.solver.regularizer = Regularizer::Tikhonov;
  o.coils.sensitivities = std::make_shared<const CoilSensitivities>(SimulatedCoils(2, coils).maps(g));
  o.backend = Backend::Cpu;
  const MotionCorrectedResult cpu = reconstruct_motion_corrected(states, g, fields, o);
  o.backend = Backend::Cuda;
  const MotionCorrectedResult gpu = reconstruct_motion_corrected(states, g, fields, o);
  CHECK(gpu.report.backend == Backend::Cuda);
  CHECK(gpu.report.iterations == 10);
  CHECK(test::relative_error(gpu.image, cpu.image) < 1e-3);
}
