// A dataset's datatype message checked in the file's bytes before H5Dopen2 (hdf5_type_guard.hpp).
// The layouts are those of the HDF5 file format specification: object headers of version 1
// (messages of 8-byte headers after a 16-byte prefix) and 2 ("OHDR", continuation chunks "OCHK",
// each ending in a checksum); datatype messages of versions 1 to 3.
#include "hdf5_type_guard.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hdf5_file_bytes.hpp"
#include "ismrmrd_common.hpp"

namespace mri::detail {
namespace {

constexpr int kMaxDepth = 32;       // nested types (libismrmrd's deepest: 4)
constexpr int kMaxChunks = 256;     // object header chunks followed (a damaged continuation may loop)
constexpr unsigned kMaxRank = 32;   // H5S_MAX_RANK: HDF5's array dimensions
constexpr std::uint16_t kDatatype = 0x0003, kContinuation = 0x0010;
constexpr unsigned kShared = 0x02;  // message flag: the message lives elsewhere

// Why a file is refused; turned into the IoError by open_checked_dataset.
struct Refused {
  std::string what;
};
[[noreturn]] void refuse(std::string what) { throw Refused{std::move(what)}; }

// An encoding HDF5 itself refuses to decode (an object header or datatype version, or a class,
// that it does not know): left to H5Dopen2, which fails cleanly and says so as before.
struct LeftToHdf5 {};

// A bounded cursor over bytes: taking past the end refuses the file where HDF5 1.10.8 reads on
// (`what` names the bytes), or leaves it to HDF5 where it checks (`what` null).
class Cursor {
public:
  Cursor(const unsigned char *p, std::size_t n, const char *what) : p_(p), end_(p + n), what_(what) {}
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }
  const unsigned char *at() const { return p_; }
  std::uint64_t take(std::size_t n) {
    need(n);
    const std::uint64_t v = decode_le(p_, n);
    p_ += n;
    return v;
  }
  void skip(std::uint64_t n) {
    need(n);
    p_ += n;
  }
  // A NUL-terminated name, then its padding to 8 bytes where the version pads.
  std::string name(bool padded) {
    const void *nul = std::memchr(p_, 0, left());
    if (nul == nullptr) fail(" ends inside a name");
    std::string s(reinterpret_cast<const char *>(p_), static_cast<const unsigned char *>(nul) - p_);
    skip(padded ? (s.size() + 8) / 8 * 8 : s.size() + 1);
    return s;
  }

private:
  void need(std::uint64_t n) const {
    if (n > left()) fail(" ends inside what it encodes");
  }
  [[noreturn]] void fail(const char *how) const {
    if (what_ == nullptr) throw LeftToHdf5{};
    refuse(what_ + std::string(how));
  }
  const unsigned char *p_, *end_;
  const char *what_;
};

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

// The object header at `address`, chunk after chunk, datatype messages checked as they come. Its
// structure (versions, signatures, chunks inside the file, messages inside their chunks) HDF5
// checks itself when it loads the header: what breaks it is left to H5Dopen2.
class ObjectHeader {
public:
  ObjectHeader(FileBytes &bytes, const Format &format) : bytes_(bytes), format_(format) {}

  void check(std::uint64_t address) {
    unsigned char prefix[4];
    if (!bytes_.read(format_.base + address, prefix, 4)) throw LeftToHdf5{};
    if (std::memcmp(prefix, "OHDR", 4) == 0) version2(address);
    else if (prefix[0] == 1) version1(address);
    else throw LeftToHdf5{};
    while (!continuations_.empty()) {
      const auto [at, length] = continuations_.back();
      continuations_.pop_back();
      // A continuation back to an earlier chunk would never end here.
      if (++chunks_ > kMaxChunks) refuse("its object header has more than " + std::to_string(kMaxChunks) + " chunks");
      const std::vector<unsigned char> chunk = read(at, length);
      if (!v2_) messages(chunk.data(), chunk.size());
      else if (length >= 8 && std::memcmp(chunk.data(), "OCHK", 4) == 0) messages(chunk.data() + 4, length - 8);
      else throw LeftToHdf5{};
    }
  }

private:
  std::vector<unsigned char> read(std::uint64_t address, std::uint64_t length) {
    if (address > bytes_.size() || length > bytes_.size() - address) throw LeftToHdf5{};
    std::vector<unsigned char> out(static_cast<std::size_t>(length));
    if (!bytes_.read(format_.base + address, out.data(), out.size())) throw LeftToHdf5{};
    return out;
  }

