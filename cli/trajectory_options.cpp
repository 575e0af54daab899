// Every generator of mri::traj behind one --traj NAME option.
#include "trajectory_options.hpp"

#include <algorithm>

namespace mri::cli {

const std::vector<std::string> kGenerators{"cartesian", "radial", "spiral", "propeller", "stack-of-stars",
                                           "koosh", "random"};

void add_trajectory_options(CLI::App &app, TrajectorySpec &s, const std::string &name_help) {
  app.add_option("--traj", s.name, name_help)->capture_default_str();
  app.add_option("--matrix", s.matrix, "image matrix nx,ny[,nz] (voxels; 3 values: 3D)")->capture_default_str();
  app.add_option("--spokes", s.spokes, "radial, stack-of-stars, koosh: spokes (per partition)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--readout", s.readout, "radial, stack-of-stars, koosh, propeller: samples per readout")
      ->check(CLI::Range(1, 65535))->capture_default_str();
  app.add_option("--interleaves", s.interleaves, "spiral: interleaves")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  app.add_option("--samples", s.samples, "spiral: samples per interleave")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--undersampling", s.undersampling, "spiral: turn spacing in cycles/FOV (1 = Nyquist)")
      ->check(CLI::Range(0.01, 100.0))->capture_default_str();
  app.add_option("--blades", s.blades, "propeller: blades")->check(CLI::Range(1, 1 << 12))->capture_default_str();
  app.add_option("--lines", s.lines, "propeller: lines per blade")->check(CLI::Range(1, 1 << 12))->capture_default_str();
  app.add_flag("--golden", s.golden, "radial, stack-of-stars: golden-angle spoke order; koosh: golden-means order "
                                     "(Chan et al. 2009; any run of spokes nearly uniform); else uniform");
  app.add_option("--points", s.points, "random: number of points")->check(CLI::Range(1, 1 << 28))->capture_default_str();
  app.add_option("--traj-seed", s.seed, "random: seed")->capture_default_str();
}

bool is_generator(const std::string &name) {
  return std::find(kGenerators.begin(), kGenerators.end(), name) != kGenerators.end();
}

namespace {

// The dimensionality a generator makes (0: the matrix's).
int generator_dims(const std::string &name) {
  if (name == "koosh" || name == "stack-of-stars") return 3;
  if (name == "cartesian" || name == "random") return 0;
  return 2;
}

} // namespace

void check_generator(const TrajectorySpec &s, const Grid &g) {
  if (!is_generator(s.name)) {
    std::string names;
    for (const auto &n : kGenerators) names += (names.empty() ? "" : ", ") + n;
    throw UsageError("--traj = " + s.name + ": not a generator (" + names + ")");
  }
  const int dims = generator_dims(s.name);
  if (dims != 0 && g.dims() != dims)
    throw UsageError("--traj " + s.name + " is " + std::to_string(dims) + "-D but --matrix is " +
                     std::to_string(g.dims()) + "-D");
}

GeneratedTrajectory generate_trajectory(const TrajectorySpec &s, const Grid &g) {
  check_generator(s, g);
  const traj::SpokeOrder order = s.golden ? traj::SpokeOrder::GoldenAngle : traj::SpokeOrder::Uniform;
  const auto i64 = [](auto v) { return static_cast<std::int64_t>(v); };
  if (s.name == "cartesian") return {traj::cartesian(g), {3, g.nx(), g.ny() * g.nz()}};
  if (s.name == "random") return {traj::uniform_random(g, s.points, s.seed), {3, i64(s.points)}};
  if (s.name == "koosh") return {traj::koosh(g, s.spokes, s.readout, order), {3, s.readout, s.spokes}};
  if (s.name == "stack-of-stars")
    return {traj::stack_of_stars(g, s.spokes, s.readout, order), {3, s.readout, s.spokes * g.nz()}};
  if (s.name == "radial") return {traj::radial(g, s.spokes, s.readout, order), {3, s.readout, s.spokes}};
  if (s.name == "spiral") return {traj::spiral(g, s.interleaves, s.samples, s.undersampling), {3, s.samples, s.interleaves}};
  return {traj::propeller(g, s.blades, s.lines, s.readout), {3, s.readout, i64(s.lines) * s.blades}};
}

} // namespace mri::cli
