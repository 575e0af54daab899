#pragma once
// Where an image lies in the scanner: what ISMRMRD acquisitions carry (read_dir, phase_dir,
// slice_dir, position) and what the NIfTI writer turns into the qform and sform.
#include <array>

namespace mri {

// The scanner (patient) frame of ISMRMRD and DICOM: LPS (x to the patient's left, y posterior,
// z head), millimetres. The image's x, y, z axes point along read_dir, phase_dir and slice_dir
// (unit vectors); `position` is the centre of the slice or volume, i.e. the voxel whose
// coordinate is 0 in our convention (index n/2 per axis, docs/conventions.md). So voxel
// (i, j, k) of an nx x ny x nz image with voxel sizes (dx, dy, dz) lies at
//   position + (i - nx/2) dx read_dir + (j - ny/2) dy phase_dir + (k - nz/2) dz slice_dir.
struct ScannerGeometry {
  std::array<double, 3> read_dir{1, 0, 0};
  std::array<double, 3> phase_dir{0, 1, 0};
  std::array<double, 3> slice_dir{0, 0, 1};
  std::array<double, 3> position{0, 0, 0};
  friend bool operator==(const ScannerGeometry &, const ScannerGeometry &) = default;
};

} // namespace mri
