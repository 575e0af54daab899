#pragma once
// Image outputs chosen by extension: .nii / .nii.gz (NIfTI), .png (magnitude), .h5 (ISMRMRD
// images); anything else (.cfl, .hdr, no extension, or one not recognised, as in recon_0.01) is the
// base name of a BART .cfl/.hdr pair. A batch of items is one file: NIfTI's 4th
// dimension, BART's dimension 10 (TIME_DIM), PNG panels side by side (3D: the three central
// slices of each volume).
#include <array>
#include <string>
#include <vector>

#include "common.hpp"

namespace mri::cli {

struct OutputOptions {
  bool complex = false;                   // NIfTI, ISMRMRD: complex instead of float32 magnitude
  std::array<double, 3> voxel_mm{1, 1, 1}; // NIfTI voxel size
  std::vector<ScannerGeometry> geometry;   // NIfTI placement, ISMRMRD image headers: one per image (empty: none)
};

// Before any work: throws UsageError for a path that names a folder, IoError when its folder does not exist.
void check_output_path(const std::string &path);
// Before the reconstruction: throws InvalidArgument when a NIfTI output cannot place `images`
// images of `grid` by options.geometry (slices not one evenly spaced stack ...).
void check_output_placement(const std::string &path, const Grid &grid, std::size_t images, const OutputOptions &options);

// Throws the SDK's errors of the writers. Every file is written to a temporary name and renamed.
void write_images(const std::string &path, const std::vector<Image> &images, const OutputOptions &options);

} // namespace mri::cli
