#pragma once
// Where write_nifti puts each image and the affine of the file (mri/io/nifti.hpp, "Orientation").
#include <array>
#include <cstdint>
#include <vector>

#include "mri/image.hpp"
#include "mri/io/nifti.hpp"

namespace mri::detail {

struct NiftiPlacement {
  std::int64_t positions = 1;     // 2D slices stacked along z (1: every image at one position)
  std::int64_t series = 1;        // images per position (dimension 4)
  std::vector<std::size_t> order; // the images in file order: position fastest, then series
  std::array<double, 3> voxel_mm{1, 1, 1}; // dz = the slice spacing when slices are stacked
  NiftiAffine affine{};            // voxel (i, j, k, 1) -> RAS mm
};

// Throws InvalidArgument (naming geometry[i] and the field) for a geometry one affine cannot hold.
NiftiPlacement place_images(const Grid &grid, std::size_t images, const std::array<double, 3> &voxel_mm,
                            const std::vector<ScannerGeometry> &geometry);

} // namespace mri::detail
