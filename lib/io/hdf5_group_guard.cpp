// A group's symbol table or link messages checked in the file's bytes (hdf5_group_guard.hpp).
// The layouts are those of the HDF5 file format specification (superblock versions 0 to 3):
// - local heap: "HEAP", version 0, 3 reserved bytes, data segment size (L), offset of the first
//   free block (L; 1: none), data segment address (O); a free block holds the offset of the next
//   (L) and its own size (L);
// - version 1 B-tree node of a group: "TREE", type 0, level (1), children used (2), siblings
//   (2 O), then keys (heap offsets of names, L) and children (O) alternating, key first, 2K + 1
//   keys and 2K children allotted; a level 0 node's children are symbol table nodes;
// - symbol table node: "SNOD", version 1, reserved, entries used (2), then 2K' entries allotted
//   of name offset (L), object header address (O), cache type (4), reserved (4), scratch (16);
//   cache type 2 (a soft link) keeps the link value's heap offset (4) in the scratch;
// - link message (version 1): flags, link type (1, flag 0x08), creation order (8, flag 0x04),
//   character set (1, flag 0x10), name length (1 << (flags & 3) bytes), the name, then a hard
//   link's address, or a soft or user-defined link's value length (2) and value.
#include "hdf5_group_guard.hpp"

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "hdf5_fractal_heap.hpp"
#include "hdf5_object_header.hpp"
#include "hdf5_v2_btree.hpp"

namespace mri::detail {
namespace {

constexpr std::uint16_t kLinkInfo = 0x0002, kLinkMessage = 0x0006, kSymbolTable = 0x0011;
constexpr std::size_t kLinkHeapId = 7;        // the heap ID in a dense group's index records
constexpr unsigned kNameIndex = 5, kOrderIndex = 6; // their v2 B-tree record types
constexpr std::uint64_t kNoFreeBlock = 1; // HDF5's H5HL_FREE_NULL

std::string at(std::uint64_t address) { return " at " + std::to_string(address); }

// A local heap's data segment, read once: the names the B-tree and its nodes point into.
class LocalHeap {
public:
  LocalHeap(FileBytes &bytes, const Format &format, std::uint64_t address) : format_(format) {
    const std::size_t prefix = 8 + 2 * format.length + format.address;
    std::vector<unsigned char> head(prefix);
    if (!bytes.read(format.base + address, head.data(), prefix) || std::memcmp(head.data(), "HEAP", 4) != 0 ||
        head[4] != 0)
      refuse("its local heap" + at(address) + " is not a version 0 local heap inside the file");
    const std::uint64_t size = decode_le(&head[8], format.length);
    const std::uint64_t first_free = decode_le(&head[8 + format.length], format.length);
    const std::uint64_t data_at = decode_le(&head[8 + 2 * format.length], format.address);
    // HDF5 allocates the data segment by its size before reading it.
    if (data_at > bytes.size() || size > bytes.size() - data_at)
      refuse("its local heap's data segment" + at(data_at) + " of " + std::to_string(size) +
             " bytes is not inside the file");
    data_.resize(static_cast<std::size_t>(size));
    if (!bytes.read(format.base + data_at, data_.data(), data_.size()))
      refuse("its local heap's data segment" + at(data_at) + " cannot be read");
    check_free_list(first_free);
  }

  // The NUL-terminated name at `offset`; HDF5 compares and copies it with strcmp and strdup.
  void check_name(std::uint64_t offset, const char *whose) const {
    if (offset >= data_.size() || std::memchr(&data_[offset], 0, data_.size() - offset) == nullptr)
      refuse(std::string(whose) + " at heap offset " + std::to_string(offset) +
             " is not a NUL-terminated name inside the local heap's " + std::to_string(data_.size()) + " bytes");
  }

private:
  // HDF5 walks the list until "none", one allocation per block: a loop never ends (finding 18).
  // Each block's two fields are read at its offset; its size must fit in the data after it.
  void check_free_list(std::uint64_t offset) {
    const std::size_t fields = 2 * format_.length;
    std::set<std::uint64_t> seen;
    for (; offset != kNoFreeBlock; offset = decode_le(&data_[offset], format_.length)) {
      if (offset >= data_.size() || fields > data_.size() - offset)
        refuse("its local heap's free block at offset " + std::to_string(offset) + " is not inside its " +
               std::to_string(data_.size()) + " bytes");
      const std::uint64_t size = decode_le(&data_[offset + format_.length], format_.length);
      if (size < fields || size > data_.size() - offset)
        refuse("its local heap's free block at offset " + std::to_string(offset) + " has " + std::to_string(size) +
               " bytes, not between " + std::to_string(fields) + " and the " +
               std::to_string(data_.size() - offset) + " after it");
      if (!seen.insert(offset).second)
        refuse("its local heap's free list loops (back to the block at offset " + std::to_string(offset) + ")");
    }
  }

