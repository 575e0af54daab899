#pragma once
// Receive arrays: coil sensitivity maps, their estimation from the data, coil compression and
// coil combination. SENSE (mri::reconstruct with multi-coil data) solves
//   (sum_c S_c^H F^H W F S_c + lambda R^H R) x = sum_c S_c^H F^H W D_c,
// S_c the complex sensitivity of coil c at each voxel of the image grid.
//
// Layout (BART's [x, y, z, coils]): voxel n of coil c at c * voxels + n; k-space as KSpaceData
// keeps it, sample m of coil c at c * M + m.
//
// Thread safety: CoilSensitivities and CoilCompression are immutable values after construction;
// the functions are pure (each makes its own NUFFT plans): any number of threads at once.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mri/image.hpp"
#include "mri/kspace.hpp"

namespace mri {

class CoilSensitivities {
public:
  CoilSensitivities() = default;
  // Throws InvalidArgument when coils < 1, maps.size() != coils * grid.voxels() or a value is
  // NaN/Inf (naming the coil and voxel).
  CoilSensitivities(const Grid &grid, int coils, std::vector<cfloat> maps);

  const Grid &grid() const { return grid_; }
  int coils() const { return coils_; }
  std::size_t voxels() const { return static_cast<std::size_t>(grid_.voxels()); }
  // Coil c's map, voxels() values in image order. Throws InvalidArgument for c outside [0, coils).
  std::span<const cfloat> map(int c) const;
  const std::vector<cfloat> &values() const { return maps_; }
  // sqrt(sum_c |S_c|^2) per voxel (real, in an Image).
  Image root_sum_of_squares() const;

private:
  Grid grid_;
  int coils_ = 0;
  std::vector<cfloat> maps_;
};

// How the maps are estimated from the data.
enum class MapEstimate {
  // BART's `caldir`, for non-Cartesian samples: the samples with |k_a| < calibration / 2 on every
  // axis, tapered by a Hann window in |k| and density-compensated (the data's weights, or
  // Pipe-Menon's on those samples), give low-resolution coil images by one adjoint NUFFT each;
  // each is divided by their root-sum-of-squares. Where that sum is below mask_threshold times its
  // maximum the maps are set to zero (no division by ~0, and SENSE leaves those voxels to the
  // regulariser).
  Direct,
  // ESPIRiT (BART's `ecalib`, one set of maps): the calibration region's Cartesian k-space
  // (gridded from the samples there), the signal subspace of its calibration matrix of
  // espirit_kernel^d windows (singular values >= espirit_threshold x the largest), and per voxel
  // the top eigenvector of the resulting image-space operator; zero where its eigenvalue is below
  // espirit_crop. Unit norm over the coils where kept.
  Espirit
};
const char *to_string(MapEstimate);

struct SensitivityOptions {
  MapEstimate method = MapEstimate::Direct;
  int calibration = 0;           // width of the central region, cycles/FOV, in [4, min extent];
                                 // 0: 24, or the grid's smallest extent where that is smaller
  double mask_threshold = 0.02;  // Direct: in [0, 1)
  int espirit_kernel = 0;        // ESPIRiT: window width, in [2, calibration / 2]; 0: 6 in 2D, 4 in
                                 // 3D (in 3D kernel 4 is several times faster than 6, with maps
                                 // as close to the true ones: docs/sense.md)
  double espirit_threshold = 0.02; // ESPIRiT: in (0, 1)
  double espirit_crop = 0.8;     // ESPIRiT: in [0, 1)
};

// Throws InvalidArgument for bad options, a grid/trajectory mismatch, or fewer than 8 samples in
// the calibration region (naming how many there are).
CoilSensitivities estimate_sensitivities(const KSpaceData &data, const Grid &grid,
                                         const SensitivityOptions &options = {});

// Coil compression (BART's `cc -S`): the coil dimension's principal components. With A the
// M x C matrix of samples, A^H A = V diag(s^2) V^H; the first V columns of V (largest s) map the
// C coils to V virtual coils, y_v = sum_c V_cv y_c, and maps alike, S'_v = sum_c V_cv S_c, so the
// SENSE model of the virtual coils is the acquired one projected.
class CoilCompression {
public:
  // Throws InvalidArgument when virtual_coils is outside [1, data.coils()].
  CoilCompression(const KSpaceData &data, int virtual_coils);

  int coils() const { return coils_; }
  int virtual_coils() const { return virtual_coils_; }
  // The fraction of the data's energy (sum of the kept s^2 over all) the virtual coils keep.
  double energy_kept() const { return energy_kept_; }
  // C x V, column-major (coil c of virtual coil v at v * C + c).
  const std::vector<cfloat> &matrix() const { return matrix_; }

  // Throws InvalidArgument when the coil count differs from coils().
  KSpaceData apply(const KSpaceData &data) const;
  CoilSensitivities apply(const CoilSensitivities &maps) const;

private:
  void combine(std::span<const cfloat> in, std::size_t n, std::vector<cfloat> &out) const;
  int coils_ = 0;
  int virtual_coils_ = 0;
  double energy_kept_ = 1;
  std::vector<cfloat> matrix_;
};

// sqrt(sum_c |I_c|^2) per voxel of per-coil images (the coil combination of an adjoint or gridding
// baseline). Throws InvalidArgument for no images or images on different grids.
Image root_sum_of_squares(std::span<const Image> coil_images);

} // namespace mri
