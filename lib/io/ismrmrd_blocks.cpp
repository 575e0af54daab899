// Block reads of ISMRMRD acquisitions (ismrmrd_blocks.hpp). The memory type names the members
// of the header this SDK uses; HDF5 converts compound members by name, so the file's other
// members are skipped and the record's other header fields keep their initial values.
#include "ismrmrd_blocks.hpp"

#include <algorithm>
#include <exception>

#include "hdf5_type_guard.hpp"
#include "ismrmrd_common.hpp"

namespace mri::detail {
namespace {

constexpr std::size_t kBlock = 256;

hid_t array_of(hid_t base, hsize_t n) { return H5Tarray_create2(base, 1, &n); }

void insert_array(hid_t compound, const char *name, std::size_t offset, hid_t base, hsize_t n) {
  const hid_t a = array_of(base, n);
  H5Tinsert(compound, name, offset, a);
  H5Tclose(a);
}

hid_t counters_type() {
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(ISMRMRD::ISMRMRD_EncodingCounters));
  const std::pair<const char *, std::size_t> members[] = {
      {"kspace_encode_step_1", HOFFSET(ISMRMRD::ISMRMRD_EncodingCounters, kspace_encode_step_1)},
      {"kspace_encode_step_2", HOFFSET(ISMRMRD::ISMRMRD_EncodingCounters, kspace_encode_step_2)},
      {"average", HOFFSET(ISMRMRD::ISMRMRD_EncodingCounters, average)},
      {"slice", HOFFSET(ISMRMRD::ISMRMRD_EncodingCounters, slice)},
      {"contrast", HOFFSET(ISMRMRD::ISMRMRD_EncodingCounters, contrast)},
      {"phase", HOFFSET(ISMRMRD::ISMRMRD_EncodingCounters, phase)},
      {"repetition", HOFFSET(ISMRMRD::ISMRMRD_EncodingCounters, repetition)},
      {"set", HOFFSET(ISMRMRD::ISMRMRD_EncodingCounters, set)}};
  for (const auto &[name, offset] : members) H5Tinsert(t, name, offset, H5T_NATIVE_UINT16);
  return t;
}

hid_t header_type() {
  using H = ISMRMRD::ISMRMRD_AcquisitionHeader;
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(H));
  H5Tinsert(t, "flags", HOFFSET(H, flags), H5T_NATIVE_UINT64);
  const std::pair<const char *, std::size_t> u16[] = {
      {"number_of_samples", HOFFSET(H, number_of_samples)}, {"active_channels", HOFFSET(H, active_channels)},
      {"discard_pre", HOFFSET(H, discard_pre)},             {"discard_post", HOFFSET(H, discard_post)},
      {"center_sample", HOFFSET(H, center_sample)},         {"encoding_space_ref", HOFFSET(H, encoding_space_ref)},
      {"trajectory_dimensions", HOFFSET(H, trajectory_dimensions)}};
  for (const auto &[name, offset] : u16) H5Tinsert(t, name, offset, H5T_NATIVE_UINT16);
  H5Tinsert(t, "acquisition_time_stamp", HOFFSET(H, acquisition_time_stamp), H5T_NATIVE_UINT32);
  H5Tinsert(t, "sample_time_us", HOFFSET(H, sample_time_us), H5T_NATIVE_FLOAT);
  insert_array(t, "physiology_time_stamp", HOFFSET(H, physiology_time_stamp), H5T_NATIVE_UINT32, ISMRMRD::ISMRMRD_PHYS_STAMPS);
  const std::pair<const char *, std::size_t> vec3[] = {{"position", HOFFSET(H, position)},
                                                        {"read_dir", HOFFSET(H, read_dir)},
                                                        {"phase_dir", HOFFSET(H, phase_dir)},
                                                        {"slice_dir", HOFFSET(H, slice_dir)}};
  for (const auto &[name, offset] : vec3) insert_array(t, name, offset, H5T_NATIVE_FLOAT, 3);
  const hid_t idx = counters_type();
  H5Tinsert(t, "idx", HOFFSET(H, idx), idx);
  H5Tclose(idx);
  return t;
}

