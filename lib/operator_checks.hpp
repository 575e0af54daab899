#pragma once
// The argument checks every operator on (image, samples) shares: InvalidArgument naming the
// argument and the value.
#include <cstddef>
#include <string>

#include "mri/error.hpp"
#include "mri/image.hpp"

namespace mri::detail {

inline void check_image_grid(const Image &image, const Grid &grid) {
  if (image.grid() != grid)
    invalid_argument("image.grid().voxels()", image.grid().voxels(), "image grid differs from the operator's grid");
}

inline void check_voxel_count(std::size_t size, const Grid &grid) {
  if (size != static_cast<std::size_t>(grid.voxels()))
    invalid_argument("image.size()", size, "must equal the grid's voxels " + std::to_string(grid.voxels()));
}

// The device-pointer entry points run on the CUDA backend only.
inline void require_device_plan(bool has_plan, const char *who) {
  if (!has_plan) throw Unsupported(std::string(who) + ": device pointers need an operator made with backend = cuda");
}

inline void check_sample_count(std::size_t size, std::size_t m) {
  if (size != m) invalid_argument("samples.size()", size, "must equal trajectory.size() = " + std::to_string(m));
}

} // namespace mri::detail
