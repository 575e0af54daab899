// The ISMRMRD raw-data reader's harness (fuzz_targets.hpp): read_ismrmrd, then what `mri recon`
// does with a file before reconstructing (cli/recon_inputs.cpp): the output grid, the noise
// covariance and prewhitening, the trajectory against the grid.
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "fuzz_scratch.hpp"
#include "fuzz_targets.hpp"
#include "mri/error.hpp"
#include "mri/io/ismrmrd.hpp"

namespace mri::fuzz {
namespace {

namespace fs = std::filesystem;

// The structured input, read front to back; past its end every field is `fallback`.
class Fields {
public:
  Fields(const std::uint8_t *data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  std::uint8_t byte(std::uint8_t fallback = 0) { return done() ? fallback : data_[pos_++]; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(byte() | byte() << 8); }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{byte()} << (8 * i);
    return v;
  }
  std::string text() { // up to the next NUL
    std::string s;
    while (!done() && data_[pos_] != 0) s.push_back(static_cast<char>(data_[pos_++]));
    ++pos_;
    return s;
  }
  // One byte per value: the first 8 are the values a reader must refuse or survive, the rest
  // small steps in [-15.5, 15.4]; past the end 0, so that a short input still makes data.
  float value() {
    constexpr float inf = std::numeric_limits<float>::infinity();
    static const float special[8] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 1e30f, -1e30f,
                                     std::numeric_limits<float>::denorm_min(), 0.5f, -0.5f};
    const std::uint8_t b = byte(132);
    return b < 8 ? special[b] : (static_cast<float>(b) - 132.0f) / 8.0f;
  }

private:
  const std::uint8_t *data_;
  std::size_t size_, pos_ = 0;
};

// Small enough that one execution stays fast; the header's own fields are not limited.
constexpr int kMaxAcquisitions = 8, kMaxSamples = 64, kMaxChannels = 4, kMaxTrajDims = 3;

ISMRMRD::Acquisition acquisition(Fields &in) {
  const std::uint64_t flags = in.u64();
  const auto samples = static_cast<std::uint16_t>(in.byte() % (kMaxSamples + 1));
  const auto channels = static_cast<std::uint16_t>(in.byte() % (kMaxChannels + 1));
  const auto traj_dims = static_cast<std::uint16_t>(in.byte() % (kMaxTrajDims + 1));
  ISMRMRD::Acquisition acq(samples, channels, traj_dims);
  for (int bit = 0; bit < 64; ++bit) // libismrmrd numbers the flags from 1
    if (flags >> bit & 1) acq.setFlag(static_cast<ISMRMRD::ISMRMRD_AcquisitionFlags>(bit + 1));
  acq.discard_pre() = in.u16();
  acq.discard_post() = in.u16();
  acq.center_sample() = in.u16();
  acq.encoding_space_ref() = in.u16();
  ISMRMRD::EncodingCounters &idx = acq.idx();
  for (std::uint16_t *counter : {&idx.kspace_encode_step_1, &idx.kspace_encode_step_2, &idx.slice, &idx.contrast,
                                 &idx.repetition, &idx.average, &idx.phase, &idx.set})
    *counter = in.u16();
  for (std::size_t i = 0; i < acq.getNumberOfDataElements(); ++i) acq.getDataPtr()[i] = {in.value(), in.value()};
  for (std::size_t i = 0; i < acq.getNumberOfTrajElements(); ++i) acq.getTrajPtr()[i] = in.value();
  return acq;
}

// The XML header text (up to a NUL), then acquisitions, written by libismrmrd's own writer into
// a valid file: what reaches the reader's checks rather than HDF5's.
bool write_structured(const fs::path &file, Fields in) {
  std::error_code ec;
  fs::remove(file, ec); // libismrmrd appends to an existing file
  try {
    ISMRMRD::Dataset dataset(file.c_str(), "dataset", true);
    dataset.writeHeader(in.text());
    for (int a = 0; a < kMaxAcquisitions && !in.done(); ++a) dataset.appendAcquisition(acquisition(in));
  } catch (const std::exception &) {
    return false; // libismrmrd refused to write it: nothing for the reader
  }
  return true;
}

bool finite(cfloat v) { return std::isfinite(v.real()) && std::isfinite(v.imag()); }

// What a successful read promises (include/mri/io/ismrmrd.hpp).
void check_read(const IsmrmrdData &d) {
  const IsmrmrdCounts &c = d.counts;
  if (c.imaging + c.noise + c.navigation + c.other + c.other_encoding != c.acquisitions)
    finding("read_ismrmrd: the acquisition counts do not add up");
  if (d.items.empty() || d.header.coils < 1 || d.units == TrajUnits::Auto)
    finding("read_ismrmrd: no items, no coils or undecided units in a successful read");
  const int dims = d.header.encoded_grid().dims();
  for (const IsmrmrdItem &it : d.items)
    if (it.data.coils() != d.header.coils || it.data.trajectory().dims() != dims)
      finding("read_ismrmrd: an item disagrees with the header (coils or dimensions)");
  for (const auto &scan : d.noise) {
    if (scan.size() % static_cast<std::size_t>(d.header.coils) != 0)
      finding("read_ismrmrd: a noise scan is not whole coils");
    for (const cfloat v : scan)
      if (!finite(v)) finding("read_ismrmrd: a non-finite noise sample");
  }
}

// cli/recon_inputs.cpp's load_h5 after the read, and the trajectory check reconstruct starts with.
void recon_preparation(const IsmrmrdData &d) {
  const Grid grid = d.header.encoded_grid();
  (void)Grid(std::min(grid.nx(), std::int64_t{d.header.recon_matrix[0]}),
             std::min(grid.ny(), std::int64_t{d.header.recon_matrix[1]}),
             std::min(grid.nz(), std::int64_t{d.header.recon_matrix[2]}));
  const std::vector<cdouble> cov = noise_covariance(d.noise, d.header.coils);
  if (!cov.empty() && cov.size() != static_cast<std::size_t>(d.header.coils) * d.header.coils)
    finding("noise_covariance: not coils x coils");
  for (const IsmrmrdItem &it : d.items) {
    (void)it.data.trajectory().check_range(grid);
    if (!cov.empty()) (void)prewhiten(it.data, cov);
  }
}

// HDF5 1.10 allocates and zeroes a 1 MiB type-conversion buffer (H5FL_blk_calloc) for every
// H5Dread and frees it past its free list's 1 MiB limit; under ASan each one is a fresh mmap, and
// its page faults and memset took 70 % of an execution (perf). Larger free lists keep the buffer
// for the next read: HDF5's own recycling, the reader's code paths unchanged.
void keep_hdf5_buffers() {
  static const bool once = [] {
    constexpr int MiB = 1 << 20;
    return H5set_free_list_limits(64 * MiB, 16 * MiB, 64 * MiB, 16 * MiB, 64 * MiB, 16 * MiB) >= 0;
  }();
  (void)once;
}

// An HDF5 identifier left open by a read keeps its file open until the process exits, where
// HDF5 1.10.8 closed such a file of a damaged input and crashed (SEGV in H5F__close_cb under
// H5_term_library): the input that leaves it is the finding, not the exit.
void check_hdf5_closed() {
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) finding("read_ismrmrd left HDF5 objects open");
}

} // namespace

int ismrmrd_reader(const std::uint8_t *data, std::size_t size) {
  const fs::path file = scratch_dir() / "input.h5";
  if (size == 0) return 0;
  keep_hdf5_buffers();
  if (data[0] & 1) {
    if (!write_structured(file, Fields(data + 1, size - 1))) return 0;
  } else {
    write_file(file, data + 1, size - 1);
  }
  IsmrmrdData d;
  try {
    d = read_ismrmrd(file);
  } catch (const Error &) {
    check_hdf5_closed();
    return 0; // the expected answer to a bad file
  }
  check_hdf5_closed();
  check_read(d);
  try {
    recon_preparation(d);
  } catch (const Error &) {
  }
  return 0;
}

} // namespace mri::fuzz