  // Version 1: version, reserved, message count (2), reference count (4), chunk size (4), padding
  // to 16; then messages of type (2), size (2), flags (1) and 3 reserved bytes.
  void version1(std::uint64_t address) {
    const std::vector<unsigned char> prefix = read(address, 16);
    const std::vector<unsigned char> chunk = read(address + 16, decode_le(prefix.data() + 8, 4));
    messages(chunk.data(), chunk.size());
  }

  // Version 2: "OHDR", version, flags, times (16 bytes if flag 0x20), attribute limits (4, if
  // 0x10), chunk 0's size (1 << (flags & 3) bytes), its messages of type (1), size (2), flags (1)
  // and creation order (2, if flag 0x04), then a checksum (4).
  void version2(std::uint64_t address) {
    v2_ = true;
    const std::vector<unsigned char> head = read(address, 6);
    const unsigned flags = head[5];
    if (head[4] != 2) throw LeftToHdf5{};
    creation_order_ = (flags & 0x04) != 0;
    const std::size_t size_bytes = std::size_t{1} << (flags & 3);
    const std::size_t at = 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
    const std::vector<unsigned char> prefix = read(address, at + size_bytes);
    const std::vector<unsigned char> chunk = read(address + at + size_bytes, decode_le(prefix.data() + at, size_bytes));
    messages(chunk.data(), chunk.size());
  }

  std::size_t message_header() const { return v2_ ? 4 + (creation_order_ ? 2 : 0) : 8; }

  // The messages of one chunk; what is too short for a message header is a gap.
  void messages(const unsigned char *p, std::size_t n) {
    Cursor c(p, n, nullptr);
    while (c.left() >= message_header()) {
      const auto type = static_cast<std::uint16_t>(c.take(v2_ ? 1 : 2));
      const auto size = static_cast<std::size_t>(c.take(2));
      const auto flags = static_cast<unsigned>(c.take(1));
      c.skip(message_header() - (v2_ ? 4 : 5)); // v1: reserved; v2: the creation order
      Cursor data(c.at(), std::min(size, c.left()), "its datatype message");
      c.skip(size);
      message(type, flags, data);
    }
  }

  void message(std::uint16_t type, unsigned flags, Cursor &data) {
    if (type == kContinuation) {
      Cursor where(data.at(), data.left(), nullptr);
      const std::uint64_t at = where.take(format_.address), length = where.take(format_.length);
      continuations_.emplace_back(at, length);
    } else if (type == kDatatype) {
      if (flags & kShared) refuse("its datatype is shared (stored in another object): not checked");
      (void)checked_type(data, "", 0);
    }
  }

  FileBytes &bytes_;
  const Format &format_;
  bool v2_ = false, creation_order_ = false;
  int chunks_ = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> continuations_;
};

// The object header address `name` links to, without HDF5 loading the object.
std::uint64_t object_address(hid_t file, const std::string &name) {
  H5L_info_t info{};
  if (H5Lget_info(file, name.c_str(), &info, H5P_DEFAULT) < 0) refuse("HDF5 cannot find its link");
  if (info.type != H5L_TYPE_HARD) refuse("a soft or external link: not checked");
  return info.u.address;
}

} // namespace

hid_t open_checked_dataset(const std::filesystem::path &path, hid_t file, const std::string &name) {
  try {
    const Format format = format_of(file);
    if (!format.decodable())
      refuse("addresses of " + std::to_string(format.address) + " and lengths of " + std::to_string(format.length) +
             " bytes: not checked");
    FileBytes bytes(path);
    ObjectHeader(bytes, format).check(object_address(file, name));
  } catch (const Refused &r) {
    ismrmrd_io_error(path, name + ": " + r.what);
  } catch (const LeftToHdf5 &) {
  }
  return H5Dopen2(file, name.c_str(), H5P_DEFAULT);
}

} // namespace mri::detail
