// ISMRMRD raw data -> KSpaceData per (slice, contrast, repetition, average, phase, set); the
// conventions are in include/mri/io/ismrmrd.hpp.
#include "mri/io/ismrmrd.hpp"

#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/xml.h>

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "ismrmrd_common.hpp"
#include "ismrmrd_guard.hpp"
#include "mri/error.hpp"

namespace mri {
namespace {

using Key = std::tuple<int, int, int, int, int, int>; // slice, contrast, repetition, average, phase, set

// One item while reading: points in the file's units, samples per coil.
struct Group {
  std::vector<KPoint> points;
  std::vector<std::vector<cfloat>> coils;
};

// Whether `path` is HDF5 with the group, asked of HDF5 itself: libismrmrd's Dataset constructor
// leaks its file and group names when it throws, so the usual bad files never reach it.
void check_hdf5_group(const std::filesystem::path &path, const std::string &group) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); // no HDF5 error stack on stderr: ours is the message
  if (H5Fis_hdf5(path.c_str()) <= 0) detail::ismrmrd_io_error(path, "not an HDF5 file (ISMRMRD raw data is HDF5)");
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) detail::ismrmrd_io_error(path, "HDF5 cannot open it");
  const htri_t found = H5Lexists(file, group.c_str(), H5P_DEFAULT);
  H5Fclose(file);
  if (found <= 0) detail::ismrmrd_io_error(path, "no group '" + group + "' (an ISMRMRD file has one per data set)");
}

std::unique_ptr<ISMRMRD::Dataset> open_dataset(const std::filesystem::path &path, const std::string &group) {
  detail::quiet_ismrmrd();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) detail::ismrmrd_io_error(path, "no such file");
  if (group.empty() || group.find('/') != std::string::npos)
    detail::invalid_argument("IsmrmrdReadOptions::group", group, "one HDF5 group name, without '/'");
  check_hdf5_group(path, group);
  try {
    // create_file_if_needed = false: a reader must never create the file it was asked to read.
    return std::make_unique<ISMRMRD::Dataset>(path.c_str(), group.c_str(), false);
  } catch (const std::exception &) {
    detail::ismrmrd_io_error(path, "not an ISMRMRD (HDF5) file, or no group '" + group + "'");
  }
}

const char *trajectory_name(ISMRMRD::TrajectoryType t) {
  switch (t) {
  case ISMRMRD::TrajectoryType::CARTESIAN: return "cartesian";
  case ISMRMRD::TrajectoryType::EPI: return "epi";
  case ISMRMRD::TrajectoryType::RADIAL: return "radial";
  case ISMRMRD::TrajectoryType::GOLDENANGLE: return "goldenangle";
  case ISMRMRD::TrajectoryType::SPIRAL: return "spiral";
  case ISMRMRD::TrajectoryType::OTHER: return "other";
  }
  return "other";
}

ISMRMRD::IsmrmrdHeader read_xml(ISMRMRD::Dataset &dataset, const detail::IsmrmrdGuard &guard,
                                const std::filesystem::path &path) {
  guard.check_header();
  std::string xml;
  try {
    dataset.readHeader(xml);
  } catch (const std::exception &) {
    detail::ismrmrd_io_error(path, "no XML header");
  }
  ISMRMRD::IsmrmrdHeader header;
  try {
    ISMRMRD::deserialize(xml.c_str(), header);
  } catch (const std::exception &e) {
    detail::ismrmrd_io_error(path, std::string("malformed XML header: ") + e.what());
  }
  if (header.encoding.empty()) detail::ismrmrd_io_error(path, "the XML header has no encoding");
  return header;
}

