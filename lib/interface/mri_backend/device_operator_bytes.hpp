#pragma once
// The device memory of the GPU operators a reconstruction holds, in one place for the code that
// allocates them (cuda/), the single reconstruction's estimate (cuda/recon/
// device_memory_estimate.cu) and the joint solves' estimate (lib/dynamic/joint_device_memory.cpp),
// which checks the free memory before anything is allocated. Host code: the CPU tests check it;
// the GPU reliability tests compare the estimates with the device's real peak.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "mri/grid.hpp"
#include "mri/trajectory.hpp"
#include "mri_backend/cuda_backend.hpp" // kMaxDeviceNufftWidth
#include "mri_backend/tuning.hpp"

namespace mri::detail {

inline constexpr std::size_t kDeviceComplexBytes = 8; // complex float

// Whether ToeplitzFft::Auto runs the pruned transform on the doubled grid `padded`: 3D of 2^21
// voxels or more (cuFFT's callbacks make its 256^3 kernels slower than the unfused passes they
// replace, while pruning moves a third less data; bench_recon_gpu RECON-3D, docs/history.md).
inline bool toeplitz_auto_pruned(const Grid &padded) {
  return padded.dims() == 3 && padded.voxels() >= (std::int64_t{1} << 21);
}

// The Toeplitz operator of `grid` (on its doubled grid): spectrum (4 B), FFT array, the padded
// input (Pruned: half, and the slab transform's full array) and the cuFFT work area, 7/2 complex
// values a doubled-grid voxel.
inline std::size_t toeplitz_operator_bytes(const Grid &grid) {
  const auto l = static_cast<std::size_t>(grid.doubled().voxels());
  return l * 4 + 7 * l * kDeviceComplexBytes / 2;
}

// Coils per pass of the coil-batched SENSE Toeplitz normal on `grid`: 0 where it is not used (3D
// grids whose Toeplitz transform is pruned: the pruned one-coil transforms move a third less data
// than a whole batched transform), else min(coils, what tuning's sense_batch_bytes of padded grids
// hold, at least 1).
inline int sense_coil_batch(const Grid &grid, int coils) {
  const Grid padded = grid.doubled();
  if (coils < 1 || toeplitz_auto_pruned(padded)) return 0;
  const auto per_coil = static_cast<std::size_t>(padded.voxels()) * kDeviceComplexBytes;
  return static_cast<int>(
      std::clamp<std::size_t>(tuning::Gpu::sense_batch_bytes / per_coil, 1, static_cast<std::size_t>(coils)));
}

// The coil-batched operator's padded grids and cuFFT work area at `batch` coils.
inline std::size_t sense_batch_bytes(const Grid &grid, int batch) {
  return 2 * static_cast<std::size_t>(batch) * static_cast<std::size_t>(grid.doubled().voxels()) * kDeviceComplexBytes;
}

// A device NUFFT plan of `image` and m samples (cuda/nufft/gridding_cuda.cu): the oversampled grid
// (about 2^d voxels per image voxel at oversampling 2; the FFT sizes round up, hence 2.2^d) with
// its cuFFT work area, per-cell offsets and the gather's item flags and list (5 B an item: an item
// is 8 points in 3D, one in 2D; 1 B a point counted, the 2D rest inside the margin), the image,
// and per sample: its resident records (key, permutation, record, cell: 28 B; sorted and staged
// values: 16 B; the kernel weights, d W floats, counted at the widest device kernel since the
// width follows the tolerance), the setup's transients beside them (unsorted keys, indices and
// records: 24 B; the radix sort's alternate keys and indices: 8 B) and the device points it is
// made from. Every buffer the plan holds is counted: a per-sample count that leaves some out
// underestimates a 3D plan. Gridding::ScatterFixed adds the fixed-point grid, two 8-byte integers
// an oversampled point.
inline std::size_t nufft_plan_bytes(const Grid &image, std::size_t m, bool fixed_point) {
  const auto g = static_cast<std::size_t>(static_cast<double>(image.voxels()) * std::pow(2.2, image.dims()));
  const std::size_t records = 28 + 16, transients = 24 + 8,
                    weights = sizeof(float) * static_cast<std::size_t>(image.dims() * kMaxDeviceNufftWidth);
  const std::size_t per_sample = records + weights + transients + sizeof(KPoint);
  return g * (8 + 8 + 4 + 1 + (fixed_point ? 16 : 0)) + m * per_sample +
         static_cast<std::size_t>(image.voxels()) * kDeviceComplexBytes;
}

} // namespace mri::detail
