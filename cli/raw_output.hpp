#pragma once
// Raw data (a trajectory and its samples) into a new ISMRMRD file: what `mri phantom` and
// `mri traj` write for a `.h5` output. One acquisition per readout (BART's dim 1), with the
// slice's geometry (read/phase/slice directions, position) in every acquisition.
#include <array>
#include <cstdint>

#include "trajectory_options.hpp"

namespace mri::cli {

struct RawOutput {
  std::string path;
  double voxel_mm = 1;                     // FOV = matrix x voxel_mm
  TrajUnits units = TrajUnits::CyclesPerFov;
  std::string trajectory = "other";        // the header's trajectory type
  // Geometry, ISMRMRD's patient frame (LPS, mm): slice_dir = read_dir x phase_dir; slice s at
  // position + s * slice_spacing_mm * slice_dir.
  std::string read_dir = "1,0,0", phase_dir = "0,1,0", position = "0,0,0";
  double slice_spacing_mm = 5;
  // Optional, empty or one per readout: written into every slice's acquisitions
  // (IsmrmrdWriteInput's fields of the same names).
  std::vector<std::uint32_t> acquisition_time_stamps;
  std::vector<std::array<std::uint32_t, 3>> physiology_time_stamps;
};

// --voxel, --traj-units, --read-dir, --phase-dir, --position on `cmd`.
void add_raw_output_options(CLI::App &cmd, RawOutput &out);
bool is_h5(const std::string &path);
// The header's trajectory type of a generator: radial / goldenangle / spiral, else other.
std::string ismrmrd_trajectory_type(const TrajectorySpec &spec);
// Slice s's geometry. Throws UsageError unless the directions are orthonormal (to 1e-3).
ScannerGeometry slice_geometry(const RawOutput &out, int slice);
// One slice per entry of `slices` (slice counter = its index), each at slice_geometry.
void write_raw_h5(const RawOutput &out, const Grid &grid, const GeneratedTrajectory &g,
                  const std::vector<KSpaceData> &slices);

} // namespace mri::cli
