#pragma once
// An image on a Grid. Templated on the element so real-valued volumes (motion estimation)
// share the type; `Image` is the complex float image every operator works on.
//
// Thread safety: an image is a value like std::vector: const calls on one image from any number of
// threads at once; a call that modifies it (non-const values()/data(), assignment) needs exclusive
// access.
#include <complex>
#include <cstddef>
#include <vector>

#include "mri/grid.hpp"

namespace mri {

using cfloat = std::complex<float>;
using cdouble = std::complex<double>;

template <class T> class BasicImage {
public:
  using value_type = T;

  BasicImage() = default;
  explicit BasicImage(const Grid &grid) : grid_(grid), data_(static_cast<std::size_t>(grid.voxels())) {}
  // Throws InvalidArgument when data.size() != grid.voxels().
  BasicImage(const Grid &grid, std::vector<T> data);

  const Grid &grid() const { return grid_; }
  std::size_t size() const { return data_.size(); }
  T *data() { return data_.data(); }
  const T *data() const { return data_.data(); }
  std::vector<T> &values() { return data_; }
  const std::vector<T> &values() const { return data_; }
  T &operator[](std::size_t i) { return data_[i]; }
  const T &operator[](std::size_t i) const { return data_[i]; }
  // Index-based access: (ix, iy, iz) are array indices 0..n-1, not centred coordinates.
  T &at(std::int64_t ix, std::int64_t iy, std::int64_t iz = 0) {
    return data_[static_cast<std::size_t>(grid_.index(ix, iy, iz))];
  }
  const T &at(std::int64_t ix, std::int64_t iy, std::int64_t iz = 0) const {
    return data_[static_cast<std::size_t>(grid_.index(ix, iy, iz))];
  }

private:
  Grid grid_;
  std::vector<T> data_;
};

using Image = BasicImage<cfloat>;
using RealVolume = BasicImage<float>;

extern template class BasicImage<cfloat>;
extern template class BasicImage<float>;

} // namespace mri
