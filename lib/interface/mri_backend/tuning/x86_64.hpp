#pragma once
// The tuning table of the CPU backend (x86-64, AVX2 or AVX-512 chosen at run time: lib/platform/
// cpu_isa.hpp): every threshold a different CPU would tune again, each with the benchmark that
// measures it (figures: docs/performance.md, docs/sense.md).
#include <cstddef>

namespace mri::detail::tuning {

struct X86_64 {
  // NUFFT adjoint_coils: coils gridded per pass over the sorted samples (each sample's weights and
  // cells evaluated once for the block), their oversampled grids within coil_grid_bytes;
  // bench_nufft_cpu (8 coils, 256^2, 2^17 radial samples).
  static constexpr int gridding_coils = 8;
  static constexpr std::size_t coil_grid_bytes = std::size_t{512} << 20;
  // Per-thread grids of the scatter up to this many bytes in total, atomics beyond.
  static constexpr std::size_t private_grid_bytes = std::size_t{1} << 30;
  // Coil images per adjoint_coils call when reconstruct forms F^H D by the NUFFT: fewer than
  // gridding_coils, since the plan is fresh in every reconstruct and first-touching 8 coils'
  // buffers costs more than the shared weights save; bench_recon_cpu (RECON-2D-MC, F^H D phase).
  static constexpr int rhs_coil_block = 4;
};

} // namespace mri::detail::tuning
