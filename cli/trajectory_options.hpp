#pragma once
// The trajectory generators of mri/trajectory.hpp as options (`mri traj`, `mri phantom`), and
// their BART array shape [3, readout, lines].
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"

namespace mri::cli {

struct TrajectorySpec {
  std::string name = "radial"; // a generator (kGenerators), or for `mri phantom` a BART file
  std::string matrix = "128,128";
  int spokes = 201, readout = 256, interleaves = 16, samples = 2048, blades = 16, lines = 16;
  double undersampling = 1.0;
  bool golden = false;
  std::size_t points = 65536;
  std::uint64_t seed = 1;
};

extern const std::vector<std::string> kGenerators;

// --traj, --matrix, --spokes ... on `app`; `name_help` says what --traj takes.
void add_trajectory_options(CLI::App &app, TrajectorySpec &spec, const std::string &name_help);
bool is_generator(const std::string &name);

// Throws UsageError for an unknown generator or one that does not fit the matrix's dimensionality.
void check_generator(const TrajectorySpec &spec, const Grid &grid);

// The generated trajectory and its BART dims [3, readout, lines] (check_generator's errors first).
struct GeneratedTrajectory {
  Trajectory trajectory;
  std::vector<std::int64_t> dims;
};
GeneratedTrajectory generate_trajectory(const TrajectorySpec &spec, const Grid &grid);

} // namespace mri::cli
