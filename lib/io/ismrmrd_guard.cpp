// HDF5's answers about an ISMRMRD file before the reader reads it (ismrmrd_guard.hpp).
#include "ismrmrd_guard.hpp"

#include <optional>

#include "hdf5_group_guard.hpp"
#include "hdf5_heap_guard.hpp"
#include "hdf5_open_guard.hpp"
#include "hdf5_type_guard.hpp"
#include "ismrmrd_common.hpp"

namespace mri::detail {
namespace {

// What libismrmrd copies an acquisition by (its header's sizes) and from (the stored arrays);
// HDF5 reads these members of the stored compound by name and leaves the rest.
struct Sizes {
  std::uint16_t samples, channels, trajectory_dimensions;
};
struct StoredAcquisition {
  Sizes head;
  hvl_t traj, data;
};

// The stored compound's member `name` in native form (-1 if it has none): libismrmrd's versions
// store the samples as variable-length arrays of float pairs or of a complex compound, so the
// arrays are read as stored and compared in bytes.
hid_t native_member(hid_t stored, const char *name) {
  const int i = H5Tget_member_index(stored, name);
  if (i < 0) return -1;
  const hid_t t = H5Tget_member_type(stored, static_cast<unsigned>(i));
  const hid_t native = H5Tget_native_type(t, H5T_DIR_ASCEND);
  H5Tclose(t);
  return native;
}

// The element size of a variable-length type (0: not one).
std::size_t vlen_element_bytes(hid_t vlen) {
  if (vlen < 0 || H5Tget_class(vlen) != H5T_VLEN) return 0;
  const hid_t base = H5Tget_super(vlen);
  const std::size_t bytes = H5Tget_size(base);
  H5Tclose(base);
  return bytes;
}

int rank(hid_t set) {
  const hid_t space = H5Dget_space(set);
  const int r = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
  if (space >= 0) H5Sclose(space);
  return r;
}

hssize_t elements(hid_t set) {
  const hid_t space = H5Dget_space(set);
  const hssize_t n = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
  if (space >= 0) H5Sclose(space);
  return n;
}

// The one value of `set` read as a string (a null string: empty), or none when HDF5 cannot.
std::optional<std::string> read_string(hid_t set) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  char *text = nullptr;
  std::optional<std::string> out;
  if (H5Dread(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0) out = text == nullptr ? "" : text;
  H5free_memory(text);
  H5Tclose(type);
  return out;
}

// H5Fopen trusts the lengths of the object headers it loads (hdf5_open_guard.hpp).
hid_t open_checked(const std::filesystem::path &path) {
  check_before_open(path);
  return H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
}

} // namespace

void check_discards(const std::filesystem::path &path, const ISMRMRD::ISMRMRD_AcquisitionHeader &head,
                    std::size_t index) {
  const int discarded = head.discard_pre + head.discard_post;
  if (discarded > head.number_of_samples)
    ismrmrd_io_error(path, "acquisition " + std::to_string(index) + ": discard_pre + discard_post = " +
                               std::to_string(discarded) + " of " + std::to_string(head.number_of_samples) +
                               " samples");
}

IsmrmrdGuard::IsmrmrdGuard(const std::filesystem::path &path, const std::string &group)
    : path_(path), group_(group), file_(open_checked(path)) {
  if (file_ < 0) ismrmrd_io_error(path_, "HDF5 cannot open it");
  try {
    check_groups(path_, file_, group); // HDF5 trusts the groups it looks names up in
  } catch (...) {
    close(); // the destructor does not run for a constructor that throws
    throw;
  }
  if (H5Lexists(file_, group.c_str(), H5P_DEFAULT) <= 0) {
    close(); // the destructor does not run for a constructor that throws
    ismrmrd_io_error(path, "no group '" + group + "' (an ISMRMRD file has one per data set)");
  }
  const std::string data = group + "/data";
  if (H5Lexists(file_, data.c_str(), H5P_DEFAULT) <= 0) return; // no acquisitions: libismrmrd counts 0
  try {
    acquisitions_ = open_checked_dataset(path_, file_, data); // HDF5 trusts the type it decodes
  } catch (...) {
    close();
    throw;
  }
  const int r = acquisitions_ < 0 ? -1 : rank(acquisitions_);
  if (r != 1) {
    close();
    ismrmrd_io_error(path, "the acquisitions' dataspace " + data + " has rank " + std::to_string(r) + " (1 expected)");
  }
  sizes_type_ = sizes_type();
  if (sizes_type_ < 0) {
    close();
    ismrmrd_io_error(path, "the acquisitions' type in " + data + " has no header and trajectory and sample arrays");
  }
}

hid_t IsmrmrdGuard::sizes_type() {
  const hid_t stored = H5Dget_type(acquisitions_);
  const hid_t traj = native_member(stored, "traj"), data = native_member(stored, "data");
  H5Tclose(stored);
  traj_bytes_ = vlen_element_bytes(traj);
  data_bytes_ = vlen_element_bytes(data);
  hid_t type = -1;
  if (traj_bytes_ > 0 && data_bytes_ > 0) {
    const hid_t head = H5Tcreate(H5T_COMPOUND, sizeof(Sizes));
    H5Tinsert(head, "number_of_samples", HOFFSET(Sizes, samples), H5T_NATIVE_UINT16);
    H5Tinsert(head, "active_channels", HOFFSET(Sizes, channels), H5T_NATIVE_UINT16);
    H5Tinsert(head, "trajectory_dimensions", HOFFSET(Sizes, trajectory_dimensions), H5T_NATIVE_UINT16);
    type = H5Tcreate(H5T_COMPOUND, sizeof(StoredAcquisition));
    H5Tinsert(type, "head", HOFFSET(StoredAcquisition, head), head);
    H5Tinsert(type, "traj", HOFFSET(StoredAcquisition, traj), traj);
    H5Tinsert(type, "data", HOFFSET(StoredAcquisition, data), data);
    H5Tclose(head);
  }
  for (const hid_t t : {traj, data})
    if (t >= 0) H5Tclose(t);
  return type;
}

IsmrmrdGuard::~IsmrmrdGuard() { close(); }

void IsmrmrdGuard::close() {
  if (sizes_type_ >= 0) H5Tclose(sizes_type_);
  if (acquisitions_ >= 0) H5Dclose(acquisitions_);
  if (file_ >= 0) H5Fclose(file_);
  sizes_type_ = acquisitions_ = file_ = -1;
}

std::string IsmrmrdGuard::read_header() const {
  const std::string xml = group_ + "/xml";
  if (H5Lexists(file_, xml.c_str(), H5P_DEFAULT) <= 0) ismrmrd_io_error(path_, "no XML header (" + xml + ")");
  const hid_t set = open_checked_dataset(path_, file_, xml); // HDF5 trusts the type it decodes
  if (set < 0) ismrmrd_io_error(path_, "HDF5 cannot open the XML header " + xml);
  std::optional<std::string> text;
  try {
    const hssize_t points = elements(set);
    if (points != 1)
      ismrmrd_io_error(path_, "the XML header " + xml + " holds " + std::to_string(points) + " values (1 expected)");
    check_vlen_heaps(path_, file_, set, xml);
    text = read_string(set);
  } catch (...) {
    H5Dclose(set);
    throw;
  }
  H5Dclose(set);
  if (!text) ismrmrd_io_error(path_, "HDF5 cannot read the XML header " + xml + " as a string");
  return *text;
}

} // namespace mri::detail