  const Format &format_;
  std::vector<unsigned char> data_;
};

// A symbol table's B-tree, node by node from its root, with the symbol table nodes it leads to.
class SymbolTable {
public:
  SymbolTable(FileBytes &bytes, const Format &format, const LocalHeap &heap, unsigned internal_k, unsigned leaf_k)
      : bytes_(bytes), format_(format), heap_(heap), two_k_(2 * internal_k), two_leaf_k_(2 * leaf_k) {}

  void check(std::uint64_t root) { node(root, -1); }

private:
  std::vector<unsigned char> read(std::uint64_t address, std::size_t n, const char *what) {
    std::vector<unsigned char> out(n);
    if (!seen_.insert(address).second) refuse(std::string(what) + at(address) + " is reached twice");
    if (!bytes_.read(format_.base + address, out.data(), n))
      refuse(std::string(what) + at(address) + " is not inside the file");
    return out;
  }

  // `level`: the parent's level minus 1 (-1 for the root, whose level is its own).
  void node(std::uint64_t address, int level) {
    const std::size_t head = 8 + 2 * format_.address, pair = format_.length + format_.address;
    const std::vector<unsigned char> b = read(address, head + two_k_ * pair + format_.length, "a B-tree node");
    const unsigned children = b[6] | b[7] << 8;
    if (std::memcmp(b.data(), "TREE", 4) != 0 || b[4] != 0)
      refuse("the B-tree node" + at(address) + " is not a group's B-tree node");
    if (level >= 0 && b[5] != level)
      refuse("the B-tree node" + at(address) + " has level " + std::to_string(b[5]) + " under a node of level " +
             std::to_string(level + 1));
    if (children > two_k_)
      refuse("the B-tree node" + at(address) + " has " + std::to_string(children) + " children, more than " +
             std::to_string(two_k_));
    // HDF5 decodes, and compares names by, children + 1 keys (none in an empty root).
    for (unsigned i = 0; children > 0 && i <= children; ++i)
      heap_.check_name(decode_le(&b[head + i * pair], format_.length), "a B-tree key");
    for (unsigned i = 0; i < children; ++i) {
      const std::uint64_t child = decode_le(&b[head + i * pair + format_.length], format_.address);
      if (b[5] == 0) symbols(child);
      else node(child, b[5] - 1);
    }
  }

  void symbols(std::uint64_t address) {
    const std::size_t entry = format_.length + format_.address + 24;
    const std::vector<unsigned char> s = read(address, 8 + two_leaf_k_ * entry, "a symbol table node");
    const unsigned used = s[6] | s[7] << 8;
    if (std::memcmp(s.data(), "SNOD", 4) != 0 || s[4] != 1)
      refuse("the symbol table node" + at(address) + " is not a version 1 symbol table node");
    if (used > two_leaf_k_)
      refuse("the symbol table node" + at(address) + " has " + std::to_string(used) + " entries, more than " +
             std::to_string(two_leaf_k_));
    for (unsigned i = 0; i < used; ++i) {
      const unsigned char *e = &s[8 + i * entry];
      heap_.check_name(decode_le(e, format_.length), "an entry's name");
      const unsigned char *cache = e + format_.length + format_.address;
      if (decode_le(cache, 4) == 2) heap_.check_name(decode_le(cache + 8, 4), "a soft link's value");
    }
  }

