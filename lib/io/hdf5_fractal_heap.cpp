// A fractal heap checked in the file's bytes (hdf5_fractal_heap.hpp). The layouts are those of
// the HDF5 file format specification (version 0 of each structure):
// - header: "FRHP", version, heap ID length (2), I/O filters' length (2), flags (1; 0x02: direct
//   blocks have checksums), maximum managed object size (4), next huge ID (L), huge objects'
//   B-tree (O), free space (L), free space manager (O), managed space, allocated managed space,
//   iterator offset, managed objects, huge size, huge objects, tiny size, tiny objects (L each),
//   then the doubling table: width (2), starting block size (L), maximum direct block size (L),
//   maximum heap size in bits (2), starting root rows (2), root block address (O), root rows (2;
//   0: the root is a direct block of the starting size), then the filter information, checksum;
// - the doubling table: rows 0 and 1 hold blocks of the starting size, row r > 1 of 2^(r-1)
//   times it, `width` blocks a row; rows whose blocks are at most the maximum direct block size
//   are direct blocks, later rows indirect blocks of log2(row block size / (start * width)) + 1
//   rows;
// - direct block: "FHDB", version, heap header address (O), its offset in the heap ((bits + 7)
//   / 8 bytes), checksum (4, if flag 0x02), then objects, to the row's block size;
// - indirect block: "FHIB", version, heap header address, offset, a child address (O) per entry
//   of its rows (an undefined address: none yet), checksum;
// - heap ID: version (bits 6-7) and type (bits 4-5: 0 managed, 1 huge, 2 tiny), then for a managed
//   object its offset in the heap and its length (min(max direct block size, max managed object
//   size) encoded: (log2 + 7) / 8 and log2 / 8 + 1 bytes), for a tiny one its length - 1 in bits
//   0-3 and its bytes.
#include "hdf5_fractal_heap.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

