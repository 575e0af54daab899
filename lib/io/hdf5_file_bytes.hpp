#pragma once
// The bytes of an HDF5 file read beside HDF5 (its own pread handle), for the guards that check
// what HDF5 1.10.8 would trust before it reads it (hdf5_heap_guard.hpp, hdf5_type_guard.hpp), and
// the superblock's sizes they decode addresses and lengths by.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include <hdf5.h>

namespace mri::detail {

// Little-endian unsigned of `bytes` (<= 8) bytes: HDF5's encoding of addresses and lengths.
std::uint64_t decode_le(const unsigned char *p, std::size_t bytes);

// The file's bytes by offset, read in blocks of 8 KiB (hdf5_file_bytes.cpp says why).
class FileBytes {
public:
  explicit FileBytes(const std::filesystem::path &path);
  ~FileBytes();
  FileBytes(const FileBytes &) = delete;
  FileBytes &operator=(const FileBytes &) = delete;

  std::uint64_t size() const { return size_; }
  // False for a range that is not wholly inside the file.
  bool read(std::uint64_t offset, void *out, std::size_t n);

private:
  bool pread_all(std::uint64_t offset, void *out, std::size_t n) const;

  int fd_;
  std::uint64_t size_ = 0, block_at_ = 0;
  std::vector<unsigned char> block_;
};

// The superblock's sizes of addresses and lengths, and the base that addresses count from.
struct Format {
  std::size_t address = 0, length = 0;
  std::uint64_t base = 0;
  std::size_t descriptor() const { return 4 + address + 4; } // a variable-length value as stored
  std::size_t collection_header() const { return 8 + length; }
  std::size_t object_header() const { return 8 + length; }
  // HDF5's undefined address: all bits of an address set.
  std::uint64_t undefined() const { return address >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << 8 * address) - 1; }
  // Sizes the guards decode (HDF5 allows 2 to 8 bytes; wider ones are not checked).
  bool decodable() const { return address >= 2 && address <= 8 && length >= 2 && length <= 8; }
};

Format format_of(hid_t file);

} // namespace mri::detail