  FileBytes &bytes_;
  const Format &format_;
  const LocalHeap &heap_;
  unsigned two_k_, two_leaf_k_;
  std::set<std::uint64_t> seen_; // a node reached twice would be walked again, and again
};

// A link message's name and value, which HDF5 copies by their lengths. Versions, flags and link
// types HDF5 does not know it refuses itself.
void check_link(const unsigned char *data, std::size_t size, const Format &format) {
  Cursor c(data, size, "a link message");
  if (c.take(1) != 1) return;
  const auto flags = static_cast<unsigned>(c.take(1));
  const std::uint64_t type = (flags & 0x08) ? c.take(1) : 0;
  c.skip(((flags & 0x04) ? 8 : 0) + ((flags & 0x10) ? 1 : 0));
  c.skip(c.take(std::size_t{1} << (flags & 3))); // the name
  if (type == 0) c.skip(format.address);
  else if (type == 1 || type >= 64) c.skip(c.take(2)); // a soft link's path, a user-defined link's data
}

// Where a group keeps its links: a symbol table (old style), or a new-style group's dense storage
// (from its link info message; an undefined heap address: its link messages are compact).
struct Storage {
  std::uint64_t btree = 0, heap = 0;
  bool symbol_table = false;
  std::uint64_t dense_heap = 0, name_index = 0, order_index = 0;
  bool dense = false;
};

// A link info message: version 0, flags (0x01: creation order tracked, 0x02: indexed), the
// maximum creation index (8, flag 0x01), the fractal heap's address, the name index's, and the
// creation-order index's (flag 0x02). Other versions HDF5 refuses itself.
void link_info(const unsigned char *data, std::size_t size, const Format &format, Storage &storage) {
  Cursor c(data, size, "its link info message");
  if (c.take(1) != 0) return;
  const auto flags = static_cast<unsigned>(c.take(1));
  if (flags & 0x01) c.skip(8);
  storage.dense_heap = c.take(format.address);
  storage.name_index = c.take(format.address);
  storage.order_index = (flags & 0x02) ? c.take(format.address) : format.undefined();
  storage.dense = storage.dense_heap != format.undefined();
}

// The group's storage messages, once its (compact) link messages are checked.
Storage group_messages(FileBytes &bytes, const Format &format, std::uint64_t address) {
  Storage storage;
  visit_object_header(bytes, format, address,
                      [&](std::uint16_t type, unsigned, const unsigned char *data, std::size_t size) {
                        if (type == kLinkMessage) check_link(data, size, format);
                        if (type == kLinkInfo) link_info(data, size, format, storage);
                        if (type != kSymbolTable) return;
                        Cursor c(data, size, "its symbol table message");
                        storage.btree = c.take(format.address);
                        storage.heap = c.take(format.address);
                        storage.symbol_table = true;
                      });
  return storage;
}

// Dense storage: the fractal heap of link messages, then each index's records, each of which
// names a link message in the heap (the name index is what a lookup walks, the creation-order
// index what an iteration in that order walks).
void check_dense(FileBytes &bytes, const Format &format, const Storage &storage) {
  FractalHeap heap(bytes, format, storage.dense_heap);
  const auto link = [&](const unsigned char *id) {
    const std::vector<unsigned char> message = heap.object(id, kLinkHeapId);
    check_link(message.data(), message.size(), format);
  };
  walk_v2_btree(bytes, format, storage.name_index, kNameIndex, 4 + kLinkHeapId, "its link name index",
                [&](const unsigned char *record) { link(record + 4); }); // after the name's hash
  if (storage.order_index != format.undefined())
    walk_v2_btree(bytes, format, storage.order_index, kOrderIndex, 8 + kLinkHeapId, "its creation-order index",
                  [&](const unsigned char *record) { link(record + 8); }); // after the creation order
}

void check_group(FileBytes &bytes, const Format &format, hid_t file, std::uint64_t address) {
  const Storage storage = group_messages(bytes, format, address);
  if (storage.dense) check_dense(bytes, format, storage);
  if (!storage.symbol_table) return;
  unsigned internal_k = 0, leaf_k = 0;
  const hid_t fcpl = H5Fget_create_plist(file);
  const bool known = fcpl >= 0 && H5Pget_sym_k(fcpl, &internal_k, &leaf_k) >= 0;
  if (fcpl >= 0) H5Pclose(fcpl);
  if (!known) refuse("HDF5 cannot say its symbol table's node sizes");
  const LocalHeap heap(bytes, format, storage.heap); // first: a B-tree lookup loads the heap first
  SymbolTable(bytes, format, heap, internal_k, leaf_k).check(storage.btree);
}

std::uint64_t root_address(hid_t file) {
  H5O_info_t info{};
  if (H5Oget_info2(file, &info, H5O_INFO_BASIC) < 0) refuse("HDF5 cannot say where its object header is");
  return info.addr;
}

} // namespace

void check_groups(const std::filesystem::path &path, hid_t file, const std::string &group) {
  checked_by_bytes(path, file, "the root group", [&](FileBytes &bytes, const Format &format) {
    check_group(bytes, format, file, root_address(file));
  });
  if (H5Lexists(file, group.c_str(), H5P_DEFAULT) <= 0) return; // no such group: the caller says so
  checked_by_bytes(path, file, group, [&](FileBytes &bytes, const Format &format) {
    check_group(bytes, format, file, linked_address(file, group));
  });
}

} // namespace mri::detail
