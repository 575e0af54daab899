#pragma once
// NIfTI-1 images (.nii, .nii.gz) through libnifti (nifti2_io): what neuro- and MR-imaging
// viewers and pipelines read. A series of images on one grid (slices, repetitions of a file)
// becomes a 4th dimension.
//
// Orientation (qform = sform, codes "scanner anatomical", NIfTI's RAS frame in mm): with a
// geometry per image (ISMRMRD's LPS frame, mri/io/geometry.hpp) voxel (i, j, k) maps to the
// scanner position of geometry.hpp's formula with x and y negated (LPS -> RAS). Images at one
// position are a series (dimension 4); 2D images at evenly spaced positions along slice_dir (a
// multi-slice acquisition) are stacked as z, sorted along slice_dir, dz = their spacing, with
// each position's images in series. Without geometry (BART inputs: the data do not say) the
// rotation is the identity and voxel (i, j, k) lies at ((i - nx/2) dx, (j - ny/2) dy, (k - nz/2) dz).
//
// Thread safety: the first call sets libnifti's debug level to 0 (process-wide: its messages on
// stderr become our exceptions). write_nifti writes a temporary file renamed at the end (different paths may be
// written at once; two writers of one path: the last rename wins); read_nifti only reads.
#include <array>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "mri/image.hpp"
#include "mri/io/geometry.hpp"
#include "mri/motion.hpp"

namespace mri {

// Rows of the 3 x 4 matrix that maps voxel (i, j, k, 1) to NIfTI's RAS frame in mm.
using NiftiAffine = std::array<std::array<double, 4>, 3>;

// Without geometry: identity rotation, voxel (i, j, k) at ((i - nx/2) dx, (j - ny/2) dy, (k - nz/2) dz).
NiftiAffine nifti_identity_affine(const Grid &grid, const std::array<double, 3> &voxel_mm);

enum class NiftiValues {
  Magnitude, // float32 |x|
  Complex    // complex64 (NIfTI's DT_COMPLEX64: interleaved float re, im, as std::complex<float>)
};

// Writes images (all on one grid) with voxel sizes in mm (each > 0), placed by `geometry` (empty,
// or one per image). The file type follows the extension: .nii or .nii.gz. Throws
// InvalidArgument for no images, differing grids, a bad voxel size, another extension, or a
// geometry that one affine cannot hold (directions not orthonormal or differing between images,
// positions not on one evenly spaced line along slice_dir, unequal series per position, 3D
// volumes at several positions); IoError when writing fails.
void write_nifti(const std::filesystem::path &path, const std::vector<Image> &images,
                 const std::array<double, 3> &voxel_mm, NiftiValues values = NiftiValues::Magnitude,
                 const std::vector<ScannerGeometry> &geometry = {});

// Throws the InvalidArgument write_nifti would throw for `geometry` on `images` images of `grid`:
// a check before the work that makes the images.
void check_nifti_geometry(const Grid &grid, std::size_t images, const std::vector<ScannerGeometry> &geometry);

// A NIfTI file's float32 or complex64 content (magnitude files read as real complex values).
struct NiftiVolume {
  std::array<std::int64_t, 4> dims{1, 1, 1, 1}; // x, y, z, series
  std::array<double, 3> voxel_mm{1, 1, 1};
  NiftiValues values = NiftiValues::Magnitude;
  // Voxel (i, j, k, 1) -> RAS mm: the rows of the qform (from its quaternion) and the sform.
  NiftiAffine qform{}, sform{};
  std::vector<cfloat> data; // x fastest, then y, z, series
};

// Displacement fields (motion estimation, one per frame pair, all on one grid) as NIfTI-1 with
// intent NIFTI_INTENT_DISPVECT (1006, displacement vector), float32, dims (x, y, z, fields, 3): the standard's
// vector layout (the vector along dimension 5, time along 4), so component c of field t at voxel
// (i, j, k) is value i + nx (j + ny (k + nz (t + T c))). Units: Millimetres and Voxels give the
// components along the voxel axes i, j, k (the frames' x, y, z), in mm (voxels times voxel_mm) or
// voxels; RasMillimetres rotates them into the scanner's R, A, S axes in mm (the 3x3 part of
// `affine`, whose columns are the voxel steps in RAS mm: what world-space tools such as NiftyReg
// read). The intent_name says which ("disp mm ijk", "disp voxels ijk", "disp mm RAS"). `affine`
// (e.g. the frames' NiftiVolume::qform) becomes qform and sform. Throws as write_nifti.
enum class DisplacementUnits { Millimetres, Voxels, RasMillimetres };
void write_nifti_displacements(const std::filesystem::path &path, const std::vector<DisplacementField> &fields,
                               const std::array<double, 3> &voxel_mm, DisplacementUnits units,
                               const NiftiAffine &affine);

// Displacement fields as write_nifti_displacements writes them (`mri motion --out`, `mri recon
// --motion-fields`), back in voxels along the voxel axes i, j, k (DisplacementField's u, v, w): the
// intent_name's units undone ("disp voxels ijk": the stored values, bitwise what was written;
// "disp mm ijk": divided by the voxel sizes (pixdim); "disp mm RAS": the sform's 3x3 part inverted).
struct NiftiDisplacements {
  std::vector<DisplacementField> fields; // dims[3] fields on the grid (dims[0], dims[1], dims[2])
  DisplacementUnits units = DisplacementUnits::Voxels; // as the file stored them
  std::array<double, 3> voxel_mm{1, 1, 1};
  NiftiAffine affine{}; // the sform
};
// Non-finite values are returned as they are (the caller names them: reconstruct_motion_corrected
// refuses them). Throws IoError for a missing or unreadable file, a file that is not float32
// displacement vectors (intent code 1006, 5 dimensions with dim 5 = 3), an intent_name other than
// the three above, a singular RAS matrix, or dims the file cannot hold.
NiftiDisplacements read_nifti_displacements(const std::filesystem::path &path);

// Throws IoError for a missing or unreadable file, a datatype other than float32/complex64, dims
// whose data the file cannot hold (checked before anything is allocated),
// or more than 4 dimensions.
NiftiVolume read_nifti(const std::filesystem::path &path);

} // namespace mri
