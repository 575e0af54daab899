#pragma once
// The acquisitions of an ISMRMRD file read in blocks: one H5Dread per 256 acquisitions, where
// libismrmrd's readAcquisition makes one per acquisition, and HDF5 1.10 allocates and zeroes a
// 1 MiB buffer per H5Dread (most of the read time of a file of many short readouts).
// Blocks no larger, so that a streaming reader hands a slice over soon after its last readout.
// A thread of its own reads the next block while the caller works on the current one (HDF5's
// copies and the caller's overlap: two cores), and another checks the blocks' global heap
// collections ahead of it (hdf5_heap_guard.hpp; pread alone, no HDF5 lock).
#include <hdf5.h>

#include <ismrmrd/ismrmrd.h>

#include <array>
#include <complex>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hdf5_heap_guard.hpp"
#include "transfer_buffers.hpp"

namespace mri::detail {

// One acquisition of the block in memory, read in place: its header, its trajectory
// (trajectory_dimensions values per sample, sample after sample) and its samples (coil c's at
// c * number_of_samples, as libismrmrd stores them). Valid until the next read().
struct AcquisitionView {
  const ISMRMRD::ISMRMRD_AcquisitionHeader &head;
  const float *traj;
  const std::complex<float> *data;
  float traj_at(int dim, int sample) const {
    return traj[static_cast<std::size_t>(sample) * head.trajectory_dimensions + static_cast<std::size_t>(dim)];
  }
};

class AcquisitionBlocks {
public:
  // Opens <group>/data of `path` (none: no acquisitions). Construct, call headers() and destroy
  // with lock_hdf5() held. Throws IoError when HDF5 cannot open it, or when its variable-length
  // values are stored where the global-heap guard cannot check them (hdf5_heap_guard.hpp).
  AcquisitionBlocks(const std::filesystem::path &path, const std::string &group);
  ~AcquisitionBlocks(); // after stop()
  AcquisitionBlocks(const AcquisitionBlocks &) = delete;
  AcquisitionBlocks &operator=(const AcquisitionBlocks &) = delete;

  std::size_t size() const { return size_; }
  // Every acquisition's header (the fields read() fills), in one H5Dread that leaves the samples
  // and trajectories on disk: what the reader sizes its items from.
  std::vector<ISMRMRD::ISMRMRD_AcquisitionHeader> headers();
  // Acquisition `index` (the header fields the reader uses, the samples and the trajectory),
  // without a copy; valid until the next read(). The indices must come one after the other from
  // 0. Call without the HDF5 lock: the reading thread (started by the first call) takes it for
  // each block, once the checking thread has checked the block's global heap collections. Throws
  // IoError for a block that cannot be read or whose collections are damaged (once the
  // acquisitions before it were read), or data whose length disagrees with its header.
  AcquisitionView read(std::size_t index);
  // Ends the reading and checking threads (each finishes its block). Call without the HDF5 lock.
  void stop();

  // One acquisition as HDF5 hands it over: the header, then the variable-length trajectory and
  // samples (float, interleaved complex), as libismrmrd stores them.
  struct Record {
    ISMRMRD::ISMRMRD_AcquisitionHeader head;
    hvl_t traj;
    hvl_t data;
  };

private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  // Two blocks' memory: the caller reads one while the thread fills the other.
  struct Slot {
    std::vector<Record> block;
    TransferBuffers buffers; // its samples and trajectories, HDF5's conversion buffers
    std::size_t number = kNone; // the block it holds once loaded (kNone: free for the next)
    std::exception_ptr error;   // its read failed
  };
  void open_acquisitions(const std::string &name);
  void close();
  void read_blocks();  // the reading thread
  void check_blocks(); // the thread checking each block's collections ahead of it
  std::exception_ptr load_locked(Slot &slot, std::size_t number);
  void load(Slot &slot, std::size_t number);
  void reclaim(Slot &slot);

  std::filesystem::path path_;
  hid_t file_ = -1, dataset_ = -1, type_ = -1;
  std::size_t size_ = 0;
  std::size_t element_bytes_ = 0; // the larger of an acquisition's stored and memory (Record) sizes
  std::optional<VlenHeapGuard> heaps_; // with dataset_: each block checked before HDF5 reads it
  std::array<Slot, 2> slots_;
  std::size_t held_ = kNone; // the block the caller reads
  std::thread reader_, checker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  std::size_t checked_ = 0;        // blocks whose collections check_blocks has checked
  std::exception_ptr check_error_; // block checked_'s check failed
};

} // namespace mri::detail
