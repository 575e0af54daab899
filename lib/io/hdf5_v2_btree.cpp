// A version 2 B-tree checked in the file's bytes (hdf5_v2_btree.hpp). The layouts are those of
// the HDF5 file format specification (version 0 of each structure):
// - header: "BTHD", version, type (1), node size (4), record size (2), depth (2), split and merge
//   percents (1 each), root node address (O), records in the root (2), records in the tree (L),
//   checksum;
// - leaf node: "BTLF", version, type, its records, checksum (to the node size);
// - internal node: "BTIN", version, type, its n records, then n + 1 child pointers of address
//   (O), records in the child, and (below depth 2) records in the child's subtree, checksum.
// How many records a node of each depth holds, and the sizes of the counts, follow from the node
// size: a leaf holds (node size - 10) / record size; the child record counts are encoded in the
// bytes a leaf's maximum needs (log2 / 8 + 1), a subtree's total in those its depth's maximum
// needs; a node at depth d holds (node size - 10 - pointer) / (record size + pointer).
#include "hdf5_v2_btree.hpp"

#include <bit>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace mri::detail {
namespace {

std::string at(std::uint64_t address) { return " at " + std::to_string(address); }

// The bytes HDF5 encodes a count of at most n in.
std::size_t count_bytes(std::uint64_t n) { return static_cast<std::size_t>((std::bit_width(n | 1) - 1) / 8 + 1); }

struct Level {
  std::uint64_t max = 0, subtree = 0; // records a node holds; a subtree rooted at such a node
  std::size_t subtree_bytes = 0;      // the bytes of a subtree's total in a parent's pointer
};

class V2BTree {
public:
  V2BTree(FileBytes &bytes, const Format &format, const char *what, unsigned type, std::size_t record_size,
          const std::function<void(const unsigned char *)> &record)
      : bytes_(bytes), format_(format), what_(what), type_(type), record_size_(record_size), record_(record) {}

  void walk(std::uint64_t address) {
    const std::size_t o = format_.address, l = format_.length;
    const std::vector<unsigned char> b = read(address, 22 + o + l, "header");
    if (std::memcmp(b.data(), "BTHD", 4) != 0 || b[4] != 0 || b[5] != type_)
      refuse(what_ + "'s header" + at(address) + " is not a version 0 B-tree header of type " +
             std::to_string(type_));
    Cursor c(b.data() + 6, b.size() - 6, nullptr);
    node_size_ = c.take(4);
    const std::uint64_t record_size = c.take(2), depth = c.take(2);
    c.skip(2); // split and merge percents: used by writes
    const std::uint64_t root = c.take(o), root_records = c.take(2), total = c.take(l);
    if (record_size != record_size_)
      refuse(what_ + " has records of " + std::to_string(record_size) + " bytes, not " +
             std::to_string(record_size_));
    levels(depth);
    const std::uint64_t held = root == format_.undefined() ? 0 : node(root, static_cast<unsigned>(depth), root_records);
    if (held != total)
      refuse(what_ + "'s header says it holds " + std::to_string(total) + " records; its nodes hold " +
             std::to_string(held));
  }

private:
  std::vector<unsigned char> read(std::uint64_t address, std::uint64_t size, const char *part) {
    const std::uint64_t room = bytes_.size() - std::min(bytes_.size(), format_.base);
    std::vector<unsigned char> out;
    if (address <= room && size <= room - address) {
      out.resize(static_cast<std::size_t>(size));
      if (bytes_.read(format_.base + address, out.data(), out.size())) return out;
    }
    refuse(what_ + "'s " + part + at(address) + " of " + std::to_string(size) + " bytes is not inside the file");
  }

  // What a node of each depth up to `depth` holds, as HDF5 computes it when it loads the header.
  void levels(std::uint64_t depth) {
    const std::string nodes = " nodes of " + std::to_string(node_size_) + " bytes";
    if (node_size_ < 10 + record_size_) refuse(what_ + "'s" + nodes + " hold no record");
    levels_.assign(1, Level{(node_size_ - 10) / record_size_, (node_size_ - 10) / record_size_, 0});
    const std::size_t child_count = count_bytes(levels_[0].max);
    for (std::uint64_t d = 1; d <= depth; ++d) {
      const Level &below = levels_.back();
      const std::uint64_t pointer = format_.address + child_count + below.subtree_bytes;
      const std::uint64_t max = node_size_ < 10 + pointer ? 0 : (node_size_ - 10 - pointer) / (record_size_ + pointer);
      if (max == 0 || below.subtree > (std::numeric_limits<std::uint64_t>::max() / 2 - max) / (max + 1))
        refuse(what_ + " has a depth of " + std::to_string(depth) + ", more than" + nodes + " can make");
      const std::uint64_t subtree = (max + 1) * below.subtree + max;
      levels_.push_back(Level{max, subtree, count_bytes(subtree)});
    }
  }

  // The records of the subtree at `address`, at `depth`, whose parent says its node holds `count`.
  std::uint64_t node(std::uint64_t address, unsigned depth, std::uint64_t count) {
    const std::string here = what_ + "'s node" + at(address);
    if (count > levels_[depth].max)
      refuse(here + " (depth " + std::to_string(depth) + ") is said to hold " + std::to_string(count) +
             " records, more than the " + std::to_string(levels_[depth].max) + " it can");
    if (!seen_.insert(address).second) refuse(here + " is reached twice");
    const std::vector<unsigned char> b = read(address, node_size_, "node");
    if (std::memcmp(b.data(), depth > 0 ? "BTIN" : "BTLF", 4) != 0 || b[4] != 0 || b[5] != type_)
      refuse(here + " is not a version 0 " + (depth > 0 ? "internal" : "leaf") + " node of type " +
             std::to_string(type_));
    const std::size_t records_end = 6 + static_cast<std::size_t>(count) * record_size_;
    for (std::size_t r = 6; r < records_end; r += record_size_) record_(&b[r]);
    if (depth == 0) return count;
    // The pointers fit: `count` is at most what the node holds with them.
    Cursor c(&b[records_end], b.size() - records_end, nullptr);
    const std::size_t child_count = count_bytes(levels_[0].max), subtree_bytes = levels_[depth - 1].subtree_bytes;
    std::uint64_t held = count;
    for (std::uint64_t i = 0; i <= count; ++i) {
      const std::uint64_t child = c.take(format_.address), records = c.take(child_count);
      const std::uint64_t said = depth > 1 ? c.take(subtree_bytes) : records;
      const std::uint64_t got = node(child, depth - 1, records);
      if (got != said)
        refuse(here + " says its child" + at(child) + " holds " + std::to_string(said) + " records; it holds " +
               std::to_string(got));
      held += got;
    }
    return held;
  }

  FileBytes &bytes_;
  const Format &format_;
  const std::string what_;
  unsigned type_;
  std::size_t record_size_;
  const std::function<void(const unsigned char *)> &record_;
  std::uint64_t node_size_ = 0;
  std::vector<Level> levels_;
  std::set<std::uint64_t> seen_; // a node reached twice would be walked again, and again
};

} // namespace

void walk_v2_btree(FileBytes &bytes, const Format &format, std::uint64_t address, unsigned type,
                   std::size_t record_size, const char *what, const std::function<void(const unsigned char *)> &record) {
  V2BTree(bytes, format, what, type, record_size, record).walk(address);
}

} // namespace mri::detail
