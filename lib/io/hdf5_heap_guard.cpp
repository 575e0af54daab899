// Global heap collections checked in the file's bytes before HDF5 reads them (hdf5_heap_guard.hpp).
// The layouts are those of the HDF5 file format specification, version 0 to 3 superblocks:
// a variable-length value is stored as its length (4 bytes), the collection's address and the
// object's index (4 bytes); a collection is "GCOL", version 1, 3 reserved bytes, its size, then
// objects of index (2 bytes), reference count (2), 4 reserved bytes, size, and the data padded
// to 8 bytes; object 0 is the free space, whose size includes its own header and is not padded.
#include "hdf5_heap_guard.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "ismrmrd_common.hpp"

namespace mri::detail {
namespace {

// Little-endian unsigned of `bytes` (<= 8) bytes: HDF5's encoding of addresses and lengths.
std::uint64_t decode(const unsigned char *p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes; i-- > 0;) v = v << 8 | p[i];
  return v;
}

std::uint64_t align8(std::uint64_t n) { return (n + 7) / 8 * 8; }

// The file's bytes by offset, read with pread beside HDF5's own handle, 4 KiB at a time: a
// collection's header and its first object's come in one read.
class FileBytes {
public:
  explicit FileBytes(const std::filesystem::path &path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0) size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~FileBytes() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileBytes(const FileBytes &) = delete;
  FileBytes &operator=(const FileBytes &) = delete;

  std::uint64_t size() const { return size_; }
  // False for a range that is not wholly inside the file.
  bool read(std::uint64_t offset, void *out, std::size_t n) {
    if (fd_ < 0 || offset > size_ || n > size_ - offset) return false;
    if (n > kBlock) return pread_all(offset, out, n);
    if (offset < block_at_ || offset + n > block_at_ + block_.size()) {
      block_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, size_ - offset)));
      block_at_ = offset;
      if (!pread_all(offset, block_.data(), block_.size())) return false;
    }
    std::memcpy(out, block_.data() + (offset - block_at_), n);
    return true;
  }

private:
  static constexpr std::size_t kBlock = 4096;

  bool pread_all(std::uint64_t offset, void *out, std::size_t n) const {
    auto *dst = static_cast<char *>(out);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
      if (got <= 0) return false;
      dst += got, offset += static_cast<std::uint64_t>(got), n -= static_cast<std::size_t>(got);
    }
    return true;
  }

  int fd_;
  std::uint64_t size_ = 0, block_at_ = 0;
  std::vector<unsigned char> block_;
};

// The superblock's sizes of addresses and lengths, and the base that addresses count from.
struct Format {
  std::size_t address = 0, length = 0;
  std::uint64_t base = 0;
  std::size_t descriptor() const { return 4 + address + 4; }
  std::size_t collection_header() const { return 8 + length; }
  std::size_t object_header() const { return 8 + length; }
};

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

// Where a stored element holds variable-length values: offset and bytes per value element.
struct VlenField {
  std::size_t offset, element_bytes;
};
struct Layout {
  std::size_t bytes = 0; // one stored element
  std::vector<VlenField> fields;
  bool visible = true;   // false: a variable-length value this walk cannot locate
  std::string misplaced; // the first compound member that does not fit in its compound, if any
};

bool is_vlen(hid_t type) {
  const H5T_class_t c = H5Tget_class(type);
  return c == H5T_VLEN || (c == H5T_STRING && H5Tis_variable_str(type) > 0);
}

std::size_t stored_layout(hid_t type, std::size_t at, const Format &f, Layout &out);

