#pragma once
// The multigrid's host-side decisions (MotionSolver::Multigrid), written once for both backends:
// the CPU's Multigrid<T> (lib/motion/multigrid.cpp) and the device's DeviceMultigrid
// (cuda/motion/motion_multigrid.cu) call the same function on the same residuals, so their fields
// stay equal where their residuals do (docs/motion.md, "Odd extents and the safeguards").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mri/grid.hpp"

namespace mri::detail::motion {

struct MultigridResult {
  double residual = 0;           // ||b - A w|| / ||b|| after the last cycle
  int cycles = 0;                // V-cycles (krylov: CG iterations) on the finest grid; the full
                                 // multigrid pass counts as one
  std::int64_t fine_passes = 0;  // colour passes and residual evaluations on the finest grid
  bool switched = false;   // the V-cycles stalled or diverged: conjugate gradients finished
  bool non_finite = false; // a residual was not finite: w is the last iterate with a finite one
};

// Whether a grid coarsens once more: every extent >= 4, or, for a 2D grid (one slice, nz = 1),
// nx and ny >= 4 (its z stays one: ceil(1 / 2) = 1).
inline bool coarsens(const Grid &g) {
  return std::min(g.nx(), g.ny()) >= 4 && (g.nz() == 1 || g.nz() >= 4);
}

// The multigrid's grids: `fine`, then extents halved rounding up while the grid coarsens.
inline std::vector<Grid> multigrid_grids(const Grid &fine) {
  std::vector<Grid> grids{fine};
  while (coarsens(grids.back())) {
    const Grid &g = grids.back();
    grids.emplace_back((g.nx() + 1) / 2, (g.ny() + 1) / 2, (g.nz() + 1) / 2);
  }
  return grids;
}

// A V-cycle must lower the residual below this fraction of the previous one, or the solve
// switches to the preconditioned conjugate gradients (the V-cycle's rate is ~0.1 per cycle
// without the volume term and ~0.5 with gamma = 0.3: docs/motion.md).
inline constexpr double kStallRatio = 0.9;

// The safeguards after a V-cycle took the relative residual from `previous` to `next`
// (result.cycles already counts it). Returns true when the V-cycles go on (result.residual =
// next). Otherwise the solve ends here: a residual that rose or is not finite goes back to the
// iterate before the cycle (restore_and_measure() restores it and returns its residual, the same
// `previous` bitwise); a non-finite one stops the solve, flagged; at max_cycles it stops; else a
// stall (next >= kStallRatio previous) hands the rest of the solve to the conjugate gradients
// (switch_to_krylov(), result.switched set).
template <class Restore, class Switch>
bool continue_v_cycles(MultigridResult &result, double previous, double next, double tolerance,
                       int max_cycles, Restore &&restore_and_measure, Switch &&switch_to_krylov) {
  if (next <= tolerance || (std::isfinite(next) && next < kStallRatio * previous)) {
    result.residual = next;
    return true;
  }
  result.residual = (!std::isfinite(next) || next > previous) ? restore_and_measure() : next;
  if (!std::isfinite(next)) {
    result.non_finite = true;
    return false;
  }
  if (result.cycles >= max_cycles)
    return false;
  result.switched = true;
  switch_to_krylov();
  return false;
}

} // namespace mri::detail::motion
