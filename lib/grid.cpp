#include "mri/grid.hpp"

#include "mri/error.hpp"

namespace mri {

Grid::Grid(std::int64_t nx, std::int64_t ny, std::int64_t nz) : n_{nx, ny, nz} {
  const char *names[] = {"grid.nx", "grid.ny", "grid.nz"};
  for (int a = 0; a < 3; ++a)
    if (n_[a] <= 0) detail::invalid_argument(names[a], n_[a], "grid extents must be positive");
}

Grid Grid::doubled() const {
  auto twice = [](std::int64_t n) { return n > 1 ? 2 * n : n; };
  return Grid(twice(n_[0]), twice(n_[1]), twice(n_[2]));
}

} // namespace mri