// A compound as stored: HDF5 stores each member at its offset in memory shifted by how much the
// members before it (by offset) grow or shrink on disk (H5T_set_loc), a variable-length member
// being 16 bytes in memory (hvl_t; a string's char *: 8) and descriptor() bytes on disk.
// HDF5 1.10.8 does not check that a member lies inside its compound when it decodes a type, and
// converts it wherever its offset says (fuzzing: a damaged "idx" at byte 8388850 of a 340-byte
// header, a SEGV in H5T__conv_struct_opt under H5Dread).
std::string misplaced(hid_t compound, int i, std::size_t offset, std::size_t bytes) {
  char *name = H5Tget_member_name(compound, static_cast<unsigned>(i));
  const std::string what = "member \"" + std::string(name == nullptr ? "?" : name) + "\" of " +
                           std::to_string(bytes) + " bytes at byte " + std::to_string(offset) + " of a " +
                           std::to_string(H5Tget_size(compound)) + "-byte compound";
  H5free_memory(name);
  return what;
}

std::size_t stored_compound(hid_t type, std::size_t at, const Format &f, Layout &out) {
  const int n = H5Tget_nmembers(type);
  std::vector<std::pair<std::size_t, int>> by_offset;
  for (int i = 0; i < n; ++i) by_offset.emplace_back(H5Tget_member_offset(type, static_cast<unsigned>(i)), i);
  std::sort(by_offset.begin(), by_offset.end());
  std::ptrdiff_t shift = 0;
  for (const auto &[offset, i] : by_offset) {
    const hid_t member = H5Tget_member_type(type, static_cast<unsigned>(i));
    if (out.misplaced.empty() && offset + H5Tget_size(member) > H5Tget_size(type))
      out.misplaced = misplaced(type, i, offset, H5Tget_size(member));
    const std::size_t at_member = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(offset) + shift);
    const std::size_t stored = stored_layout(member, at + at_member, f, out);
    shift += static_cast<std::ptrdiff_t>(stored) - static_cast<std::ptrdiff_t>(H5Tget_size(member));
    H5Tclose(member);
  }
  return static_cast<std::size_t>(static_cast<std::ptrdiff_t>(H5Tget_size(type)) + shift);
}

// Bytes per stored value element of a variable-length type; 0 when the elements themselves hold
// variable-length values (not walked).
std::size_t element_bytes(hid_t vlen, const Format &f) {
  if (H5Tget_class(vlen) == H5T_STRING) return 1;
  const hid_t base = H5Tget_super(vlen);
  Layout inner;
  const std::size_t bytes = stored_layout(base, 0, f, inner);
  H5Tclose(base);
  return inner.fields.empty() && inner.visible ? bytes : 0;
}

// The stored size of `type` placed at `at`; its variable-length fields appended to `out`.
std::size_t stored_layout(hid_t type, std::size_t at, const Format &f, Layout &out) {
  if (is_vlen(type)) {
    const std::size_t element = element_bytes(type, f);
    if (element == 0) out.visible = false;
    out.fields.push_back({at, element});
    return f.descriptor();
  }
  if (H5Tget_class(type) == H5T_COMPOUND) return stored_compound(type, at, f, out);
  if (H5Tget_class(type) == H5T_ARRAY) {
    const hid_t base = H5Tget_super(type);
    Layout inner;
    stored_layout(base, 0, f, inner);
    H5Tclose(base);
    if (!inner.fields.empty() || !inner.visible) out.visible = false;
  }
  return H5Tget_size(type);
}

// One collection's objects as walked: index -> stored size.
using Objects = std::map<std::uint32_t, std::uint64_t>;

// The walk of one dataset's values through the collections they name.
class HeapWalk {
public:
  HeapWalk(const std::filesystem::path &path, hid_t file, const std::string &name)
      : path_(path), name_(name), bytes_(path), format_(format_of(file)) {}

  [[noreturn]] void fail(const std::string &what) const { ismrmrd_io_error(path_, name_ + ": " + what); }

  const Format &format() const { return format_; }
  FileBytes &bytes() { return bytes_; }

