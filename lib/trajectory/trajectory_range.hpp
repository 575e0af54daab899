#pragma once
// The trajectory an operator computes with (see Trajectory::check_range): the caller's own when
// every sample lies in [-n/2, n/2), else its wrapped copy, kept in `storage` (no copy of millions
// of samples when none is outside).
#include <optional>

#include "mri/trajectory.hpp"

namespace mri::detail {

inline const Trajectory &inside_grid(const Trajectory &t, const Grid &grid, std::optional<Trajectory> &storage) {
  if (t.check_range(grid) == 0) return t;
  storage = t.wrapped(grid);
  return *storage;
}

} // namespace mri::detail
