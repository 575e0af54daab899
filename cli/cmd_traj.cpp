// `mri traj`: a generated trajectory as a BART .cfl/.hdr pair [3, readout, lines] in cycles/FOV,
// or into an ISMRMRD file (acquisitions with zero samples: a template a scanner converter or
// `mri phantom --traj` can fill).
#include "commands.hpp"
#include "raw_output.hpp"

namespace mri::cli {

Runner add_traj(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("traj", "generate a trajectory (cycles/FOV, BART layout [3, readout, lines])");
  auto spec = std::make_shared<TrajectorySpec>();
  auto out = std::make_shared<RawOutput>();
  add_trajectory_options(*cmd, *spec, "generator: cartesian | radial | spiral | propeller | stack-of-stars | koosh | random");
  cmd->add_option("out", out->path, "output: a BART base name (out.cfl, out.hdr) or FILE.h5 (ISMRMRD, zero samples)")
      ->required();
  add_raw_output_options(*cmd, *out);
  cmd->final_callback([spec] { check_generator(*spec, parse_matrix(spec->matrix, "--matrix")); });
  return [spec, out]() -> int {
    const Grid grid = parse_matrix(spec->matrix, "--matrix");
    const GeneratedTrajectory g = generate_trajectory(*spec, grid);
    if (is_h5(out->path)) {
      RawOutput o = *out;
      o.trajectory = ismrmrd_trajectory_type(*spec);
      write_raw_h5(o, grid, g, {KSpaceData(g.trajectory, std::vector<cfloat>(g.trajectory.size()))});
    } else {
      write_cfl_atomic(cfl_base(out->path), g.dims, bart::from_trajectory(g.trajectory).data);
    }
    return kOk;
  };
}

} // namespace mri::cli
