#pragma once
// The Cartesian image grid. Voxel index = x + nx*(y + ny*z) (x fastest, BART order);
// voxel coordinates run over {-n/2 .. n/2-1} per axis; nz == 1 means a 2D grid.
//
// Thread safety: Grid is an immutable value: any number of threads may use one Grid at once.
#include <array>
#include <cstdint>

namespace mri {

class Grid {
public:
  Grid() = default;
  // Throws InvalidArgument when any extent is zero or negative.
  Grid(std::int64_t nx, std::int64_t ny, std::int64_t nz = 1);

  std::int64_t nx() const { return n_[0]; }
  std::int64_t ny() const { return n_[1]; }
  std::int64_t nz() const { return n_[2]; }
  std::int64_t extent(int axis) const { return n_[static_cast<std::size_t>(axis)]; }
  const std::array<std::int64_t, 3> &extents() const { return n_; }
  int dims() const { return n_[2] == 1 ? 2 : 3; }
  std::int64_t voxels() const { return n_[0] * n_[1] * n_[2]; }

  // Coordinate of index i along an axis: i - n/2 (the centre voxel sits at index n/2, as
  // in BART's fftmod convention).
  std::int64_t coordinate(int axis, std::int64_t i) const {
    return i - n_[static_cast<std::size_t>(axis)] / 2;
  }
  std::int64_t index(std::int64_t x, std::int64_t y, std::int64_t z = 0) const {
    return x + n_[0] * (y + n_[1] * z);
  }

  // The Toeplitz embedding grid: every axis of extent > 1 doubled.
  Grid doubled() const;

  friend bool operator==(const Grid &, const Grid &) = default;

private:
  std::array<std::int64_t, 3> n_{1, 1, 1};
};

} // namespace mri
