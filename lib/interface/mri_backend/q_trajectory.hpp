#pragma once
// Q by the NUFFT (mri::nufft_q) as the backends and tests compute it (not part of the public API).
#include "mri/grid.hpp"
#include "mri/trajectory.hpp"

namespace mri::detail {

// nufft_q's trajectory: every k doubled (0 on axes of extent 1), for the adjoint on grid.doubled().
Trajectory q_trajectory(const Trajectory &trajectory, const Grid &grid);

} // namespace mri::detail
