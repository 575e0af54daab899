#pragma once
// What the checks of HDF5 structures in the file's bytes share (hdf5_type_guard.hpp,
// hdf5_group_guard.hpp): a bounded cursor, the two ways a check ends early, and the walk of an
// object header's messages. The layouts are those of the HDF5 file format specification: object
// headers of version 1 (messages of 8-byte headers after a 16-byte prefix) and 2 ("OHDR",
// continuation chunks "OCHK", each ending in a checksum).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "hdf5_file_bytes.hpp"

namespace mri::detail {

// Why a file is refused; turned into an IoError naming the file by checked_by_bytes.
struct Refused {
  std::string what;
};
[[noreturn]] void refuse(std::string what);

// An encoding HDF5 itself refuses to decode (a version, class or signature it does not know, a
// chunk past the file): left to HDF5, which fails cleanly and says so.
struct LeftToHdf5 {};

// A bounded cursor over bytes: taking past the end refuses the file where HDF5 1.10.8 reads on
// (`what` names the bytes), or leaves it to HDF5 where it checks (`what` null).
class Cursor {
public:
  Cursor(const unsigned char *p, std::size_t n, const char *what) : p_(p), end_(p + n), what_(what) {}
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }
  const unsigned char *at() const { return p_; }
  std::uint64_t take(std::size_t n);
  void skip(std::uint64_t n);
  // A NUL-terminated name, then its padding to 8 bytes where the version pads.
  std::string name(bool padded);

private:
  void need(std::uint64_t n) const;
  [[noreturn]] void fail(const char *how) const;
  const unsigned char *p_, *end_;
  const char *what_;
};

// Calls message(type, flags, data, size) for every message of the object header at `address`,
// its continuation chunks included. A chunk (chunk 0 or a continuation) not inside the file is
// Refused: HDF5 allocates it by its length before it reads it. What else breaks the header's own
// structure is LeftToHdf5 (HDF5 checks it when it loads the header); a message's data may be cut
// short by its chunk's end.
using MessageVisitor = std::function<void(std::uint16_t type, unsigned flags, const unsigned char *data,
                                          std::size_t size)>;
void visit_object_header(FileBytes &bytes, const Format &format, std::uint64_t address, const MessageVisitor &message);

// The object header address `name` links to, without HDF5 loading the object: Refused for a link
// HDF5 cannot find, and for a soft or external one (not followed by these checks).
std::uint64_t linked_address(hid_t file, const std::string &name);

// Runs check(bytes, format) on the file's bytes: a Refused becomes IoError("<path>: <name>: <what>"),
// LeftToHdf5 ends the check quietly. Refuses a file whose addresses or lengths it cannot decode.
void checked_by_bytes(const std::filesystem::path &path, hid_t file, const std::string &name,
                      const std::function<void(FileBytes &, const Format &)> &check);

} // namespace mri::detail
