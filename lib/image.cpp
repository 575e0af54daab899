#include "mri/image.hpp"

#include "mri/error.hpp"

namespace mri {

template <class T>
BasicImage<T>::BasicImage(const Grid &grid, std::vector<T> data)
    : grid_(grid), data_(std::move(data)) {
  if (static_cast<std::int64_t>(data_.size()) != grid_.voxels())
    detail::invalid_argument("data.size()", data_.size(),
                             "must equal the grid's voxel count " + std::to_string(grid_.voxels()));
}

template class BasicImage<cfloat>;
template class BasicImage<float>;

} // namespace mri
