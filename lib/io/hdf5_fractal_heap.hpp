#pragma once
// A fractal heap (where a new-style group past its compact limit keeps its link messages) checked
// in the file's bytes before HDF5 1.10.8 reads it (hdf5_group_guard.hpp). HDF5 verifies the
// header's checksum, but then trusts its doubling table: it sizes its per-row tables by the
// maximum heap size in bits, an indirect block by the root's row count times the table width, a
// direct block by its row, and decodes heap offsets of (max heap size + 7) / 8 bytes. A file made
// with the checksums right (or a damaged field a checksum does not cover) is trusted as it is.
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "hdf5_object_header.hpp"

namespace mri::detail {

class FractalHeap {
public:
  // Reads the header at `address` and every direct and indirect block it leads to; Refused if
  // one is not what the header says or not inside the file, or the header's sizes are not sane.
  FractalHeap(FileBytes &bytes, const Format &format, std::uint64_t address);

  // The bytes of the object a heap ID of `id_bytes` bytes names, read from inside one managed
  // direct block past its header (or from the ID, for a tiny object); Refused for any other ID
  // (a huge object's: HDF5 1.10.8 dereferences a B-tree it may not have) and for an ID too short
  // for the offset and length the header's sizes make HDF5 decode.
  std::vector<unsigned char> object(const unsigned char *id, std::size_t id_bytes);

private:
  struct Block {
    std::uint64_t address, size;
  };
  std::uint64_t row_size(unsigned row) const { return row == 0 ? start_ : start_ << (row - 1); }
  void inside(std::uint64_t address, std::uint64_t size, const char *what) const;
  std::vector<unsigned char> read(std::uint64_t address, std::uint64_t size, const char *what);
  void check_prefix(const std::vector<unsigned char> &b, const char *signature, std::uint64_t address,
                    std::uint64_t offset, const char *what) const;
  void direct(std::uint64_t address, std::uint64_t offset, std::uint64_t size);
  void indirect(std::uint64_t address, std::uint64_t offset, unsigned rows);

  FileBytes &bytes_;
  const Format &format_;
  std::uint64_t address_;
  std::size_t id_length_ = 0, offset_bytes_ = 0, length_bytes_ = 0, direct_overhead_ = 0;
  std::uint64_t start_ = 0, max_object_ = 0;
  unsigned width_ = 0, width_bits_ = 0, direct_rows_ = 0;
  std::map<std::uint64_t, Block> blocks_; // managed direct blocks by their offset in the heap
  std::set<std::uint64_t> seen_;          // block addresses: a block reached twice would loop
};

} // namespace mri::detail
