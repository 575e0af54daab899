#pragma once
// The memory of a sequence of H5Dreads, kept from one read to the next. Left to HDF5, each read
// allocates its type-conversion and background buffers (1 MiB each, the second zeroed) and
// mallocs every variable-length array (samples, trajectory: two per acquisition), and the 37 MB
// of a 1024-acquisition block went back to the kernel after each block (above glibc's trim
// threshold), to be faulted in again by the next: a page fault per 4 KiB. Here the arrays come
// from one arena (HDF5's vlen memory manager) and the conversion buffers are ours (H5Pset_buffer).
#include <hdf5.h>

#include <cstddef>
#include <memory>

namespace mri::detail {

class TransferBuffers {
public:
  TransferBuffers(); // throws IoError when HDF5 cannot make the transfer property list
  ~TransferBuffers();
  TransferBuffers(const TransferBuffers &) = delete;
  TransferBuffers &operator=(const TransferBuffers &) = delete;

  // The transfer property list for H5Dread and H5Dvlen_reclaim.
  hid_t transfer() const { return transfer_; }
  // Before each read, after the previous block's arrays were reclaimed: allocation starts over,
  // in a buffer as large as the largest block so far needed (what did not fit came from malloc).
  // The conversion buffers grow to `conversion_bytes` (the block's elements at the larger of
  // their stored and memory sizes: one pass of HDF5's conversion), at most HDF5's default 1 MiB.
  // Throws IoError when HDF5 refuses them.
  void restart(std::size_t conversion_bytes);

private:
  static void *allocate(std::size_t bytes, void *self);
  static void release(void *p, void *self);
  void grow_conversion(std::size_t bytes);

  hid_t transfer_ = -1;
  std::unique_ptr<std::byte[]> conversion_, background_; // H5Pset_buffer's
  std::size_t conversion_capacity_ = 0;
  std::unique_ptr<std::byte[]> buffer_;                  // the arena
  std::size_t capacity_ = 0, used_ = 0, wanted_ = 0; // wanted_: bytes the current block asked for
};

} // namespace mri::detail