hid_t record_type() {
  using R = AcquisitionBlocks::Record;
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(R));
  const hid_t head = header_type(), floats = H5Tvlen_create(H5T_NATIVE_FLOAT);
  H5Tinsert(t, "head", HOFFSET(R, head), head);
  H5Tinsert(t, "traj", HOFFSET(R, traj), floats);
  H5Tinsert(t, "data", HOFFSET(R, data), floats); // complex samples stored as float pairs
  H5Tclose(head);
  H5Tclose(floats);
  return t;
}

// A record of the header alone: HDF5 skips the file's "traj" and "data" members, and so loads no
// global heap collection (those are checked block by block, in load).
hid_t header_record_type() {
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(ISMRMRD::ISMRMRD_AcquisitionHeader));
  const hid_t head = header_type();
  H5Tinsert(t, "head", 0, head);
  H5Tclose(head);
  return t;
}

// Rows [start, start + count) of the dataset into `out`, as `type`; false when HDF5 fails.
bool read_rows(hid_t dataset, hid_t type, hsize_t start, hsize_t count, hid_t transfer, void *out) {
  const hid_t file_space = H5Dget_space(dataset), memory = H5Screate_simple(1, &count, nullptr);
  herr_t status = H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
  if (status >= 0) status = H5Dread(dataset, type, memory, file_space, transfer, out);
  H5Sclose(memory);
  H5Sclose(file_space);
  return status >= 0;
}

} // namespace

AcquisitionBlocks::AcquisitionBlocks(const std::filesystem::path &path, const std::string &group) : path_(path) {
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) ismrmrd_io_error(path, "HDF5 cannot open it");
  try {
    open_acquisitions(group + "/data");
  } catch (...) {
    close(); // the destructor does not run for a constructor that throws
    throw;
  }
}

void AcquisitionBlocks::open_acquisitions(const std::string &name) {
  if (H5Lexists(file_, name.c_str(), H5P_DEFAULT) <= 0) return; // no acquisitions
  dataset_ = open_checked_dataset(path_, file_, name); // HDF5 trusts the type it decodes
  const hid_t space = dataset_ < 0 ? -1 : H5Dget_space(dataset_);
  hsize_t n = 0;
  if (space < 0 || H5Sget_simple_extent_ndims(space) != 1 || H5Sget_simple_extent_dims(space, &n, nullptr) < 0) {
    if (space >= 0) H5Sclose(space);
    ismrmrd_io_error(path_, "'" + name + "' is not a list of acquisitions");
  }
  H5Sclose(space);
  size_ = static_cast<std::size_t>(n);
  heaps_.emplace(path_, file_, dataset_, name); // refuses values it could not check
  type_ = record_type();
  const hid_t stored = H5Dget_type(dataset_);
  element_bytes_ = std::max(stored < 0 ? 0 : H5Tget_size(stored), sizeof(Record));
  if (stored >= 0) H5Tclose(stored);
}

AcquisitionBlocks::~AcquisitionBlocks() {
  for (Slot &slot : slots_) reclaim(slot);
  close();
}

void AcquisitionBlocks::close() {
  heaps_.reset();
  if (type_ >= 0) H5Tclose(type_);
  if (dataset_ >= 0) H5Dclose(dataset_);
  if (file_ >= 0) H5Fclose(file_);
  type_ = dataset_ = file_ = -1;
}

// In blocks too: one H5Dread of every row makes HDF5 hold the selection of each (libismrmrd's
// one-row chunks) at once, 16384 fresh allocations for a 64-slice file, each faulted in anew.
std::vector<ISMRMRD::ISMRMRD_AcquisitionHeader> AcquisitionBlocks::headers() {
  std::vector<ISMRMRD::ISMRMRD_AcquisitionHeader> heads(size_, ISMRMRD::AcquisitionHeader());
  const hid_t type = header_record_type();
  bool read = true;
  for (std::size_t first = 0; read && first < size_; first += kBlock)
    read = read_rows(dataset_, type, first, std::min(kBlock, size_ - first), H5P_DEFAULT, heads.data() + first);
  H5Tclose(type);
  if (!read) ismrmrd_io_error(path_, "cannot read the acquisitions' headers");
  return heads;
}

void AcquisitionBlocks::reclaim(Slot &slot) {
  if (slot.block.empty()) return;
  const hsize_t n = slot.block.size();
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  H5Dvlen_reclaim(type_, space, slot.buffers.transfer(), slot.block.data());
  H5Sclose(space);
  slot.block.clear();
}