IsmrmrdHeader header_facts(const ISMRMRD::IsmrmrdHeader &xml, const std::filesystem::path &path) {
  const ISMRMRD::Encoding &e = xml.encoding[0];
  IsmrmrdHeader h;
  h.encoded_matrix = {e.encodedSpace.matrixSize.x, e.encodedSpace.matrixSize.y, e.encodedSpace.matrixSize.z};
  h.recon_matrix = {e.reconSpace.matrixSize.x, e.reconSpace.matrixSize.y, e.reconSpace.matrixSize.z};
  h.encoded_fov_mm = {e.encodedSpace.fieldOfView_mm.x, e.encodedSpace.fieldOfView_mm.y, e.encodedSpace.fieldOfView_mm.z};
  h.recon_fov_mm = {e.reconSpace.fieldOfView_mm.x, e.reconSpace.fieldOfView_mm.y, e.reconSpace.fieldOfView_mm.z};
  h.trajectory = trajectory_name(e.trajectory);
  h.encodings = static_cast<int>(xml.encoding.size());
  if (xml.acquisitionSystemInformation && xml.acquisitionSystemInformation->receiverChannels)
    h.coils = *xml.acquisitionSystemInformation->receiverChannels;
  for (int a = 0; a < 3; ++a)
    if (h.encoded_matrix[a] < 1 || h.recon_matrix[a] < 1)
      detail::invalid_argument(path.string() + ": header matrix", h.encoded_matrix[a] < 1 ? "encoded" : "recon",
                               "an extent is zero");
  return h;
}

// The encoding limit's centre on step 1 or 2 (the matrix centre when the header has none).
int limit_centre(const ISMRMRD::Optional<ISMRMRD::Limit> &limit, int matrix) {
  return limit ? limit->center : matrix / 2;
}

enum class Kind { Imaging, Noise, Navigation, Other };

Kind classify(ISMRMRD::Acquisition &acq) {
  if (acq.isFlagSet(ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT)) return Kind::Noise;
  if (acq.isFlagSet(ISMRMRD::ISMRMRD_ACQ_IS_NAVIGATION_DATA)) return Kind::Navigation;
  for (const auto flag : {ISMRMRD::ISMRMRD_ACQ_IS_PHASECORR_DATA, ISMRMRD::ISMRMRD_ACQ_IS_DUMMYSCAN_DATA,
                          ISMRMRD::ISMRMRD_ACQ_IS_HPFEEDBACK_DATA, ISMRMRD::ISMRMRD_ACQ_IS_RTFEEDBACK_DATA,
                          ISMRMRD::ISMRMRD_ACQ_IS_PHASE_STABILIZATION_REFERENCE,
                          ISMRMRD::ISMRMRD_ACQ_IS_PHASE_STABILIZATION})
    if (acq.isFlagSet(flag)) return Kind::Other;
  return Kind::Imaging;
}

// Everything read_ismrmrd needs while it walks the acquisitions.
class Reader {
public:
  Reader(const std::filesystem::path &path, const IsmrmrdReadOptions &options)
      : path_(path), options_(options), dataset_(open_dataset(path, options.group)), guard_(path, options.group),
        xml_(read_xml(*dataset_, guard_, path)) {
    out_.header = header_facts(xml_, path);
    grid_ = out_.header.encoded_grid();
  }

  IsmrmrdData read() {
    const std::uint32_t n = dataset_->getNumberOfAcquisitions();
    out_.counts.acquisitions = n;
    for (std::uint32_t i = 0; i < n; ++i) read_one(i);
    if (groups_.empty())
      detail::invalid_argument(path_.string() + ": imaging acquisitions", 0,
                               "the file holds none (" + std::to_string(n) + " acquisitions in all)");
    choose_units();
    make_items();
    return std::move(out_);
  }

private:
  void read_one(std::uint32_t index) {
    guard_.check_acquisition(index);
    ISMRMRD::Acquisition acq;
    try {
      dataset_->readAcquisition(index, acq);
    } catch (const std::exception &) {
      detail::ismrmrd_io_error(path_, "cannot read acquisition " + std::to_string(index));
    }
    switch (classify(acq)) {
    case Kind::Noise: ++out_.counts.noise; out_.noise.push_back(noise_samples(acq, index)); return;
    case Kind::Navigation: ++out_.counts.navigation; return;
    case Kind::Other: ++out_.counts.other; return;
    case Kind::Imaging: break;
    }
    if (acq.encoding_space_ref() != 0) {
      ++out_.counts.other_encoding;
      return;
    }
    ++out_.counts.imaging;
    add_imaging(acq, index);
  }

