#pragma once
// The device memory of locally low rank's shrink on the GPU (cuda/sparse/llr_cuda.cu's
// LowRankPlan), in one place for the plan that allocates it and the estimate that checks the
// free memory before a reconstruction starts (cuda/recon's reconstruct_device_bytes, per frame
// there; the LLR term is one plan for all frames). Host code: the CPU tests check it.
//   Gram matrices   chunk x F^2 complex doubles, the chunk bounded by kLowRankChunkBytes
//   eigenvalues     chunk x F doubles; info and zero flags: chunk x 2 ints
//   norms           blocks + 1 doubles (one per block and their sum)
//   eigensolver     cuSOLVER's batched Jacobi workspace (cusolverDnZheevjBatched_bufferSize, only
//                   known on the device): chunk x (32^2 + (F + 1)^2) + 1028 complex doubles, as
//                   cuSOLVER reports it for F = 2, 8 and 32 (chunks of 12 to 4096), counted with
//                   64 KiB more; tests/gpu/sparse/test_llr_gpu.cpp checks the bound against the
//                   plan's real bytes, so a cuSOLVER that asks more fails there
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "mri/grid.hpp"

namespace mri::detail {

// The Gram matrices of one chunk of blocks: bounds the chunk's memory (and the eigensolver's
// workspace) whatever the image size.
inline constexpr std::size_t kLowRankChunkBytes = std::size_t{64} << 20;

// The LLR tiling's block count: per axis in `axes` (resolved: extent > 1) ceil(extent / block),
// one block along the others (lib/sparse/locally_low_rank.cpp's AxisTiling).
inline long long low_rank_blocks(const Grid &grid, unsigned axes, int block) {
  long long blocks = 1;
  for (int a = 0; a < 3; ++a)
    if ((axes >> a & 1u) != 0) blocks *= (grid.extent(a) + block - 1) / block;
  return blocks;
}

// Blocks whose Gram matrices are held at once.
inline long long low_rank_chunk_blocks(long long blocks, int frames) {
  const auto per_block = static_cast<long long>(16 * static_cast<std::size_t>(frames) * static_cast<std::size_t>(frames));
  return std::clamp<long long>(static_cast<long long>(kLowRankChunkBytes) / per_block, 1, std::max(blocks, 1LL));
}

// Bytes of the plan for `frames` frames (F <= kDeviceLowRankMaxFrames), with the workspace bound above.
inline std::size_t low_rank_device_bytes(const Grid &grid, unsigned axes, int block, int frames) {
  const long long blocks = low_rank_blocks(grid, axes, block);
  const auto chunk = static_cast<std::size_t>(low_rank_chunk_blocks(blocks, frames));
  const auto f = static_cast<std::size_t>(frames);
  const std::size_t gram = chunk * f * f * 16;
  const std::size_t workspace = (chunk * (32 * 32 + (f + 1) * (f + 1)) + 1028) * 16 + (std::size_t{64} << 10);
  return gram + workspace + chunk * f * 8 + chunk * 2 * sizeof(int) + (static_cast<std::size_t>(blocks) + 1) * 8;
}

} // namespace mri::detail