namespace mri::detail {
namespace {

std::string at(std::uint64_t address) { return " at " + std::to_string(address); }

bool power_of_two(std::uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

unsigned log2_of(std::uint64_t n) { return static_cast<unsigned>(std::bit_width(n) - 1); }

} // namespace

FractalHeap::FractalHeap(FileBytes &bytes, const Format &format, std::uint64_t address)
    : bytes_(bytes), format_(format), address_(address) {
  const std::size_t o = format.address, l = format.length;
  const std::vector<unsigned char> b = read(address, 26 + 12 * l + 3 * o, "its fractal heap header");
  if (std::memcmp(b.data(), "FRHP", 4) != 0 || b[4] != 0)
    refuse("its fractal heap header" + at(address) + " is not a version 0 fractal heap header");
  Cursor c(b.data() + 5, b.size() - 5, "its fractal heap header");
  id_length_ = c.take(2);
  const std::uint64_t filters = c.take(2);
  const auto flags = static_cast<unsigned>(c.take(1));
  max_object_ = c.take(4);
  c.skip(l); // the next huge object's ID
  // Its B-tree of huge objects (link messages past the managed size, 4 KiB in a group's heap):
  // HDF5 1.10.8 loads what a defined address names as it opens the heap, and a damaged one made
  // it crash when the file closed (a mutation of a fuzz corpus file's heap, checksum made right).
  const std::uint64_t huge = c.take(o);
  c.skip(l + o + 8 * l); // free space, statistics: used by writes
  width_ = static_cast<unsigned>(c.take(2));
  start_ = c.take(l);
  const std::uint64_t max_direct = c.take(l), bits = c.take(2);
  c.skip(2);
  const std::uint64_t root = c.take(o);
  const auto root_rows = static_cast<unsigned>(c.take(2));
  const std::string heap = "its fractal heap" + at(address);
  if (filters != 0) refuse(heap + " has I/O filters: not checked");
  if (huge != format.undefined()) refuse(heap + " has huge objects (a B-tree" + at(huge) + "): not checked");
  if (!power_of_two(width_)) refuse(heap + " has a table width of " + std::to_string(width_) + ", not a power of 2");
  width_bits_ = log2_of(width_);
  offset_bytes_ = (bits + 7) / 8;
  direct_overhead_ = 5 + o + offset_bytes_ + ((flags & 0x02) ? 4 : 0);
  if (bits > 64 || bits > 8 * l)
    refuse(heap + " has a maximum size of 2^" + std::to_string(bits) + " bytes, more than 2^" +
           std::to_string(std::min<std::size_t>(64, 8 * l)));
  if (!power_of_two(start_) || start_ <= direct_overhead_ || !power_of_two(max_direct) || max_direct < start_ ||
      log2_of(max_direct) >= bits || log2_of(start_) + width_bits_ > bits)
    refuse(heap + " has blocks of " + std::to_string(start_) + " to " + std::to_string(max_direct) +
           " bytes, not powers of 2 past their " + std::to_string(direct_overhead_) +
           "-byte header, in order, inside its 2^" + std::to_string(bits) + " bytes in rows of " +
           std::to_string(width_));
  if (max_object_ == 0 || max_object_ > max_direct - direct_overhead_)
    refuse(heap + " has managed objects of up to " + std::to_string(max_object_) +
           " bytes, more than a direct block holds");
  length_bytes_ = std::min<std::size_t>((log2_of(max_direct) + 7) / 8, log2_of(max_object_) / 8 + 1);
  direct_rows_ = log2_of(max_direct) - log2_of(start_) + 2;
  const unsigned max_rows = static_cast<unsigned>(bits) - log2_of(start_) - width_bits_ + 1;
  if (root_rows > max_rows)
    refuse(heap + " has a root indirect block of " + std::to_string(root_rows) + " rows, more than the " +
           std::to_string(max_rows) + " of its maximum size");
  if (root == format.undefined()) return; // no object yet
  if (root_rows == 0) direct(root, 0, start_);
  else indirect(root, 0, root_rows);
}

void FractalHeap::inside(std::uint64_t address, std::uint64_t size, const char *what) const {
  const std::uint64_t room = bytes_.size() - std::min(bytes_.size(), format_.base);
  if (address > room || size > room - address)
    refuse(std::string(what) + at(address) + " of " + std::to_string(size) + " bytes is not inside the file");
}

std::vector<unsigned char> FractalHeap::read(std::uint64_t address, std::uint64_t size, const char *what) {
  inside(address, size, what);
  std::vector<unsigned char> out(static_cast<std::size_t>(size));
  if (!bytes_.read(format_.base + address, out.data(), out.size()))
    refuse(std::string(what) + at(address) + " of " + std::to_string(size) + " bytes is not inside the file");
  return out;
}

// A block's signature, version, heap address and offset, which HDF5 locates objects by.
void FractalHeap::check_prefix(const std::vector<unsigned char> &b, const char *signature, std::uint64_t address,
                               std::uint64_t offset, const char *what) const {
  if (std::memcmp(b.data(), signature, 4) != 0 || b[4] != 0)
    refuse(std::string("its fractal heap's ") + what + at(address) + " is not a version 0 " + what);
  const std::uint64_t heap = decode_le(&b[5], format_.address);
  const std::uint64_t stored = decode_le(&b[5 + format_.address], offset_bytes_);
  if (heap != address_ || stored != offset)
    refuse(std::string("its fractal heap's ") + what + at(address) + " says it is at offset " +
           std::to_string(stored) + " of the heap" + at(heap) + ", not at offset " + std::to_string(offset) +
           " of the heap" + at(address_));
}

void FractalHeap::direct(std::uint64_t address, std::uint64_t offset, std::uint64_t size) {
  if (!seen_.insert(address).second)
    refuse("its fractal heap's block" + at(address) + " is reached twice");
  // The whole block is inside the file; HDF5 reads it all (and checks its checksum, if any).
  inside(address, size, "its fractal heap's direct block");
  check_prefix(read(address, direct_overhead_, "its fractal heap's direct block"), "FHDB", address, offset,
               "direct block");
  blocks_.emplace(offset, Block{address, size});
}

// The rows of an indirect block: direct blocks in the rows up to the maximum direct block size,
// indirect blocks of fewer rows than this one after them (so the walk ends).
void FractalHeap::indirect(std::uint64_t address, std::uint64_t offset, unsigned rows) {
  if (!seen_.insert(address).second)
    refuse("its fractal heap's block" + at(address) + " is reached twice");
  const std::size_t o = format_.address, prefix = 5 + o + offset_bytes_;
  const std::vector<unsigned char> b =
      read(address, prefix + std::uint64_t{rows} * width_ * o + 4, "its fractal heap's indirect block");
  check_prefix(b, "FHIB", address, offset, "indirect block");
  std::uint64_t child_offset = offset;
  for (unsigned row = 0; row < rows; ++row)
    for (unsigned col = 0; col < width_; ++col, child_offset += row_size(row)) {
      const std::uint64_t child = decode_le(&b[prefix + (std::size_t{row} * width_ + col) * o], o);
      if (child == format_.undefined()) continue;
      if (row < direct_rows_) direct(child, child_offset, row_size(row));
      else if (row > width_bits_) indirect(child, child_offset, row - width_bits_);
      else refuse("its fractal heap's indirect block" + at(child) + " in row " + std::to_string(row) +
                  " would have no rows (" + std::to_string(width_) + " blocks a row)");
    }
}

std::vector<unsigned char> FractalHeap::object(const unsigned char *id, std::size_t id_bytes) {
  const unsigned type = id[0] >> 4 & 3;
  if (id[0] >> 6 != 0 || type == 3) refuse("a fractal heap ID of version " + std::to_string(id[0] >> 6) +
                                           " and type " + std::to_string(type) + " is not one HDF5 knows");
  if (type == 1) refuse("a huge object's fractal heap ID: not checked");
  if (type == 2) { // tiny: the object is in the ID
    const std::size_t length = (id[0] & 0x0f) + 1u;
    if (id_length_ > 18 || length > id_bytes - 1)
      refuse("a tiny object of " + std::to_string(length) + " bytes in a fractal heap ID of " +
             std::to_string(id_bytes) + " (" + std::to_string(id_length_) + " in its header): not checked");
    return {id + 1, id + 1 + length};
  }
  if (1 + offset_bytes_ + length_bytes_ > id_bytes)
    refuse("its fractal heap's IDs of " + std::to_string(id_bytes) + " bytes cannot hold an offset of " +
           std::to_string(offset_bytes_) + " and a length of " + std::to_string(length_bytes_) + " bytes");
  const std::uint64_t offset = decode_le(id + 1, offset_bytes_);
  const std::uint64_t length = decode_le(id + 1 + offset_bytes_, length_bytes_);
  auto block = blocks_.upper_bound(offset);
  const std::string object = "a fractal heap object of " + std::to_string(length) + " bytes at heap offset " +
                             std::to_string(offset);
  if (length == 0 || length > max_object_)
    refuse(object + " is not between 1 and its heap's " + std::to_string(max_object_) + " bytes");
  if (block == blocks_.begin()) refuse(object + " is not inside a direct block");
  --block;
  const std::uint64_t in_block = offset - block->first;
  if (in_block < direct_overhead_ || in_block > block->second.size || length > block->second.size - in_block)
    refuse(object + " is not inside the objects of a direct block");
  return read(block->second.address + in_block, length, "a fractal heap object");
}

} // namespace mri::detail
