#include "raw_output.hpp"

namespace mri::cli {

bool is_h5(const std::string &path) { return path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0; }

std::string ismrmrd_trajectory_type(const TrajectorySpec &spec) {
  if (spec.name == "radial") return spec.golden ? "goldenangle" : "radial";
  if (spec.name == "spiral") return "spiral";
  return "other"; // stored with its trajectory, whatever its shape
}

void write_raw_h5(const RawOutput &out, const Grid &grid, const GeneratedTrajectory &g, const KSpaceData &data) {
  IsmrmrdWriteInput in;
  for (int ax = 0; ax < 3; ++ax) {
    in.header.encoded_matrix[ax] = in.header.recon_matrix[ax] = static_cast<int>(grid.extent(ax));
    in.header.encoded_fov_mm[ax] = in.header.recon_fov_mm[ax] = static_cast<double>(grid.extent(ax)) * out.voxel_mm;
  }
  in.header.trajectory = out.trajectory;
  in.header.coils = data.coils();
  in.data = &data;
  in.readouts = static_cast<int>(static_cast<std::int64_t>(data.samples_per_coil()) / g.dims[1]);
  in.units = out.units;
  write_ismrmrd(out.path, in);
}

} // namespace mri::cli
