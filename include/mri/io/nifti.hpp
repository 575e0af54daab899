#pragma once
// NIfTI-1 images (.nii, .nii.gz) through libnifti (nifti2_io): what neuro- and MR-imaging
// viewers and pipelines read. A series of images on one grid (slices, repetitions of a file)
// becomes a 4th dimension.
//
// Orientation: voxel (i, j, k) lies at ((i - nx/2) dx, (j - ny/2) dy, (k - nz/2) dz) mm, the
// scanner frame with our voxel coordinates {-n/2 .. n/2-1} (qform and sform codes "scanner
// anatomical", identity rotation): the acquisition's slice orientation is not applied yet.
//
// Thread safety: the first call sets libnifti's debug level to 0 (process-wide: its messages on
// stderr become our exceptions). write_nifti writes a temporary file renamed at the end (different paths may be
// written at once; two writers of one path: the last rename wins); read_nifti only reads.
#include <array>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "mri/image.hpp"

namespace mri {

enum class NiftiValues {
  Magnitude, // float32 |x|
  Complex    // complex64 (NIfTI's DT_COMPLEX64: interleaved float re, im, as std::complex<float>)
};

// Writes images (all on one grid; more than one: dimension 4) with voxel sizes in mm (each > 0).
// The file type follows the extension: .nii or .nii.gz. Throws InvalidArgument for no images,
// differing grids, a bad voxel size or another extension; IoError when writing fails.
void write_nifti(const std::filesystem::path &path, const std::vector<Image> &images,
                 const std::array<double, 3> &voxel_mm, NiftiValues values = NiftiValues::Magnitude);

// A NIfTI file's float32 or complex64 content (magnitude files read as real complex values).
struct NiftiVolume {
  std::array<std::int64_t, 4> dims{1, 1, 1, 1}; // x, y, z, series
  std::array<double, 3> voxel_mm{1, 1, 1};
  NiftiValues values = NiftiValues::Magnitude;
  std::vector<cfloat> data; // x fastest, then y, z, series
};

// Throws IoError for a missing or unreadable file, a datatype other than float32/complex64, dims
// whose data the file cannot hold (checked before anything is allocated),
// or more than 4 dimensions.
NiftiVolume read_nifti(const std::filesystem::path &path);

} // namespace mri
