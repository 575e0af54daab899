// The bytes of an HDF5 file beside HDF5 (hdf5_file_bytes.hpp).
#include "hdf5_file_bytes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace mri::detail {
namespace {
// Bytes per read: a collection's header, a trajectory of up to 8 KiB and the samples' object
// header after it (libismrmrd stores one acquisition's two arrays in one collection) come in one
// pread; the reads, not the bytes copied, are what the walk of a file costs, so 8 KiB reads walk
// a file of 36 KiB collections faster than 4 KiB ones.
constexpr std::size_t kBlock = 8192;
} // namespace

std::uint64_t decode_le(const unsigned char *p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes; i-- > 0;) v = v << 8 | p[i];
  return v;
}

FileBytes::FileBytes(const std::filesystem::path &path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  struct stat st {};
  if (fd_ >= 0 && ::fstat(fd_, &st) == 0) size_ = static_cast<std::uint64_t>(st.st_size);
}

FileBytes::~FileBytes() {
  if (fd_ >= 0) ::close(fd_);
}

bool FileBytes::read(std::uint64_t offset, void *out, std::size_t n) {
  if (fd_ < 0 || offset > size_ || n > size_ - offset) return false;
  if (n == 0) return true; // (an empty vector's data() may be null: no memcpy to it)
  if (n > kBlock) return pread_all(offset, out, n);
  if (offset < block_at_ || offset + n > block_at_ + block_.size()) {
    block_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, size_ - offset)));
    block_at_ = offset;
    if (!pread_all(offset, block_.data(), block_.size())) return false;
  }
  std::memcpy(out, block_.data() + (offset - block_at_), n);
  return true;
}

bool FileBytes::pread_all(std::uint64_t offset, void *out, std::size_t n) const {
  auto *dst = static_cast<char *>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
    if (got <= 0) return false;
    dst += got, offset += static_cast<std::uint64_t>(got), n -= static_cast<std::size_t>(got);
  }
  return true;
}

Format format_of(hid_t file) {
  Format f;
  const hid_t fcpl = H5Fget_create_plist(file);
  hsize_t userblock = 0;
  if (fcpl >= 0) {
    H5Pget_sizes(fcpl, &f.address, &f.length);
    H5Pget_userblock(fcpl, &userblock);
    H5Pclose(fcpl);
  }
  f.base = userblock;
  return f;
}

} // namespace mri::detail
