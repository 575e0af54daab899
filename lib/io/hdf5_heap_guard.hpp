#pragma once
// HDF5 1.10.8 (Debian 12) trusts the global heap collections that hold variable-length values.
// H5HG__cache_heap_deserialize walks a collection's objects with `p = begin + need`, `need` read
// from the file, checking neither that p advances nor that it stays inside the collection: a
// damaged free-space object of size 2^64 - 32728 moves p 32 KiB before the collection's buffer,
// onto zeroed memory, where an "object" of index 0 and size 0 (need = 0) is decoded forever (the
// hang under H5Dread of ISMRMRD's XML header, found by fuzzing:
// tests/fuzz/regressions/ismrmrd_reader/hdf5-global-heap-xml-header.h5). H5HG_read then copies
// the object's stored size into a buffer sized by the value's own length (a heap overflow when
// they differ), and an object index the collection lacks is only an assertion.
//
// VlenHeapGuard reads a dataset's raw variable-length descriptors (length, collection address,
// object index) and walks every collection they name in the file's bytes, before HDF5 reads
// them: "GCOL", version 1, the collection inside the file, each object step advancing and ending
// inside it, the named object present with the stored size its length implies. The stored
// elements are read once, when the guard is made (every chunk through its chunk index record,
// which HDF5's own reads must not overrun), keeping 16 bytes per value; the collections are
// walked a range of elements at a time, so that a reader reading in blocks checks each block
// just before HDF5 reads it, with nothing but pread (no HDF5 call: another thread may walk
// ahead of the one reading). A collection is walked once, however many ranges name it, so the
// cost is one pass over the collections' bytes, a small part of reading the file
// (docs/reliability.md, finding 5).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <hdf5.h>

namespace mri::detail {

class VlenHeapGuard {
public:
  // Reads the dataset's stored type and storage, and every stored chunk's size (a chunk smaller
  // than its elements overruns HDF5's own reads of any member). Throws IoError naming `path`, the
  // dataset `name` and what is wrong; also for a dataset whose variable-length values it cannot see (filtered,
  // compact, virtual, or inside arrays), which HDF5 would read unchecked. Construct and destroy
  // with lock_hdf5() held.
  VlenHeapGuard(const std::filesystem::path &path, hid_t file, hid_t dataset, const std::string &name);
  ~VlenHeapGuard();
  VlenHeapGuard(const VlenHeapGuard &) = delete;
  VlenHeapGuard &operator=(const VlenHeapGuard &) = delete;

  // Every collection that elements [first, first + count) name (those past the dataspace's end
  // ignored). Throws IoError naming the element and what is wrong with its collection. Makes no
  // HDF5 call: needs no HDF5 lock, but one thread at a time.
  void check(std::uint64_t first, std::uint64_t count);

private:
  class Walk;
  std::unique_ptr<Walk> walk_;
};

// Every element of `dataset` checked at once (a dataset read whole).
void check_vlen_heaps(const std::filesystem::path &path, hid_t file, hid_t dataset, const std::string &name);

} // namespace mri::detail
