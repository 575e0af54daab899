#pragma once
// Plain C++ entry points of the CUDA motion backend for the benchmarks (no CUDA types).
#include "mri/grid.hpp"
#include "mri/motion.hpp"

namespace mri::cuda::detail::motion {

// Median-free mean time of one Jacobi sweep over `grid` with the given memory policy (CUDA
// events around `repeats` back-to-back sweeps, after one warm-up).
double time_solver_sweep_ms(const Grid &grid, MotionMemory memory, int repeats);
// The bytes one sweep must move at least (cf. motion_ops.cuh's sweep_bytes).
double solver_sweep_bytes(const Grid &grid);
// Whether multigrid plans made from now on cycle their coarse levels (<= 16^3) in one block
// (motion_multigrid.cu; the default) or by a launch per step, as before: the benchmark's A/B.
void set_coarse_block_cycles(bool on);

} // namespace mri::cuda::detail::motion