  // The stored element `index` (at `record`): each variable-length value's collection and object.
  void check_element(const unsigned char *record, std::uint64_t index, const Layout &layout) {
    for (const VlenField &field : layout.fields) {
      const unsigned char *d = record + field.offset;
      const std::uint64_t length = decode(d, 4), address = decode(d + 4, format_.address);
      const auto object = static_cast<std::uint32_t>(decode(d + 4 + format_.address, 4));
      if (address == 0) continue; // no value (HDF5's "null" sequence): nothing read from a heap
      const Objects &objects = collection(address, index);
      const auto found = objects.find(object);
      const std::string value = "element " + std::to_string(index) + "'s value (object " + std::to_string(object) +
                                " of the global heap collection at " + std::to_string(address) + ")";
      if (found == objects.end()) fail(value + ": the collection has no such object");
      if (found->second != length * field.element_bytes)
        fail(value + ": " + std::to_string(length) + " elements of " + std::to_string(field.element_bytes) +
             " bytes, but the object stores " + std::to_string(found->second) + " bytes");
    }
  }

private:
  // The collection at `address`, walked once.
  const Objects &collection(std::uint64_t address, std::uint64_t index) {
    const auto known = walked_.find(address);
    if (known != walked_.end()) return known->second;
    return walked_[address] = walk(address, "element " + std::to_string(index) + " names the global heap collection at " +
                                                std::to_string(address) + ": ");
  }

  Objects walk(std::uint64_t address, const std::string &where) {
    const std::uint64_t start = format_.base + address;
    unsigned char head[16 + 8];
    if (address > bytes_.size() || !bytes_.read(start, head, format_.collection_header()))
      fail(where + "its header lies past the end of the file (" + std::to_string(bytes_.size()) + " bytes)");
    if (std::memcmp(head, "GCOL", 4) != 0) fail(where + "no \"GCOL\" signature there");
    if (head[4] != 1) fail(where + "version " + std::to_string(head[4]) + " (1 expected)");
    const std::uint64_t size = decode(head + 8, format_.length);
    if (size < format_.collection_header() || size > bytes_.size() - start)
      fail(where + "its size " + std::to_string(size) + " does not fit in the file after it (" +
           std::to_string(bytes_.size() - start) + " bytes)");
    return objects(start, size, where);
  }

  // The objects from the collection's header to its end; every step must advance and stay inside
  // (what HDF5 1.10.8 does not check: hdf5_heap_guard.hpp).
  Objects objects(std::uint64_t start, std::uint64_t size, const std::string &where) {
    Objects out;
    const std::size_t header = format_.object_header();
    for (std::uint64_t at = format_.collection_header(); at < size;) {
      if (size - at < header) break; // too small for an object: free space (as HDF5 reads it)
      unsigned char h[8 + 8];
      if (!bytes_.read(start + at, h, header)) fail(where + "cannot read it");
      const auto index = static_cast<std::uint32_t>(decode(h, 2));
      const std::uint64_t stored = decode(h + 8, format_.length), left = size - at;
      const std::uint64_t step = index > 0 ? (stored > left ? left + 1 : header + align8(stored)) : stored;
      if (step < header || step > left)
        fail(where + "object " + std::to_string(index) + " at byte " + std::to_string(at) + " of its " +
             std::to_string(size) + " has size " + std::to_string(stored) + ", which " +
             (step < header ? "is smaller than its own header" : "runs past the collection's end"));
      if (index > 0) out[index] = stored;
      at += step;
    }
    return out;
  }

  std::filesystem::path path_;
  std::string name_;
  FileBytes bytes_;
  Format format_;
  std::map<std::uint64_t, Objects> walked_;
};

// Where H5Dread_chunk may write. HDF5 1.10.8 writes as many bytes as the chunk index's record
// says (a 32-bit length), not the chunk's size, which H5Dget_chunk_storage_size reports for an
// unfiltered chunk: a damaged length overran a buffer of that size (found by fuzzing this guard).
// 4 GiB of address space is reserved, untouched pages cost nothing; H5Dget_chunk_info_by_coord,
// which gives the length, walks the whole chunk index per call (quadratic: 2 s for 16384 chunks).
class ChunkBuffer {
public:
  explicit ChunkBuffer(std::size_t bytes) : span_((std::size_t{1} << 32) + bytes) {
    void *p = ::mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<unsigned char *>(p);
  }
  ~ChunkBuffer() {
    if (data_ != nullptr) ::munmap(data_, span_);
  }
  ChunkBuffer(const ChunkBuffer &) = delete;
  ChunkBuffer &operator=(const ChunkBuffer &) = delete;
  unsigned char *data() const { return data_; }

private:
  std::size_t span_;
  unsigned char *data_;
};

