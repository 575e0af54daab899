// Object headers and bounded reads of an HDF5 file's bytes (hdf5_object_header.hpp).
#include "hdf5_object_header.hpp"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "ismrmrd_common.hpp"

namespace mri::detail {

void refuse(std::string what) { throw Refused{std::move(what)}; }

std::uint64_t Cursor::take(std::size_t n) {
  need(n);
  const std::uint64_t v = decode_le(p_, n);
  p_ += n;
  return v;
}

void Cursor::skip(std::uint64_t n) {
  need(n);
  p_ += n;
}

std::string Cursor::name(bool padded) {
  const void *nul = std::memchr(p_, 0, left());
  if (nul == nullptr) fail(" ends inside a name");
  std::string s(reinterpret_cast<const char *>(p_), static_cast<const unsigned char *>(nul) - p_);
  skip(padded ? (s.size() + 8) / 8 * 8 : s.size() + 1);
  return s;
}

void Cursor::need(std::uint64_t n) const {
  if (n > left()) fail(" ends inside what it encodes");
}

void Cursor::fail(const char *how) const {
  if (what_ == nullptr) throw LeftToHdf5{};
  refuse(what_ + std::string(how));
}

namespace {

constexpr int kMaxChunks = 256; // object header chunks followed (a damaged continuation may loop)
constexpr std::uint16_t kContinuation = 0x0010;

// The object header at an address, chunk after chunk, each message handed to the visitor.
class ObjectHeader {
public:
  ObjectHeader(FileBytes &bytes, const Format &format, const MessageVisitor &visit)
      : bytes_(bytes), format_(format), visit_(visit) {}

  void walk(std::uint64_t address) {
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
      const std::vector<unsigned char> chunk = read_chunk(at, length);
      if (!v2_) messages(chunk.data(), chunk.size(), at);
      else if (length >= 8 && std::memcmp(chunk.data(), "OCHK", 4) == 0) messages(chunk.data() + 4, length - 8, at + 4);
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

  // A chunk of messages: HDF5 1.10.8's metadata cache allocates a chunk by the length its header
  // or continuation message gives before it reads it, and checks the end of the file only then
  // (finding 19: a continuation of 160 GB in the root group's header, under H5Fopen).
  std::vector<unsigned char> read_chunk(std::uint64_t address, std::uint64_t length) {
    if (address > bytes_.size() || length > bytes_.size() - address)
      refuse("its object header's chunk at " + std::to_string(address) + " of " + std::to_string(length) +
             " bytes is not inside the file's " + std::to_string(bytes_.size()));
    return read(address, length);
  }

  // Version 1: version, reserved, message count (2), reference count (4), chunk size (4), padding
  // to 16; then messages of type (2), size (2), flags (1) and 3 reserved bytes.
  void version1(std::uint64_t address) {
    const std::vector<unsigned char> prefix = read(address, 16);
    const std::vector<unsigned char> chunk = read_chunk(address + 16, decode_le(prefix.data() + 8, 4));
    messages(chunk.data(), chunk.size(), address + 16);
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
    const std::vector<unsigned char> chunk =
        read_chunk(address + at + size_bytes, decode_le(prefix.data() + at, size_bytes));
    messages(chunk.data(), chunk.size(), address + at + size_bytes);
  }

  std::size_t message_header() const { return v2_ ? 4 + (creation_order_ ? 2 : 0) : 8; }

  // The messages of one chunk (`p`, at `address` in the file); what is too short for a message
  // header is a gap.
  void messages(const unsigned char *p, std::size_t n, std::uint64_t address) {
    Cursor c(p, n, nullptr);
    while (c.left() >= message_header()) {
      const auto type = static_cast<std::uint16_t>(c.take(v2_ ? 1 : 2));
      const auto size = static_cast<std::size_t>(c.take(2));
      const auto flags = static_cast<unsigned>(c.take(1));
      c.skip(message_header() - (v2_ ? 4 : 5)); // v1: reserved; v2: the creation order
      const unsigned char *data = c.at();
      const std::size_t held = std::min(size, c.left());
      c.skip(size);
      if (type == kContinuation) continuation(address + static_cast<std::uint64_t>(data - p));
      else visit_(type, flags, data, held);
    }
  }

  // HDF5 decodes a continuation's address and length from its image of the header whatever
  // size the message gives, past the chunk's end too (finding 19): read from the file likewise.
  void continuation(std::uint64_t data_at) {
    const std::vector<unsigned char> fields = read(data_at, format_.address + format_.length);
    continuations_.emplace_back(decode_le(fields.data(), format_.address),
                                decode_le(fields.data() + format_.address, format_.length));
  }

  FileBytes &bytes_;
  const Format &format_;
  const MessageVisitor &visit_;
  bool v2_ = false, creation_order_ = false;
  int chunks_ = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> continuations_;
};

} // namespace

void visit_object_header(FileBytes &bytes, const Format &format, std::uint64_t address, const MessageVisitor &message) {
  ObjectHeader(bytes, format, message).walk(address);
}

std::uint64_t linked_address(hid_t file, const std::string &name) {
  H5L_info_t info{};
  if (H5Lget_info(file, name.c_str(), &info, H5P_DEFAULT) < 0) refuse("HDF5 cannot find its link");
  if (info.type != H5L_TYPE_HARD) refuse("a soft or external link: not checked");
  return info.u.address;
}

void checked_by_bytes(const std::filesystem::path &path, hid_t file, const std::string &name,
                      const std::function<void(FileBytes &, const Format &)> &check) {
  try {
    const Format format = format_of(file);
    if (!format.decodable())
      refuse("addresses of " + std::to_string(format.address) + " and lengths of " + std::to_string(format.length) +
             " bytes: not checked");
    FileBytes bytes(path);
    check(bytes, format);
  } catch (const Refused &r) {
    ismrmrd_io_error(path, name + ": " + r.what);
  } catch (const LeftToHdf5 &) {
  }
}

} // namespace mri::detail
