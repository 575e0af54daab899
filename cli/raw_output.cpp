#include "raw_output.hpp"

#include <cmath>

namespace mri::cli {

void add_raw_output_options(CLI::App &cmd, RawOutput &out) {
  cmd.add_option("--voxel", out.voxel_mm, "ISMRMRD output: voxel size in mm (FOV = matrix x voxel)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  add_enum(cmd, "--traj-units", out.units, {{"cycles", TrajUnits::CyclesPerFov}, {"normalized", TrajUnits::Normalized}},
           "ISMRMRD output: trajectory stored in cycles/FOV or normalised to [-0.5, 0.5]");
  cmd.add_option("--read-dir", out.read_dir, "ISMRMRD output: the image x axis in the patient frame (LPS unit vector)")
      ->capture_default_str();
  cmd.add_option("--phase-dir", out.phase_dir, "ISMRMRD output: the image y axis (LPS unit vector, orthogonal to --read-dir)")
      ->capture_default_str();
  cmd.add_option("--position", out.position, "ISMRMRD output: centre of the (first) slice or volume, LPS mm")
      ->capture_default_str();
}

bool is_h5(const std::string &path) { return path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0; }

std::string ismrmrd_trajectory_type(const TrajectorySpec &spec) {
  if (spec.name == "radial") return spec.golden ? "goldenangle" : "radial";
  if (spec.name == "spiral") return "spiral";
  return "other"; // stored with its trajectory, whatever its shape
}

ScannerGeometry slice_geometry(const RawOutput &out, int slice) {
  ScannerGeometry g;
  g.read_dir = parse_vector3(out.read_dir, "--read-dir");
  g.phase_dir = parse_vector3(out.phase_dir, "--phase-dir");
  const auto &r = g.read_dir, &p = g.phase_dir;
  const double rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2], pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2];
  const double rp = r[0] * p[0] + r[1] * p[1] + r[2] * p[2];
  if (std::abs(rr - 1) > 1e-3 || std::abs(pp - 1) > 1e-3 || std::abs(rp) > 1e-3)
    throw UsageError("--read-dir = " + out.read_dir + ", --phase-dir = " + out.phase_dir +
                     ": two orthogonal unit vectors expected");
  g.slice_dir = {r[1] * p[2] - r[2] * p[1], r[2] * p[0] - r[0] * p[2], r[0] * p[1] - r[1] * p[0]};
  g.position = parse_vector3(out.position, "--position");
  for (int a = 0; a < 3; ++a) g.position[a] += slice * out.slice_spacing_mm * g.slice_dir[a];
  return g;
}

void write_raw_h5(const RawOutput &out, const Grid &grid, const GeneratedTrajectory &g,
                  const std::vector<KSpaceData> &slices) {
  IsmrmrdWriteInput in;
  for (int ax = 0; ax < 3; ++ax) {
    in.header.encoded_matrix[ax] = in.header.recon_matrix[ax] = static_cast<int>(grid.extent(ax));
    in.header.encoded_fov_mm[ax] = in.header.recon_fov_mm[ax] = static_cast<double>(grid.extent(ax)) * out.voxel_mm;
  }
  in.header.trajectory = out.trajectory;
  in.header.coils = slices.at(0).coils();
  for (std::size_t s = 0; s < slices.size(); ++s)
    in.slices.push_back({&slices[s], slice_geometry(out, static_cast<int>(s))});
  in.readouts = static_cast<int>(static_cast<std::int64_t>(slices[0].samples_per_coil()) / g.dims[1]);
  in.units = out.units;
  in.acquisition_time_stamps = out.acquisition_time_stamps;
  in.physiology_time_stamps = out.physiology_time_stamps;
  write_ismrmrd(out.path, in);
}

} // namespace mri::cli