// The chunk at `first`, all its bytes or false. A length past the chunk costs nothing here (the
// buffer holds it; the chunk's own bytes come first); a shorter one leaves the buffer's bytes
// where the chunk's should be. Its last byte, set to 0xa5 first and written over, means the
// whole chunk was read; otherwise it is read over 0x00 and over 0xff and must read the same.
bool read_chunk(hid_t dataset, hsize_t first, unsigned char *buf, std::vector<unsigned char> &out) {
  const std::size_t bytes = out.size();
  std::uint32_t filters = 0;
  buf[bytes - 1] = 0xa5;
  if (H5Dread_chunk(dataset, H5P_DEFAULT, &first, &filters, buf) < 0) return false;
  if (buf[bytes - 1] == 0xa5) {
    std::memset(buf, 0x00, bytes);
    if (H5Dread_chunk(dataset, H5P_DEFAULT, &first, &filters, buf) < 0) return false;
    std::memcpy(out.data(), buf, bytes);
    std::memset(buf, 0xff, bytes);
    if (H5Dread_chunk(dataset, H5P_DEFAULT, &first, &filters, buf) < 0) return false;
    if (std::memcmp(out.data(), buf, bytes) != 0) return false;
  }
  std::memcpy(out.data(), buf, bytes);
  return true;
}

// Why the walk cannot see the stored values (empty: it can).
std::string unchecked_storage(hid_t dcpl, int rank) {
  if (H5Pget_nfilters(dcpl) > 0) return "its chunks are filtered (compressed)";
  H5D_fill_value_t fill{};
  if (H5Pfill_value_defined(dcpl, &fill) < 0 || fill == H5D_FILL_VALUE_USER_DEFINED)
    return "it has a fill value of its own";
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if (layout == H5D_CHUNKED && rank != 1) return "it is chunked with rank " + std::to_string(rank);
  if (layout != H5D_CHUNKED && layout != H5D_CONTIGUOUS) return "it is stored compact or virtual";
  return {};
}

// The stored type's variable-length fields, refused where the walk could not locate them.
Layout checked_layout(HeapWalk &walk, hid_t dataset) {
  const Format &f = walk.format();
  const hid_t type = H5Dget_type(dataset);
  if (type < 0) walk.fail("HDF5 cannot read its type");
  Layout layout;
  layout.bytes = stored_layout(type, 0, f, layout);
  H5Tclose(type);
  if (!layout.misplaced.empty()) walk.fail("its type's " + layout.misplaced);
  if (layout.fields.empty()) return layout; // nothing read from a global heap
  if (f.address < 2 || f.address > 8 || f.length < 2 || f.length > 8)
    walk.fail("addresses of " + std::to_string(f.address) + " and lengths of " + std::to_string(f.length) +
              " bytes: not checked");
  if (layout.bytes == 0) walk.fail("HDF5 cannot tell the size of its type");
  // A damaged compound can place a member past the element's end (fuzzing: a read past the chunk).
  for (const VlenField &field : layout.fields)
    if (field.offset > layout.bytes || layout.bytes - field.offset < f.descriptor())
      walk.fail("a variable-length member at byte " + std::to_string(field.offset) + " of a " +
                std::to_string(layout.bytes) + "-byte element");
  if (!layout.visible) walk.fail("holds variable-length values inside arrays or sequences: not checked");
  return layout;
}

// Where the elements lie: contiguous from `offset`, or in chunks of `chunk` elements.
struct Storage {
  hsize_t elements = 0;
  hsize_t chunk = 0;            // 0: contiguous
  haddr_t offset = HADDR_UNDEF; // contiguous: the first element's byte (undefined: none stored, all fill values)
  std::vector<bool> stored;     // chunked: per chunk, whether it is written (else fill values)
};

