// Global heap collections checked in the file's bytes before HDF5 reads them (hdf5_heap_guard.hpp).
// The layouts are those of the HDF5 file format specification, version 0 to 3 superblocks:
// a variable-length value is stored as its length (4 bytes), the collection's address and the
// object's index (4 bytes); a collection is "GCOL", version 1, 3 reserved bytes, its size, then
// objects of index (2 bytes), reference count (2), 4 reserved bytes, size, and the data padded
// to 8 bytes; object 0 is the free space, whose size includes its own header and is not padded.
#include "hdf5_heap_guard.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "hdf5_file_bytes.hpp"
#include "ismrmrd_common.hpp"

namespace mri::detail {
namespace {

std::uint64_t align8(std::uint64_t n) { return (n + 7) / 8 * 8; }

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

// A variable-length value as stored in its element: where its bytes are and how many.
struct Descriptor {
  std::uint64_t address; // of the collection, from the superblock's base (0: no value)
  std::uint32_t length;  // in elements of the value's base type
  std::uint32_t object;  // index in the collection
};

// The walk of one dataset's values through the collections they name.
class HeapWalk {
public:
  HeapWalk(const std::filesystem::path &path, hid_t file, const std::string &name)
      : path_(path), name_(name), bytes_(path), format_(format_of(file)) {}

  [[noreturn]] void fail(const std::string &what) const { ismrmrd_io_error(path_, name_ + ": " + what); }

  const Format &format() const { return format_; }
  FileBytes &bytes() { return bytes_; }

  // The descriptors of the variable-length values in the stored element at `record`.
  void descriptors(const unsigned char *record, const Layout &layout, std::vector<Descriptor> &out) const {
    for (const VlenField &field : layout.fields) {
      const unsigned char *d = record + field.offset;
      out.push_back({decode_le(d + 4, format_.address), static_cast<std::uint32_t>(decode_le(d, 4)),
                     static_cast<std::uint32_t>(decode_le(d + 4 + format_.address, 4))});
    }
  }

  // Element `index`'s value `v` (`field` of the layout) against the collection it names.
  void check_value(const Descriptor &v, std::uint64_t index, const VlenField &field) {
    if (v.address == 0) return; // no value (HDF5's "null" sequence): nothing read from a heap
    const Objects &objects = collection(v.address, index);
    const auto found = objects.find(v.object);
    if (found != objects.end() && found->second == std::uint64_t{v.length} * field.element_bytes) return;
    const std::string value = "element " + std::to_string(index) + "'s value (object " + std::to_string(v.object) +
                              " of the global heap collection at " + std::to_string(v.address) + ")";
    if (found == objects.end()) fail(value + ": the collection has no such object");
    fail(value + ": " + std::to_string(v.length) + " elements of " + std::to_string(field.element_bytes) +
         " bytes, but the object stores " + std::to_string(found->second) + " bytes");
  }

private:
  // The collection at `address`, walked once.
  const Objects &collection(std::uint64_t address, std::uint64_t index) {
    const auto known = walked_.find(address);
    if (known != walked_.end()) return known->second;
    return walked_[address] = walk(address, Where{address, index});
  }

  // The collection being walked and the element that named it first, for the error (built only
  // then: a file's walk makes one per collection).
  struct Where {
    std::uint64_t address, index;
    std::string operator+(const std::string &what) const {
      return "element " + std::to_string(index) + " names the global heap collection at " + std::to_string(address) +
             ": " + what;
    }
  };

  Objects walk(std::uint64_t address, const Where &where) {
    const std::uint64_t start = format_.base + address;
    unsigned char head[16 + 8];
    if (address > bytes_.size() || !bytes_.read(start, head, format_.collection_header()))
      fail(where + "its header lies past the end of the file (" + std::to_string(bytes_.size()) + " bytes)");
    if (std::memcmp(head, "GCOL", 4) != 0) fail(where + "no \"GCOL\" signature there");
    if (head[4] != 1) fail(where + "version " + std::to_string(head[4]) + " (1 expected)");
    const std::uint64_t size = decode_le(head + 8, format_.length);
    if (size < format_.collection_header() || size > bytes_.size() - start)
      fail(where + "its size " + std::to_string(size) + " does not fit in the file after it (" +
           std::to_string(bytes_.size() - start) + " bytes)");
    return objects(start, size, where);
  }

