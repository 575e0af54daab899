#pragma once
// Raw data (a trajectory and its samples) into a new ISMRMRD file: what `mri phantom` and
// `mri traj` write for a `.h5` output. One acquisition per readout (BART's dim 1).
#include "trajectory_options.hpp"

namespace mri::cli {

struct RawOutput {
  std::string path;
  double voxel_mm = 1;                     // FOV = matrix x voxel_mm
  TrajUnits units = TrajUnits::CyclesPerFov;
  std::string trajectory = "other";        // the header's trajectory type
};

bool is_h5(const std::string &path);
// The header's trajectory type of a generator: radial / goldenangle / spiral, else other.
std::string ismrmrd_trajectory_type(const TrajectorySpec &spec);
void write_raw_h5(const RawOutput &out, const Grid &grid, const GeneratedTrajectory &g, const KSpaceData &data);

} // namespace mri::cli
