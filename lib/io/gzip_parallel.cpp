#include "gzip_parallel.hpp"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <thread>

#include "mri/error.hpp"

namespace mri::detail {
namespace {

constexpr std::size_t kBlock = std::size_t{1} << 20; // 16 blocks for a 16 MB NIfTI
constexpr std::size_t kWindow = 32768;               // deflate's dictionary

// Block `first .. first + size` of `data` as raw deflate: primed with the window before it,
// ended by a sync flush (or, the last block, by the end of the stream). Empty when zlib fails.
std::vector<unsigned char> deflate_block(std::span<const unsigned char> data, std::size_t first, std::size_t size,
                                         int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  const std::size_t primed = std::min(first, kWindow);
  bool ok = primed == 0 || deflateSetDictionary(&z, data.data() + first - primed, static_cast<uInt>(primed)) == Z_OK;
  std::vector<unsigned char> out(deflateBound(&z, static_cast<uLong>(size)) + 16); // + the sync flush's 5 bytes
  z.next_in = const_cast<Bytef *>(data.data() + first); // zlib's API is not const-correct
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const bool last = first + size == data.size();
  const int status = ok ? deflate(&z, last ? Z_FINISH : Z_SYNC_FLUSH) : Z_STREAM_ERROR;
  ok = ok && z.avail_in == 0 && z.avail_out > 0 && (last ? status == Z_STREAM_END : status == Z_OK);
  out.resize(ok ? out.size() - z.avail_out : 0);
  deflateEnd(&z);
  return out;
}

void put32(std::vector<unsigned char> &out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i))); // little-endian
}

} // namespace

std::vector<unsigned char> gzip_parallel(std::span<const unsigned char> data, int level) {
  const std::size_t blocks = std::max<std::size_t>(1, (data.size() + kBlock - 1) / kBlock);
  std::vector<std::vector<unsigned char>> pieces(blocks);
  std::vector<uLong> crcs(blocks);
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t b = next++; b < blocks; b = next++) {
      const std::size_t first = b * kBlock, size = std::min(kBlock, data.size() - first);
      pieces[b] = deflate_block(data, first, size, level);
      crcs[b] = crc32(0L, data.data() + first, static_cast<uInt>(size));
    }
  };
  const std::size_t threads = std::min<std::size_t>(blocks, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread &t : pool) t.join();

  std::vector<unsigned char> out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3}; // deflate, no name, no time, Unix
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t b = 0; b < blocks; ++b) {
    if (pieces[b].empty()) throw IoError("gzip: zlib could not deflate a block (out of memory?)");
    out.insert(out.end(), pieces[b].begin(), pieces[b].end());
    const std::size_t size = std::min(kBlock, data.size() - b * kBlock);
    crc = crc32_combine(crc, crcs[b], static_cast<z_off_t>(size));
  }
  put32(out, static_cast<std::uint32_t>(crc));
  put32(out, static_cast<std::uint32_t>(data.size())); // ISIZE: the length modulo 2^32
  return out;
}

void gzip_file(const std::filesystem::path &from, const std::filesystem::path &to, int level) {
  std::error_code ec;
  const auto bytes = static_cast<std::size_t>(std::filesystem::file_size(from, ec));
  std::vector<unsigned char> data(ec ? 0 : bytes);
  std::ifstream in(from, std::ios::binary);
  if (ec || !in.read(reinterpret_cast<char *>(data.data()), static_cast<std::streamsize>(data.size())))
    throw IoError(from.string() + ": cannot read it to compress");
  const std::vector<unsigned char> packed = gzip_parallel(data, level);
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(packed.data()), static_cast<std::streamsize>(packed.size()));
  if (!out.flush()) throw IoError(to.string() + ": cannot write");
}

} // namespace mri::detail