// Block `number` into `slot`, with the HDF5 lock held, once check_blocks has checked it.
void AcquisitionBlocks::load(Slot &slot, std::size_t number) {
  reclaim(slot);
  const hsize_t start = number * kBlock, count = std::min(kBlock, size_ - number * kBlock);
  Record blank{};
  blank.head = ISMRMRD::AcquisitionHeader(); // libismrmrd's defaults for the fields not read
  slot.block.assign(count, blank);
  slot.buffers.restart(count * element_bytes_);
  if (!read_rows(dataset_, type_, start, count, slot.buffers.transfer(), slot.block.data())) {
    slot.block.clear(); // HDF5 frees what a failed read allocated
    ismrmrd_io_error(path_, "cannot read acquisitions " + std::to_string(start) + " to " +
                                std::to_string(start + count - 1));
  }
}

// Block after block, each into the slot the caller has left once its collections are checked,
// until the last, a failure or stop().
void AcquisitionBlocks::read_blocks() {
  const std::size_t blocks = (size_ + kBlock - 1) / kBlock;
  for (std::size_t number = 0; number < blocks; ++number) {
    Slot &slot = slots_[number % 2];
    std::exception_ptr error;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || (slot.number == kNone && (checked_ > number || check_error_)); });
      if (stop_) return;
      if (checked_ <= number) error = check_error_; // damaged collections: HDF5 must not read the block
    }
    if (!error) error = load_locked(slot, number);
    {
      const std::lock_guard lock(mutex_);
      slot.number = number;
      slot.error = error;
    }
    changed_.notify_all();
    if (error) return;
  }
}

std::exception_ptr AcquisitionBlocks::load_locked(Slot &slot, std::size_t number) {
  try {
    const auto hdf5 = lock_hdf5();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); // per thread: no HDF5 error stack on stderr, ours is the message
    load(slot, number);
    return nullptr;
  } catch (...) {
    return std::current_exception();
  }
}

// Here, not when the file was opened, and in a thread of its own: the walk of every collection
// (a large part of opening a 64-slice file when it was all done at open, serially) runs ahead of
// read_blocks, with pread alone, while HDF5 reads the blocks before.
void AcquisitionBlocks::check_blocks() {
  const std::size_t blocks = (size_ + kBlock - 1) / kBlock;
  for (std::size_t number = 0; number < blocks; ++number) {
    std::exception_ptr error;
    try {
      heaps_->check(number * kBlock, kBlock);
    } catch (...) {
      error = std::current_exception();
    }
    {
      const std::lock_guard lock(mutex_);
      if (error) check_error_ = error;
      else checked_ = number + 1;
      if (stop_) return;
    }
    changed_.notify_all();
    if (error) return;
  }
}

void AcquisitionBlocks::stop() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (reader_.joinable()) reader_.join();
  if (checker_.joinable()) checker_.join();
}

AcquisitionView AcquisitionBlocks::read(std::size_t index) {
  const std::size_t number = index / kBlock;
  Slot &slot = slots_[number % 2];
  if (number != held_) {
    if (!reader_.joinable()) {
      checker_ = std::thread(&AcquisitionBlocks::check_blocks, this);
      reader_ = std::thread(&AcquisitionBlocks::read_blocks, this);
    }
    std::unique_lock lock(mutex_);
    if (held_ != kNone) slots_[held_ % 2].number = kNone; // done with it: the thread may refill it
    held_ = number;
    changed_.notify_all();
    changed_.wait(lock, [&] { return slot.number == number; });
    if (slot.error) std::rethrow_exception(slot.error);
  }
  const Record &r = slot.block[index - number * kBlock];
  const std::size_t ns = r.head.number_of_samples;
  const std::size_t samples = ns * r.head.active_channels, traj = ns * r.head.trajectory_dimensions;
  if (r.data.len != 2 * samples || r.traj.len != traj)
    ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + " holds " + std::to_string(r.data.len / 2) +
                                " samples and " + std::to_string(r.traj.len) + " trajectory values, its header says " +
                                std::to_string(samples) + " and " + std::to_string(traj));
  return {r.head, static_cast<const float *>(r.traj.p), static_cast<const std::complex<float> *>(r.data.p)};
}

} // namespace mri::detail