Storage contiguous_storage(HeapWalk &walk, hid_t dataset, hsize_t n, const Layout &layout) {
  Storage s{n, 0, H5Dget_offset(dataset), {}}; // in the file, the user block included
  if (s.offset != HADDR_UNDEF && n > 0 &&
      (n > walk.bytes().size() / layout.bytes || s.offset > walk.bytes().size() - n * layout.bytes))
    walk.fail(std::to_string(n) + " elements of " + std::to_string(layout.bytes) + " bytes at " +
              std::to_string(s.offset) + " run past the end of the file");
  return s;
}

// Every chunk's stored size, before HDF5 reads any of them (with Walk::check_chunk_records): whoever
// reads the dataset first (the ISMRMRD reader reads every acquisition's header when it opens the
// file, the variable-length values later) must not meet a chunk smaller than its elements.
void check_chunk_sizes(HeapWalk &walk, hid_t dataset, Storage &s, const Layout &layout) {
  const std::size_t chunk_bytes = s.chunk * layout.bytes;
  for (hsize_t start = 0; start < s.elements; start += s.chunk) {
    hsize_t stored = 0;
    if (H5Dget_chunk_storage_size(dataset, &start, &stored) < 0)
      walk.fail("HDF5 cannot find the chunk of element " + std::to_string(start));
    s.stored.push_back(stored > 0);
    if (stored == 0) continue; // not written: fill values
    if (stored != chunk_bytes) // HDF5's size of an unfiltered chunk: its type as stored, which `layout` must match
      walk.fail("chunks of " + std::to_string(stored) + " bytes, but " + std::to_string(s.chunk) + " elements of " +
                std::to_string(layout.bytes) + ": not checked");
    // A stored chunk lies in the file: a damaged chunk size must not cost its bytes in memory
    // (fuzzing: 906 MB asked of a 26 KB file, 1.8 GB resident).
    if (chunk_bytes > walk.bytes().size())
      walk.fail("a stored chunk of " + std::to_string(chunk_bytes) + " bytes, larger than the file (" +
                std::to_string(walk.bytes().size()) + " bytes)");
  }
}

Storage chunked_storage(HeapWalk &walk, hid_t dataset, hid_t dcpl, hsize_t n, const Layout &layout) {
  Storage s{n, 0, HADDR_UNDEF, {}};
  if (H5Pget_chunk(dcpl, 1, &s.chunk) != 1 || s.chunk == 0) walk.fail("chunked, but not as a list: not checked");
  if (s.chunk > (std::uint64_t{1} << 32) / layout.bytes) walk.fail("chunks of " + std::to_string(s.chunk) + " elements");
  check_chunk_sizes(walk, dataset, s, layout);
  return s;
}

Storage checked_storage(HeapWalk &walk, hid_t dataset, const Layout &layout) {
  const hid_t space = H5Dget_space(dataset), dcpl = H5Dget_create_plist(dataset);
  const hssize_t n = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
  const int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
  if (space >= 0) H5Sclose(space);
  if (dcpl < 0 || n < 0) {
    if (dcpl >= 0) H5Pclose(dcpl);
    walk.fail("HDF5 cannot tell its size or storage");
  }
  try {
    const std::string unchecked = unchecked_storage(dcpl, rank);
    if (!unchecked.empty()) walk.fail("holds variable-length values, but " + unchecked + ": not checked");
    const auto elements = static_cast<hsize_t>(n);
    Storage s = H5Pget_layout(dcpl) == H5D_CHUNKED ? chunked_storage(walk, dataset, dcpl, elements, layout)
                                                    : contiguous_storage(walk, dataset, elements, layout);
    H5Pclose(dcpl);
    return s;
  } catch (...) {
    H5Pclose(dcpl);
    throw;
  }
}

} // namespace

