#pragma once
// gzip on every core, pigz's way: the data cut in blocks deflated at once, each primed with the
// 32 KiB before it (so the ratio is that of one stream) and ended on a byte boundary by a sync
// flush, the last one finished; the pieces, one after the other, are one deflate stream, and the
// CRC-32 of the whole is combined from the blocks'. gzip on one core was most of a 64-slice
// batch's time outside the reconstructions (docs/cli.md).
#include <cstddef>
#include <filesystem>
#include <span>
#include <vector>

namespace mri::detail {

// `data` as one gzip member (RFC 1952) at zlib's compression `level`; it decompresses (gunzip,
// zlib's gzread, libnifti) to exactly `data`. Throws IoError when zlib fails (out of memory).
std::vector<unsigned char> gzip_parallel(std::span<const unsigned char> data, int level);

// The file `from` gzipped into a new file `to`. Throws IoError naming the file that cannot be
// read or written.
void gzip_file(const std::filesystem::path &from, const std::filesystem::path &to, int level);

} // namespace mri::detail
