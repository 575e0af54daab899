#pragma once
// The acquisitions of an ISMRMRD file read in blocks: one H5Dread per 256 acquisitions, where
// libismrmrd's readAcquisition makes one per acquisition, and HDF5 1.10 allocates and zeroes a
// 1 MiB buffer per H5Dread (0.3 ms an acquisition: 5 s for a 64-slice file of 16384 readouts).
// Blocks no larger, so that a streaming reader hands a slice over soon after its last readout.
#include <hdf5.h>

#include <ismrmrd/ismrmrd.h>

#include <complex>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

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
  // Opens <group>/data of `path` (none: no acquisitions). Call with lock_hdf5() held, as every
  // other member. Throws IoError when HDF5 cannot open it.
  AcquisitionBlocks(const std::filesystem::path &path, const std::string &group);
  ~AcquisitionBlocks();
  AcquisitionBlocks(const AcquisitionBlocks &) = delete;
  AcquisitionBlocks &operator=(const AcquisitionBlocks &) = delete;

  std::size_t size() const { return size_; }
  // Every acquisition's header (the fields read() fills), in one H5Dread that leaves the samples
  // and trajectories on disk: what the reader sizes its items from.
  std::vector<ISMRMRD::ISMRMRD_AcquisitionHeader> headers();
  // Acquisition `index` (the header fields the reader uses, the samples and the trajectory),
  // without a copy. Fastest in ascending order. Throws IoError for a read that fails or data
  // whose length disagrees with its header.
  AcquisitionView read(std::size_t index);

  // One acquisition as HDF5 hands it over: the header, then the variable-length trajectory and
  // samples (float, interleaved complex), as libismrmrd stores them.
  struct Record {
    ISMRMRD::ISMRMRD_AcquisitionHeader head;
    hvl_t traj;
    hvl_t data;
  };

private:
  void load(std::size_t first);
  void reclaim();

  std::filesystem::path path_;
  hid_t file_ = -1, dataset_ = -1, type_ = -1;
  std::size_t size_ = 0, first_ = 0;
  std::vector<Record> block_;
  TransferBuffers buffers_; // the block's samples and trajectories, HDF5's conversion buffers
};

} // namespace mri::detail