// The walk of one dataset, range after range: its layout and storage checked once, the chunk
// buffer reserved once, and every collection walked once.
class VlenHeapGuard::Walk {
public:
  Walk(const std::filesystem::path &path, hid_t file, hid_t dataset, const std::string &name)
      : heap_(path, file, name), dataset_(dataset), layout_(checked_layout(heap_, dataset)) {
    if (layout_.fields.empty()) return;
    storage_ = checked_storage(heap_, dataset, layout_);
    if (storage_.chunk > 0) {
      buffer_ = std::make_unique<ChunkBuffer>(storage_.chunk * layout_.bytes);
      if (buffer_->data() == nullptr) heap_.fail("no address space to read its chunks");
      check_chunk_records();
    }
  }

  void check(hsize_t first, hsize_t count) {
    if (layout_.fields.empty() || first >= storage_.elements) return;
    const hsize_t last = first + std::min(count, storage_.elements - first);
    if (storage_.chunk > 0) check_chunks(first, last);
    else if (storage_.offset != HADDR_UNDEF) check_contiguous(first, last);
  }

private:
  // Elements [first, last) read from the file in pieces of about 1 MiB.
  void check_contiguous(hsize_t first, hsize_t last) {
    const hsize_t per_piece = std::max<hsize_t>(1, (1 << 20) / layout_.bytes);
    for (hsize_t at = first; at < last; at += per_piece) {
      const hsize_t count = std::min(per_piece, last - at);
      raw_.resize(count * layout_.bytes);
      heap_.bytes().read(storage_.offset + at * layout_.bytes, raw_.data(), raw_.size());
      for (hsize_t i = 0; i < count; ++i) heap_.check_element(raw_.data() + i * layout_.bytes, at + i, layout_);
    }
  }

  // Elements [first, last), chunk by chunk as stored (libismrmrd: one acquisition a chunk).
  void check_chunks(hsize_t first, hsize_t last) {
    const hsize_t chunk = storage_.chunk;
    for (hsize_t start = first / chunk * chunk; start < last; start += chunk) {
      if (!read_stored_chunk(start)) continue; // not written: fill values
      for (hsize_t i = std::max(start, first); i < std::min(start + chunk, last); ++i)
        heap_.check_element(raw_.data() + (i - start) * layout_.bytes, i, layout_);
    }
  }

  // Every stored chunk read whole through its chunk index record, before HDF5 reads any of them:
  // a record shorter than the chunk's elements made H5Dread of the acquisitions' headers (which
  // the ISMRMRD reader reads when it opens the file) copy 477 bytes out of a 384-byte buffer
  // (ASan; found by fuzzing once this guard checked block by block). The collections the chunks
  // name are walked later, range by range.
  void check_chunk_records() {
    for (hsize_t start = 0; start < storage_.elements; start += storage_.chunk) (void)read_stored_chunk(start);
  }

  // The chunk whose first element is `start` into raw_ (its stored size checked at construction);
  // false when it is not stored.
  bool read_stored_chunk(hsize_t start) {
    if (!storage_.stored[start / storage_.chunk]) return false;
    raw_.resize(storage_.chunk * layout_.bytes);
    if (!read_chunk(dataset_, start, buffer_->data(), raw_))
      heap_.fail("the chunk index's record of element " + std::to_string(start) + " gives fewer than its " +
                 std::to_string(raw_.size()) + " bytes");
    return true;
  }

  HeapWalk heap_;
  hid_t dataset_;
  Layout layout_;
  Storage storage_;
  std::unique_ptr<ChunkBuffer> buffer_;
  std::vector<unsigned char> raw_; // the elements being checked, as stored
};

VlenHeapGuard::VlenHeapGuard(const std::filesystem::path &path, hid_t file, hid_t dataset, const std::string &name)
    : walk_(std::make_unique<Walk>(path, file, dataset, name)) {}

VlenHeapGuard::~VlenHeapGuard() = default;

void VlenHeapGuard::check(std::uint64_t first, std::uint64_t count) { walk_->check(first, count); }

void check_vlen_heaps(const std::filesystem::path &path, hid_t file, hid_t dataset, const std::string &name) {
  VlenHeapGuard(path, file, dataset, name).check(0, std::numeric_limits<std::uint64_t>::max());
}

} // namespace mri::detail
