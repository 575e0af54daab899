// A dataset's datatype message checked in the file's bytes before H5Dopen2 (hdf5_type_guard.hpp).
// The layouts are those of the HDF5 file format specification: datatype messages of versions 1
// to 3, in object headers walked by hdf5_object_header.hpp.
#include "hdf5_type_guard.hpp"

#include <cstdint>
#include <string>

#include "hdf5_object_header.hpp"

namespace mri::detail {
namespace {

constexpr int kMaxDepth = 32;       // nested types (libismrmrd's deepest: 4)
constexpr unsigned kMaxRank = 32;   // H5S_MAX_RANK: HDF5's array dimensions
constexpr std::uint16_t kDatatype = 0x0003;
constexpr unsigned kShared = 0x02;  // message flag: the message lives elsewhere

std::string named(const std::string &member) { return member.empty() ? "its type" : "its type's member " + member; }

// The bytes HDF5 gives a version 3 compound member's offset: as few as the compound's size needs.
std::size_t offset_bytes(std::uint64_t size) {
  std::size_t bytes = 1;
  while (size >>= 8) ++bytes;
  return bytes;
}

std::uint64_t checked_type(Cursor &c, const std::string &member, int depth);

void compound(Cursor &c, const std::string &member, unsigned version, unsigned members, std::uint64_t size, int depth) {
  for (unsigned i = 0; i < members; ++i) {
    const std::string name = c.name(version < 3);
    c.skip(version < 3 ? 4 : offset_bytes(size));
    if (version == 1) c.skip(1 + 3 + 4 + 4 + 16); // rank, reserved, permutation, reserved, 4 dimensions
    checked_type(c, (member.empty() ? "" : member + ".") + "\"" + name + "\"", depth + 1);
  }
}

// HDF5 stores an enumeration's values at its base's size, but H5T_copy (under H5Dopen2) copies
// them at the enumeration's own (found by mutating datatype messages: a 16-byte enumeration of
// a 1-byte integer, a read 15 bytes past the values).
void enumeration(Cursor &c, const std::string &member, unsigned version, unsigned members, std::uint64_t size,
                 int depth) {
  const std::uint64_t base = checked_type(c, member + "[base]", depth + 1);
  if (base != size)
    refuse(named(member) + ": an enumeration of " + std::to_string(size) + " bytes over a base of " +
           std::to_string(base) + " bytes");
  for (unsigned i = 0; i < members; ++i) (void)c.name(version < 3);
  c.skip(members * base); // the values
}

// A bit field [at, at + bits) inside `within` bits.
bool inside(std::uint64_t at, std::uint64_t bits, std::uint64_t within) { return at <= within && bits <= within - at; }

// The bits of an integer, bitfield or float as HDF5's H5Tset_offset, H5Tset_precision and
// H5Tset_fields require them (a type made through the API has them so; the decoder only asserts
// some, and the conversions shift and copy bits where they say).
void atomic(Cursor &c, const std::string &member, unsigned kind, std::uint32_t flags, std::uint64_t size) {
  const std::uint64_t offset = c.take(2), precision = c.take(2);
  if (precision == 0 || !inside(offset, precision, 8 * size))
    refuse(named(member) + ": " + std::to_string(precision) + " bits at bit " + std::to_string(offset) + " of a " +
           std::to_string(size) + "-byte number");
  if (kind != 1) return;
  const std::uint64_t sign = flags >> 8 & 0xff, exponent_at = c.take(1), exponent_bits = c.take(1),
                      mantissa_at = c.take(1), mantissa_bits = c.take(1);
  c.skip(4); // the exponent bias
  const auto holds = [](std::uint64_t at, std::uint64_t bits, std::uint64_t bit) { return bit >= at && bit - at < bits; };
  const bool apart = exponent_at + exponent_bits <= mantissa_at || mantissa_at + mantissa_bits <= exponent_at;
  if (exponent_bits == 0 || mantissa_bits == 0 || sign >= precision || !inside(exponent_at, exponent_bits, precision) ||
      !inside(mantissa_at, mantissa_bits, precision) || !apart || holds(exponent_at, exponent_bits, sign) ||
      holds(mantissa_at, mantissa_bits, sign))
    refuse(named(member) + ": a float of " + std::to_string(precision) + " bits whose sign (bit " + std::to_string(sign) +
           "), exponent (" + std::to_string(exponent_bits) + " bits at " + std::to_string(exponent_at) +
           ") and mantissa (" + std::to_string(mantissa_bits) + " bits at " + std::to_string(mantissa_at) +
           ") do not fit apart");
}

void variable_length(Cursor &c, const std::string &member, std::uint32_t flags, int depth) {
  const std::uint64_t base = checked_type(c, member + "[]", depth + 1);
  if ((flags & 0x0f) == 1 && base != 1)
    refuse(named(member) + ": a variable-length string of characters of " + std::to_string(base) +
           " bytes (1 expected)");
}

void array(Cursor &c, const std::string &member, unsigned version, std::uint64_t size, int depth) {
  constexpr std::uint64_t kMost = std::uint64_t{1} << 32; // a type's size is 32 bits: more is wrong anyway
  const auto rank = static_cast<unsigned>(c.take(1));
  if (rank == 0 || rank > kMaxRank) refuse(named(member) + ": an array of rank " + std::to_string(rank));
  if (version < 3) c.skip(3);
  std::uint64_t elements = 1;
  for (unsigned d = 0; d < rank; ++d) {
    const std::uint64_t extent = c.take(4);
    elements = extent != 0 && elements > kMost / extent ? kMost + 1 : elements * extent;
  }
  if (version < 3) c.skip(4 * rank); // the permutation
  const std::uint64_t base = checked_type(c, member + "[]", depth + 1);
  if (elements > kMost || elements * base != size)
    refuse(named(member) + ": an array of " + (elements > kMost ? "over 2^32" : std::to_string(elements)) +
           " elements of " + std::to_string(base) + " bytes stored as " + std::to_string(size) + " bytes");
}

// The type at the cursor, checked and passed; its size. `member` names it in errors.
std::uint64_t checked_type(Cursor &c, const std::string &member, int depth) {
  if (depth > kMaxDepth) refuse(named(member) + ": types nested deeper than " + std::to_string(kMaxDepth));
  const auto head = static_cast<unsigned>(c.take(1));
  const auto flags = static_cast<std::uint32_t>(c.take(3));
  const std::uint64_t size = c.take(4);
  const unsigned kind = head & 0x0f, version = head >> 4;
  if (version < 1 || version > 3) throw LeftToHdf5{};
  switch (kind) {
  case 0: case 1: case 4: atomic(c, member, kind, flags, size); break; // integer, float, bitfield
  case 2: c.skip(2); break;                                          // time: its precision
  case 3: case 7: break;            // string, reference
  case 5: c.skip(flags & 0xff); break; // opaque: its tag
  case 6: compound(c, member, version, flags & 0xffff, size, depth); break;
  case 8: enumeration(c, member, version, flags & 0xffff, size, depth); break;
  case 9: variable_length(c, member, flags, depth); break;
  case 10: array(c, member, version, size, depth); break;
  default: throw LeftToHdf5{};
  }
  if (size == 0) refuse(named(member) + ": a type of size 0");
  return size;
}

// The datatype messages of the object header at `address`, checked.
void check_types(FileBytes &bytes, const Format &format, std::uint64_t address) {
  visit_object_header(bytes, format, address,
                      [](std::uint16_t type, unsigned flags, const unsigned char *data, std::size_t size) {
                        if (type != kDatatype) return;
                        if (flags & kShared) refuse("its datatype is shared (stored in another object): not checked");
                        Cursor c(data, size, "its datatype message");
                        (void)checked_type(c, "", 0);
                      });
}

} // namespace

hid_t open_checked_dataset(const std::filesystem::path &path, hid_t file, const std::string &name) {
  checked_by_bytes(path, file, name, [&](FileBytes &bytes, const Format &format) {
    check_types(bytes, format, linked_address(file, name));
  });
  return H5Dopen2(file, name.c_str(), H5P_DEFAULT);
}

} // namespace mri::detail
