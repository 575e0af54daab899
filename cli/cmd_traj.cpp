// `mri traj`: a generated trajectory as a BART .cfl/.hdr pair [3, readout, lines], cycles/FOV.
#include "commands.hpp"
#include "trajectory_options.hpp"

namespace mri::cli {

Runner add_traj(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("traj", "generate a trajectory (cycles/FOV, BART layout [3, readout, lines])");
  auto spec = std::make_shared<TrajectorySpec>();
  auto out = std::make_shared<std::string>();
  add_trajectory_options(*cmd, *spec, "generator: cartesian | radial | spiral | propeller | stack-of-stars | koosh | random");
  cmd->add_option("out", *out, "output BART base name (writes out.cfl and out.hdr)")->required();
  return [spec, out]() -> int {
    const Grid grid = parse_matrix(spec->matrix, "--matrix");
    const GeneratedTrajectory g = generate_trajectory(*spec, grid);
    bart::CflArray a = bart::from_trajectory(g.trajectory);
    write_cfl_atomic(cfl_base(*out), g.dims, a.data);
    return kOk;
  };
}

} // namespace mri::cli