  // The objects from the collection's header to its end; every step must advance and stay inside
  // (what HDF5 1.10.8 does not check: hdf5_heap_guard.hpp).
  Objects objects(std::uint64_t start, std::uint64_t size, const Where &where) {
    Objects out;
    const std::size_t header = format_.object_header();
    for (std::uint64_t at = format_.collection_header(); at < size;) {
      if (size - at < header) break; // too small for an object: free space (as HDF5 reads it)
      unsigned char h[8 + 8];
      if (!bytes_.read(start + at, h, header)) fail(where + "cannot read it");
      const auto index = static_cast<std::uint32_t>(decode_le(h, 2));
      const std::uint64_t stored = decode_le(h + 8, format_.length), left = size - at;
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
  std::unordered_map<std::uint64_t, Objects> walked_;
};

// Where H5Dread_chunk may write. HDF5 1.10.8 writes as many bytes as the chunk index's record
// says (a 32-bit length), not the chunk's size, which H5Dget_chunk_storage_size reports for an
// unfiltered chunk: a damaged length overran a buffer of that size (found by fuzzing this guard).
// 4 GiB of address space is reserved, untouched pages cost nothing; H5Dget_chunk_info_by_coord,
// which gives the length, walks the whole chunk index per call (quadratic: seconds for a file of
// 16384 chunks).
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
  if (!f.decodable())
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

// Every chunk's stored size, before HDF5 reads any of them (with Walk::read_chunks): whoever
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

// The walk of one dataset, range after range: its layout and storage checked once, every stored
// element read once (its chunk index records too) when the guard is made, keeping only the
// values' descriptors (16 bytes each), and every collection walked once. check() then reads
// nothing but the collections, with pread: no HDF5 call, so no HDF5 lock.
class VlenHeapGuard::Walk {
public:
  Walk(const std::filesystem::path &path, hid_t file, hid_t dataset, const std::string &name)
      : heap_(path, file, name), layout_(checked_layout(heap_, dataset)) {
    if (layout_.fields.empty()) return;
    storage_ = checked_storage(heap_, dataset, layout_);
    if (storage_.chunk > 0) read_chunks(dataset);
    else if (storage_.offset != HADDR_UNDEF) read_contiguous();
  }

  void check(hsize_t first, hsize_t count) {
    if (layout_.fields.empty() || first >= storage_.elements) return;
    const hsize_t last = first + std::min(count, storage_.elements - first);
    for (hsize_t i = first; i < last; ++i) {
      const std::size_t at = values_of(i);
      if (at == kNone) continue; // a fill value: no value
      for (std::size_t f = 0; f < layout_.fields.size(); ++f)
        heap_.check_value(values_[at + f], i, layout_.fields[f]);
    }
  }

private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  // Where element i's descriptors begin in values_ (kNone: not stored, a fill value).
  std::size_t values_of(hsize_t i) const {
    if (storage_.chunk == 0) return storage_.offset == HADDR_UNDEF ? kNone : i * layout_.fields.size();
    const std::size_t first = chunk_values_[i / storage_.chunk];
    return first == kNone ? kNone : first + (i % storage_.chunk) * layout_.fields.size();
  }

  // Elements [first, last) as stored at `record`, their descriptors appended to values_.
  void keep(const unsigned char *record, hsize_t count) {
    for (hsize_t i = 0; i < count; ++i) heap_.descriptors(record + i * layout_.bytes, layout_, values_);
  }

  // The elements read from the file in pieces of about 1 MiB.
  void read_contiguous() {
    const hsize_t per_piece = std::max<hsize_t>(1, (1 << 20) / layout_.bytes);
    std::vector<unsigned char> raw;
    for (hsize_t at = 0; at < storage_.elements; at += per_piece) {
      const hsize_t count = std::min(per_piece, storage_.elements - at);
      raw.resize(count * layout_.bytes);
      heap_.bytes().read(storage_.offset + at * layout_.bytes, raw.data(), raw.size());
      keep(raw.data(), count);
    }
  }

  // Every stored chunk read whole through its chunk index record, before HDF5 reads any of them:
  // a record shorter than the chunk's elements made H5Dread of the acquisitions' headers (which
  // the ISMRMRD reader reads when it opens the file) copy 477 bytes out of a 384-byte buffer
  // (ASan; found by fuzzing once this guard checked block by block). The collections the chunks
  // name are walked later, range by range.
  void read_chunks(hid_t dataset) {
    const ChunkBuffer buffer(storage_.chunk * layout_.bytes);
    if (buffer.data() == nullptr) heap_.fail("no address space to read its chunks");
    std::vector<unsigned char> raw(storage_.chunk * layout_.bytes);
    for (hsize_t start = 0; start < storage_.elements; start += storage_.chunk) {
      // Not written: fill values, nothing kept (a damaged extent must not cost memory).
      chunk_values_.push_back(storage_.stored[start / storage_.chunk] ? values_.size() : kNone);
      if (chunk_values_.back() == kNone) continue;
      if (!read_chunk(dataset, start, buffer.data(), raw))
        heap_.fail("the chunk index's record of element " + std::to_string(start) + " gives fewer than its " +
                   std::to_string(raw.size()) + " bytes");
      keep(raw.data(), std::min(storage_.chunk, storage_.elements - start));
    }
  }

  HeapWalk heap_;
  Layout layout_;
  Storage storage_;
  std::vector<Descriptor> values_;        // the stored elements' values, fields after fields
  std::vector<std::size_t> chunk_values_; // per chunk: where its first element's are (kNone: not stored)
};

VlenHeapGuard::VlenHeapGuard(const std::filesystem::path &path, hid_t file, hid_t dataset, const std::string &name)
    : walk_(std::make_unique<Walk>(path, file, dataset, name)) {}

VlenHeapGuard::~VlenHeapGuard() = default;

void VlenHeapGuard::check(std::uint64_t first, std::uint64_t count) { walk_->check(first, count); }

void check_vlen_heaps(const std::filesystem::path &path, hid_t file, hid_t dataset, const std::string &name) {
  VlenHeapGuard(path, file, dataset, name).check(0, std::numeric_limits<std::uint64_t>::max());
}

} // namespace mri::detail
