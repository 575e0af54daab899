// The device memory a reconstruction needs, per phase (toeplitz_cuda.hpp's
// reconstruct_device_bytes): checked against the free memory and ReconOptions::gpu.memory_limit before
// anything is allocated.
#include "exact/dirichlet_spectrum.cuh"
#include "exact/fhd_plan.cuh"
#include "nufft/gridding_cuda.hpp"
#include "toeplitz/normal_common.cuh"
#include "mri_backend/device_operator_bytes.hpp"
#include "sense/sense_toeplitz.hpp"

namespace mri::cuda {

std::size_t DeviceBytes::peak() const {
  const std::size_t most = std::max({fhd, q, cg});
  return most + most / 20 + (std::size_t{128} << 20); // 5% + 128 MiB for library modules and slack
}

namespace {

// An exact-sum FhdPlan of `out` at its smallest: resident, or streaming its smallest chunk.
std::size_t fhd_plan_bytes(const Grid &out, std::size_t m) {
  return std::min(detail::FhdPlan::resident_bytes(out, m),
                  detail::FhdPlan::chunked_bytes(out, detail::FhdPlan::kChunkQuantum));
}

} // namespace

DeviceBytes reconstruct_device_bytes(const Grid &grid, std::size_t samples, bool direct, bool q_from_cache,
                                     bool nufft, int coils, int exact_block, bool fixed_point) {
  const std::size_t n = static_cast<std::size_t>(grid.voxels());
  const Grid padded = grid.doubled();
  const std::size_t l = static_cast<std::size_t>(padded.voxels());
  const std::size_t m = samples;
  const Grid half_grid = q_half_grid(grid);
  const auto half = static_cast<std::size_t>(half_grid.voxels());
  using mri::detail::nufft_plan_bytes;
  const std::size_t toeplitz = mri::detail::toeplitz_operator_bytes(grid);
  DeviceBytes b;
  // + the right-hand side, and the uploaded samples (the exact sum: a block of coils' beside
  // its plan).
  b.fhd = (nufft ? nufft_plan_bytes(grid, m, fixed_point) + m * 8 : fhd_plan_bytes(grid, m) + exact_block * m * 8) + n * 8;
  const std::size_t iterates = 5 * n * 8; // x, r, p, ap, rhs
  if (direct) {
    b.q = 0;
    b.cg = iterates + m * 4 + (nufft ? nufft_plan_bytes(grid, m, fixed_point) + m * 8 : fhd_plan_bytes(grid, m));
  } else {
    // Q (the rhs held): from the cache (spectrum upload); by NUFFT on the doubled grid (its plan,
    // the weights, Q; then Q and the Toeplitz buffers); by the exact sum on the half grid (its
    // plan, its uploads; then its image and the Toeplitz buffers), or, in 3D, by the Dirichlet sum
    // (samples, weights, tables and the spectrum; then the Toeplitz buffers): the larger of the two.
    if (q_from_cache)
      b.q = n * 8 + toeplitz;
    else if (nufft)
      b.q = n * 8 + std::max(nufft_plan_bytes(padded, m, fixed_point) + m * 8, l * 8 + toeplitz);
    else
      b.q = n * 8 + std::max({fhd_plan_bytes(half_grid, m) + m * 8, half * 8 + toeplitz,
                              detail::dirichlet_spectrum_applies(grid)
                                  ? m * 16 + detail::dirichlet_spectrum_bytes(grid) + l * 4
                                  : std::size_t{0}});
    b.cg = iterates + toeplitz;
  }
  if (coils > 0) {
    const std::size_t maps = static_cast<std::size_t>(coils) * n * 8;
    b.fhd += maps + n * 8;
    // The coil-batched adjoint NUFFT: per coil of a block its samples (uploaded and sorted), its
    // oversampled grid (2^d n points at oversampling 2) and its image.
    if (nufft)
      b.fhd += static_cast<std::size_t>(detail::NufftDevicePlan::kCoilBlock) *
               (2 * m * 8 + (std::size_t{1} << grid.dims()) * n * 8 + n * 8);
    // The exact sum's block beyond one coil: images and SeparableGemm's double images.
    else
      b.fhd += static_cast<std::size_t>(exact_block - 1) * (n * 8 + n * 16);
    b.q += maps;
    b.cg += maps + 2 * n * 8;
    // The coil-batched Toeplitz operator's padded grids and work area (sense_toeplitz.hpp).
    if (const int batch = direct ? 0 : detail::sense_coil_batch(grid, coils); batch > 0)
      b.cg += detail::sense_batch_bytes(grid, batch);
  }
  return b;
}

} // namespace mri::cuda