  void check_channels(ISMRMRD::Acquisition &acq, std::uint32_t index) {
    const int c = acq.active_channels();
    if (out_.header.coils == 0) out_.header.coils = c; // no receiverChannels in the header
    if (c != out_.header.coils)
      detail::ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + " has " + std::to_string(c) +
                                          " active channels, the header " + std::to_string(out_.header.coils));
    if (c == 0) detail::invalid_argument(path_.string() + ": acquisition " + std::to_string(index) + " channels", 0,
                                         "no coil data");
  }

  // A NaN in a noise scan would make the covariance, and so every prewhitened sample, NaN.
  std::vector<cfloat> noise_samples(ISMRMRD::Acquisition &acq, std::uint32_t index) {
    check_channels(acq, index);
    for (int c = 0; c < out_.header.coils; ++c)
      for (int i = 0; i < acq.number_of_samples(); ++i)
        check_finite(index, c, i, acq.data(static_cast<std::uint16_t>(i), static_cast<std::uint16_t>(c)));
    return {acq.getDataPtr(), acq.getDataPtr() + acq.getNumberOfDataElements()};
  }

  void check_finite(std::uint32_t index, int coil, int sample, cfloat v) const {
    if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
      detail::invalid_argument(path_.string() + ": acquisition " + std::to_string(index) + " coil " +
                                   std::to_string(coil) + " sample " + std::to_string(sample),
                               v, "not finite");
  }

  void add_imaging(ISMRMRD::Acquisition &acq, std::uint32_t index) {
    check_channels(acq, index);
    const int ns = acq.number_of_samples(), pre = acq.discard_pre(), post = acq.discard_post();
    if (pre + post >= ns && ns > 0)
      detail::ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + ": discard_pre + discard_post = " +
                                          std::to_string(pre + post) + " of " + std::to_string(ns) + " samples");
    const ISMRMRD::EncodingCounters &idx = acq.idx();
    Group &g = groups_[Key{idx.slice, idx.contrast, idx.repetition, idx.average, idx.phase, idx.set}];
    g.coils.resize(static_cast<std::size_t>(out_.header.coils));
    for (int i = pre; i < ns - post; ++i) g.points.push_back(point(acq, index, i));
    for (int c = 0; c < out_.header.coils; ++c)
      for (int i = pre; i < ns - post; ++i) {
        const cfloat v = acq.data(static_cast<std::uint16_t>(i), static_cast<std::uint16_t>(c));
        check_finite(index, c, i, v);
        g.coils[static_cast<std::size_t>(c)].push_back(v);
      }
  }

  // Sample i's position in the file's units (Cartesian: from the counters, in cycles/FOV).
  KPoint point(ISMRMRD::Acquisition &acq, std::uint32_t index, int i) {
    const int td = acq.trajectory_dimensions();
    if (td == 0 && out_.header.trajectory != "cartesian" && out_.header.trajectory != "epi")
      detail::ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + " has no trajectory, but the header's is " +
                                          out_.header.trajectory);
    if (td == 0) return cartesian_point(acq, i);
    if (td < grid_.dims())
      detail::ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + " has a " + std::to_string(td) +
                                          "-D trajectory for a " + std::to_string(grid_.dims()) + "-D encoding");
    non_cartesian_ = true;
    // A 2D encoding reads kx, ky: Gadgetron's spirals store the density weight as a third value.
    KPoint p{acq.traj(0, static_cast<std::uint16_t>(i)), acq.traj(1, static_cast<std::uint16_t>(i)),
             grid_.dims() == 3 ? acq.traj(2, static_cast<std::uint16_t>(i)) : 0.0f};
    if (!std::isfinite(p.kx) || !std::isfinite(p.ky) || !std::isfinite(p.kz))
      detail::invalid_argument(path_.string() + ": acquisition " + std::to_string(index) + " trajectory sample " +
                                   std::to_string(i),
                               "nan/inf", "not finite");
    out_.max_abs_k = std::max({out_.max_abs_k, static_cast<double>(std::abs(p.kx)),
                               static_cast<double>(std::abs(p.ky)), static_cast<double>(std::abs(p.kz))});
    return p;
  }

  KPoint cartesian_point(ISMRMRD::Acquisition &acq, int i) {
    const ISMRMRD::EncodingLimits &lim = xml_.encoding[0].encodingLimits;
    const float kx = static_cast<float>(i - acq.center_sample());
    const float ky = static_cast<float>(acq.idx().kspace_encode_step_1 -
                                        limit_centre(lim.kspace_encoding_step_1, out_.header.encoded_matrix[1]));
    const float kz = grid_.dims() == 3 ? static_cast<float>(acq.idx().kspace_encode_step_2 -
                                                            limit_centre(lim.kspace_encoding_step_2,
                                                                         out_.header.encoded_matrix[2]))
                                       : 0.0f;
    return {kx, ky, kz};
  }

  // Auto: normalised when no |k| exceeds 0.5 (cycles/FOV reach n/2 > 0.5 on any real grid).
  void choose_units() {
    out_.units = options_.units;
    if (!non_cartesian_) { // built from the counters, in cycles/FOV whatever was asked
      if (out_.units != TrajUnits::Auto)
        out_.notes.push_back(std::string("Cartesian acquisitions: trajectory from the encoding counters; units = ") +
                             to_string(out_.units) + " does not apply");
      out_.units = TrajUnits::CyclesPerFov;
      return;
    }
    const bool looks_normalized = out_.max_abs_k <= 0.5 + 1e-6;
    std::ostringstream os;
    os << "largest |k| in the file = " << out_.max_abs_k;
    if (out_.units == TrajUnits::Auto) {
      out_.units = looks_normalized ? TrajUnits::Normalized : TrajUnits::CyclesPerFov;
      out_.notes.push_back(os.str() + ": trajectory read as " + to_string(out_.units) + " (--traj-units auto)");
    } else if (looks_normalized != (out_.units == TrajUnits::Normalized)) {
      out_.notes.push_back("warning: " + os.str() + " suggests " +
                           (looks_normalized ? "normalized" : "cycles") + " units, but " +
                           to_string(out_.units) + " was asked for");
    }
  }

  void make_items() {
    for (auto &[key, g] : groups_) {
      if (non_cartesian_ && out_.units == TrajUnits::Normalized)
        for (KPoint &p : g.points)
          p = {p.kx * static_cast<float>(grid_.nx()), p.ky * static_cast<float>(grid_.ny()),
               p.kz * static_cast<float>(grid_.nz())};
      std::vector<cfloat> samples;
      samples.reserve(g.points.size() * g.coils.size());
      for (const auto &coil : g.coils) samples.insert(samples.end(), coil.begin(), coil.end());
      IsmrmrdItem item;
      std::tie(item.slice, item.contrast, item.repetition, item.average, item.phase, item.set) = key;
      item.data = KSpaceData(Trajectory(grid_.dims(), std::move(g.points)), std::move(samples), {},
                             out_.header.coils);
      out_.items.push_back(std::move(item));
    }
  }

  std::filesystem::path path_;
  IsmrmrdReadOptions options_;
  std::unique_ptr<ISMRMRD::Dataset> dataset_;
  detail::IsmrmrdGuard guard_; // after dataset_: HDF5 opens the file read-write for libismrmrd first
  ISMRMRD::IsmrmrdHeader xml_;
  IsmrmrdData out_;
  Grid grid_;
  bool non_cartesian_ = false;
  std::map<Key, Group> groups_; // ordered by the counters: the items' order
};

} // namespace

const char *to_string(TrajUnits u) {
  switch (u) {
  case TrajUnits::Auto: return "auto";
  case TrajUnits::CyclesPerFov: return "cycles";
  case TrajUnits::Normalized: return "normalized";
  }
  return "?";
}

IsmrmrdData read_ismrmrd(const std::filesystem::path &path, const IsmrmrdReadOptions &options) {
  const auto lock = detail::lock_hdf5();
  return Reader(path, options).read();
}

} // namespace mri
