// The object headers H5Fopen loads, checked in the file's bytes (hdf5_open_guard.hpp). The
// layouts are those of the HDF5 file format specification:
// - superblock versions 0 and 1: signature (8), version, 4 version bytes, size of offsets (O),
//   size of lengths (L), reserved, group K values (2 + 2), consistency flags (4), version 1 only:
//   indexed storage K (2) and reserved (2); then base, free-space, end-of-file and driver
//   addresses (4 O) and the root group's symbol table entry: name offset (O), object header
//   address (O), ...
// - versions 2 and 3: signature, version, O, L, flags (1), then base, superblock extension,
//   end-of-file and root group object header addresses (4 O), checksum (4).
// Addresses count from the superblock's offset (HDF5 takes that as the base when the base
// address field differs).
#include "hdf5_open_guard.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "hdf5_object_header.hpp"
#include "ismrmrd_common.hpp"

namespace mri::detail {
namespace {

constexpr unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

struct Header {
  std::uint64_t address;
  const char *whose;
};

struct Superblock {
  Format format;
  std::vector<Header> headers; // the object headers H5Fopen loads
};

// The superblock's offset: the first of 0, 512, 1024, ... that holds the signature.
std::optional<std::uint64_t> find_signature(FileBytes &bytes) {
  unsigned char sig[8];
  for (std::uint64_t at = 0; at + 8 <= bytes.size(); at = at == 0 ? 512 : 2 * at)
    if (bytes.read(at, sig, 8) && std::memcmp(sig, kSignature, 8) == 0) return at;
  return std::nullopt;
}

std::optional<Superblock> read_superblock(FileBytes &bytes) {
  const std::optional<std::uint64_t> at = find_signature(bytes);
  unsigned char head[16];
  if (!at || !bytes.read(*at, head, sizeof head)) return std::nullopt;
  const unsigned version = head[8];
  Superblock s;
  s.format.base = *at;
  s.format.address = version <= 1 ? head[13] : head[9];
  s.format.length = version <= 1 ? head[14] : head[10];
  if (version > 3 || !s.format.decodable()) return std::nullopt; // HDF5 refuses or the guards do not decode
  const std::size_t o = s.format.address;
  // The addresses' block: after the fixed fields (24 or 28 bytes; 12 for versions 2 and 3).
  const std::size_t fixed = version == 0 ? 24 : version == 1 ? 28 : 12;
  std::vector<unsigned char> tail(fixed + 6 * o);
  if (!bytes.read(*at, tail.data(), tail.size())) return std::nullopt;
  const auto address = [&](std::size_t i) { return decode_le(&tail[fixed + i * o], o); };
  if (version <= 1) {
    s.headers.push_back({address(5), "the root group"}); // the root entry's header, after its name offset
  } else {
    s.headers.push_back({address(3), "the root group"});
    if (address(1) != s.format.undefined()) s.headers.push_back({address(1), "the superblock extension"});
  }
  return s;
}

} // namespace

void check_before_open(const std::filesystem::path &path) {
  FileBytes bytes(path);
  try {
    const std::optional<Superblock> s = read_superblock(bytes);
    if (!s) return;
    for (const Header &h : s->headers) {
      try {
        visit_object_header(bytes, s->format, h.address, [](std::uint16_t, unsigned, const unsigned char *, std::size_t) {});
      } catch (const Refused &r) {
        ismrmrd_io_error(path, std::string(h.whose) + ": " + r.what);
      }
    }
  } catch (const LeftToHdf5 &) {
  }
}

} // namespace mri::detail
