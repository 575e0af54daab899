#pragma once
// libismrmrd 1.8 trusts a file's structure: it sizes a buffer by the acquisitions' dataspace rank
// unchecked (a damaged rank of -1: malloc(-8)), reads the XML header into a one-pointer buffer
// whatever the dataspace holds and uses the pointer when the read failed, and copies an
// acquisition's samples and trajectory by the sizes in its header whatever the stored arrays hold
// (a heap overflow). The reader therefore reads the file through HDF5 itself: the guard asks HDF5
// about the acquisitions' dataspace and reads the XML header's text, turning a file that would
// break those reads into an IoError naming what disagrees (found by fuzzing: tests/fuzz/). The
// acquisitions are read by AcquisitionBlocks (ismrmrd_blocks.hpp), which checks each one's stored
// arrays against its header. Every variable-length value the reader reads (the XML header, each
// acquisition's trajectory and samples) is first checked in the file's global heap by
// hdf5_heap_guard.hpp (HDF5 1.10.8 loops forever on a damaged one): the header by read_header
// below, the acquisitions block by block as AcquisitionBlocks reads them.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include <hdf5.h>

#include <ismrmrd/ismrmrd.h>

namespace mri::detail {

// Throws IoError when acquisition `index` discards more samples than it has: the reader indexes
// coil c's kept samples from c * number_of_samples + discard_pre, past the stored array then even
// when none are kept (UBSan: an offset applied to the null array of an acquisition without
// samples; found by fuzzing).
void check_discards(const std::filesystem::path &path, const ISMRMRD::ISMRMRD_AcquisitionHeader &head,
                    std::size_t index);

class IsmrmrdGuard {
public:
  // Opens the file read-only. Throws IoError for a damaged root group or group (checked before
  // HDF5 looks a name up in them: hdf5_group_guard.hpp), a file without the group, or an
  // acquisitions' dataspace of rank other than 1.
  IsmrmrdGuard(const std::filesystem::path &path, const std::string &group);
  ~IsmrmrdGuard();
  IsmrmrdGuard(const IsmrmrdGuard &) = delete;
  IsmrmrdGuard &operator=(const IsmrmrdGuard &) = delete;

  // The XML header's text, read by HDF5 once its global heap is checked (check_vlen_heaps).
  // Throws IoError when there is none, or it is not one string HDF5 can read.
  std::string read_header() const;

private:
  hid_t sizes_type(); // -1 when the stored compound lacks the arrays
  void close();

  std::filesystem::path path_;
  std::string group_;
  hid_t file_ = -1, acquisitions_ = -1, sizes_type_ = -1;
  std::size_t traj_bytes_ = 0, data_bytes_ = 0; // per element of the stored arrays
};

} // namespace mri::detail
