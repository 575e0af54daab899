// The GPU locally-low-rank plan's device bytes (mri_backend/low_rank_device_bytes.hpp), what the
// device memory check adds for an LLR term: the Gram chunk bounded at 64 MiB whatever the image.
#include <cstddef>

#include "catch.hpp"
#include "mri/grid.hpp"
#include "mri_backend/low_rank_device_bytes.hpp"

using namespace mri;

TEST_CASE("low rank device bytes: every block's Gram while they fit in the chunk, one chunk beyond",
          "[sparse][frames]") {
  // 60 x 44 in blocks of 8 (partial blocks at both edges): 8 x 6 = 48 blocks, all in one chunk at
  // 10 frames (1600 B a Gram); the workspace counted as one more chunk of Grams.
  const Grid small(60, 44);
  CHECK(detail::low_rank_blocks(small, 3u, 8) == 48);
  CHECK(detail::low_rank_blocks(small, 1u, 8) == 8); // along x only: y is one block
  const std::size_t grams = 48 * 10 * 10 * 16;
  CHECK(detail::low_rank_device_bytes(small, 3u, 8, 10) == 2 * grams + 48 * 10 * 8 + 48 * 2 * sizeof(int) + 49 * 8);
  // 256^3 in blocks of 8 at 32 frames: 32768 blocks of 16 KiB Grams; the chunk holds 4096 of them
  // (64 MiB), so the plan stays near 128 MiB (+ the norms, eigenvalues and flags) at any size.
  const Grid large(256, 256, 256);
  CHECK(detail::low_rank_chunk_blocks(detail::low_rank_blocks(large, 7u, 8), 32) == 4096);
  const std::size_t bytes = detail::low_rank_device_bytes(large, 7u, 8, 32);
  CHECK(bytes >= (std::size_t{128} << 20));
  CHECK(bytes < (std::size_t{130} << 20));
  CHECK(detail::low_rank_device_bytes(Grid(512, 512, 512), 7u, 8, 32) - bytes == (262144 - 32768) * 8);
}
