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
  // 10 frames (1600 B a Gram); cuSOLVER's workspace as the header states it (chunk x (32^2 + 11^2)
  // + 1028 complex doubles, 64 KiB more).
  const Grid small(60, 44);
  CHECK(detail::low_rank_blocks(small, 3u, 8) == 48);
  CHECK(detail::low_rank_blocks(small, 1u, 8) == 8); // along x only: y is one block
  const std::size_t grams = 48 * 10 * 10 * 16;
  const std::size_t workspace = (48 * (1024 + 121) + 1028) * 16 + 65536;
  CHECK(detail::low_rank_device_bytes(small, 3u, 8, 10) ==
        grams + workspace + 48 * 10 * 8 + 48 * 2 * sizeof(int) + 49 * 8);
  // 256^3 in blocks of 8 at 32 frames: 32768 blocks of 16 KiB Grams; the chunk holds 4096 of them
  // (64 MiB) and the workspace about 132 MiB, so the plan stays near 197 MiB (+ the norms) at any size.
  const Grid large(256, 256, 256);
  CHECK(detail::low_rank_chunk_blocks(detail::low_rank_blocks(large, 7u, 8), 32) == 4096);
  const std::size_t bytes = detail::low_rank_device_bytes(large, 7u, 8, 32);
  CHECK(bytes >= (std::size_t{196} << 20));
  CHECK(bytes < (std::size_t{200} << 20));
  CHECK(detail::low_rank_device_bytes(Grid(512, 512, 512), 7u, 8, 32) - bytes == (262144 - 32768) * 8);
}
