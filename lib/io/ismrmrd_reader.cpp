// ISMRMRD raw data -> KSpaceData per (slice, contrast, repetition, average, phase, set); the
// conventions are in include/mri/io/ismrmrd.hpp.
#include "mri/io/ismrmrd.hpp"

#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/xml.h>

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "ismrmrd_blocks.hpp"
#include "ismrmrd_common.hpp"
#include "ismrmrd_guard.hpp"
#include "ismrmrd_plan.hpp"
#include "item_memory.hpp"
#include "mri/error.hpp"

namespace mri {
namespace {

// |k| up to this in a non-Cartesian file: normalised units (TrajUnits::Auto); cycles per FOV
// reach n/2 > 0.5 on any real grid.
constexpr double kNormalizedLimit = 0.5 + 1e-6;

// Items whose arrays are prepared before the reader meets them: 40 MB for 256^2, 8 coils.
constexpr std::size_t kItemsAhead = 4;

// One item while reading: points in the file's units, samples coil-major in place (sized from
// the headers first, so each sample is written once: no growing and concatenating).
struct Group {
  std::vector<KPoint> points;  // the samples per coil read so far
  std::vector<cfloat> samples; // coil c's sample m at c * per_coil + m
  std::vector<float> times;    // IsmrmrdReadOptions::sample_times: one per point
  std::vector<IsmrmrdReadout> readouts;
  bool seen = false;
};

// `path`, once it is known to be an HDF5 file and `group` a group name (IoError, InvalidArgument
// otherwise); IsmrmrdGuard then opens it. The reader asks HDF5 directly: libismrmrd's Dataset
// opens the file read-write (after a failed chunk lookup HDF5 1.10.8 cannot close such a handle,
// and crashed closing it at exit), leaks its names when its constructor throws, and its
// readHeader left HDF5 objects open on a header HDF5 reads fine (all found by fuzzing).
const std::filesystem::path &checked_file(const std::filesystem::path &path, const std::string &group) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) detail::ismrmrd_io_error(path, "no such file");
  if (group.empty() || group.find('/') != std::string::npos)
    detail::invalid_argument("IsmrmrdReadOptions::group", group, "one HDF5 group name, without '/'");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); // no HDF5 error stack on stderr: ours is the message
  if (H5Fis_hdf5(path.c_str()) <= 0) detail::ismrmrd_io_error(path, "not an HDF5 file (ISMRMRD raw data is HDF5)");
  return path;
}

const IsmrmrdReadOptions &checked_times(const IsmrmrdReadOptions &o) {
  if (!std::isfinite(o.time_offset))
    detail::invalid_argument("IsmrmrdReadOptions::time_offset", o.time_offset, "must be finite (seconds)");
  return o;
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

ISMRMRD::IsmrmrdHeader read_xml(const detail::IsmrmrdGuard &guard, const std::filesystem::path &path) {
  const std::string xml = guard.read_header();
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

} // namespace

// Everything the reader needs while it walks the acquisitions.
class IsmrmrdReader::Impl {
public:
  Impl(const std::filesystem::path &path, const IsmrmrdReadOptions &options)
      : path_(path), options_(checked_times(options)), guard_(checked_file(path, options.group), options.group),
        xml_(read_xml(guard_, path)), acquisitions_(path, options.group) {
    out_.header = header_facts(xml_, path);
    grid_ = out_.header.encoded_grid();
    plan_ = detail::plan_items(acquisitions_.headers());
    if (out_.header.coils == 0) out_.header.coils = plan_.coils; // no receiverChannels in the header
    groups_.resize(plan_.items.size());
    for (const detail::PlannedItem &p : plan_.items) {
      IsmrmrdItem &item = items_.emplace_back();
      std::tie(item.slice, item.contrast, item.repetition, item.average, item.phase, item.set) = p.key;
      item.geometry = p.geometry;
    }
  }

  const IsmrmrdHeader &header() const { return out_.header; }
  const std::vector<IsmrmrdItem> &items() const { return items_; }

  // Without the HDF5 lock: the blocks' thread takes it.
  IsmrmrdData read(const ItemHandler &on_item) {
    on_item_ = &on_item;
    struct Stop { // the blocks' thread ends with this call, however it ends
      detail::AcquisitionBlocks &blocks;
      ~Stop() { blocks.stop(); }
    } stop{acquisitions_};
    std::vector<std::size_t> sizes; // the items' sizes in the order the loop below meets them
    for (const std::size_t k : plan_.starts) sizes.push_back(plan_.items[k].per_coil);
    detail::ItemMemory memory(std::move(sizes), static_cast<std::size_t>(out_.header.coils), kItemsAhead);
    memory_ = &memory;
    const std::size_t n = acquisitions_.size();
    out_.counts.acquisitions = n;
    auto next = plan_.completions.cbegin();
    for (std::size_t i = 0; i < n; ++i) {
      read_one(i);
      for (; next != plan_.completions.cend() && next->first == i; ++next) complete(next->second);
    }
    if (plan_.items.empty())
      detail::invalid_argument(path_.string() + ": imaging acquisitions", 0,
                               "the file holds none (" + std::to_string(n) + " acquisitions in all)");
    choose_units();
    hand_over(non_cartesian_ && out_.units == TrajUnits::Normalized); // the items that waited for the units
    return std::move(out_);
  }

private:
  void read_one(std::size_t index) {
    const detail::AcquisitionView acq = acquisitions_.read(index); // checks the arrays' lengths
    switch (detail::classify(acq.head.flags)) {
    case detail::AcquisitionKind::Noise: ++out_.counts.noise; out_.noise.push_back(noise_samples(acq, index)); return;
    case detail::AcquisitionKind::Navigation: ++out_.counts.navigation; return;
    case detail::AcquisitionKind::Other: ++out_.counts.other; return;
    case detail::AcquisitionKind::Imaging: break;
    }
    if (acq.head.encoding_space_ref != 0) {
      ++out_.counts.other_encoding;
      return;
    }
    ++out_.counts.imaging;
    add_imaging(acq, index);
  }

  // Item `item` has all its acquisitions (and the noise scans): handed over once the units are
  // settled, with those that waited for them.
  void complete(std::size_t item) {
    waiting_.push_back(item);
    if (const std::optional<bool> scaled = scaling_settled()) hand_over(*scaled);
  }

  // Whether the points are scaled from normalised units, once no later acquisition can change
  // what choose_units will say; none while it still can.
  std::optional<bool> scaling_settled() const {
    switch (options_.units) {
    case TrajUnits::CyclesPerFov: return false;
    case TrajUnits::Normalized: return non_cartesian_ ? std::optional<bool>(true) : std::nullopt;
    case TrajUnits::Auto: return out_.max_abs_k > kNormalizedLimit ? std::optional<bool>(false) : std::nullopt;
    }
    return std::nullopt;
  }

  void hand_over(bool scaled) {
    for (const std::size_t k : std::exchange(waiting_, {})) {
      IsmrmrdItem item = make_item(k, scaled);
      (*on_item_)(k, std::move(item), out_);
    }
  }

  IsmrmrdItem make_item(std::size_t k, bool scaled) {
    Group &g = groups_[k];
    if (scaled)
      for (KPoint &p : g.points)
        p = {p.kx * static_cast<float>(grid_.nx()), p.ky * static_cast<float>(grid_.ny()),
             p.kz * static_cast<float>(grid_.nz())};
    IsmrmrdItem item = items_[k]; // counters and geometry
    item.data = KSpaceData(Trajectory(grid_.dims(), std::move(g.points)), std::move(g.samples), {}, out_.header.coils,
                           std::move(g.times));
    item.readouts = std::move(g.readouts);
    g = Group{};
    return item;
  }

  void check_channels(const detail::AcquisitionView &acq, std::size_t index) {
    const int c = acq.head.active_channels;
    if (c != out_.header.coils)
      detail::ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + " has " + std::to_string(c) +
                                          " active channels, the header " + std::to_string(out_.header.coils));
    if (c == 0) detail::invalid_argument(path_.string() + ": acquisition " + std::to_string(index) + " channels", 0,
                                         "no coil data");
  }

  // A NaN in a noise scan would make the covariance, and so every prewhitened sample, NaN.
  std::vector<cfloat> noise_samples(const detail::AcquisitionView &acq, std::size_t index) {
    check_channels(acq, index);
    const std::size_t ns = acq.head.number_of_samples;
    for (std::size_t c = 0; c < acq.head.active_channels; ++c)
      check_finite(index, c, acq.data + c * ns, acq.data + (c + 1) * ns, 0);
    return {acq.data, acq.data + ns * acq.head.active_channels};
  }

  // Samples [first, last) of coil `coil` of acquisition `index`, numbered from `offset`.
  void check_finite(std::size_t index, std::size_t coil, const cfloat *first, const cfloat *last, int offset) const {
    const cfloat *bad =
        std::find_if(first, last, [](cfloat v) { return !std::isfinite(v.real()) || !std::isfinite(v.imag()); });
    if (bad != last)
      detail::invalid_argument(path_.string() + ": acquisition " + std::to_string(index) + " coil " +
                                   std::to_string(coil) + " sample " + std::to_string(offset + (bad - first)),
                               *bad, "not finite");
  }

  void add_imaging(const detail::AcquisitionView &acq, std::size_t index) {
    check_channels(acq, index);
    detail::check_discards(path_, acq.head, index);
    const int ns = acq.head.number_of_samples, pre = acq.head.discard_pre, post = acq.head.discard_post;
    if (pre + post >= ns && ns > 0)
      detail::ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + ": discard_pre + discard_post = " +
                                          std::to_string(pre + post) + " of " + std::to_string(ns) + " samples");
    Group &g = groups_[plan_.item_of[index]];
    const std::size_t per_coil = plan_.items[plan_.item_of[index]].per_coil;
    const auto coils = static_cast<std::size_t>(out_.header.coils);
    if (!g.seen) { // at the item's first acquisition: an interleaved file's items grow together
      g.seen = true;
      detail::ItemMemory::Arrays arrays = memory_->take();
      if (arrays.samples.size() != per_coil * coils) throw std::logic_error("ismrmrd reader: items taken out of order");
      g.points = std::move(arrays.points);
      g.samples = std::move(arrays.samples);
    }
    const std::size_t at = g.points.size(); // samples per coil so far
    const int kept = detail::kept_samples(ns, pre, post);
    if (at + static_cast<std::size_t>(kept) > per_coil)
      detail::ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + ": more samples than its header said");
    for (int i = pre; i < pre + kept; ++i) g.points.push_back(point(acq, index, i));
    if (options_.sample_times) add_times(acq.head, index, pre, kept, g.times);
    g.readouts.push_back({static_cast<std::size_t>(kept), acq.head.acquisition_time_stamp,
                          {acq.head.physiology_time_stamp[0], acq.head.physiology_time_stamp[1],
                           acq.head.physiology_time_stamp[2]}});
    for (std::size_t c = 0; c < coils; ++c) { // libismrmrd stores coil c's samples at c * ns
      const cfloat *first = acq.data + c * static_cast<std::size_t>(ns) + pre, *last = first + kept;
      check_finite(index, c, first, last, pre);
      std::copy(first, last, g.samples.begin() + static_cast<std::ptrdiff_t>(c * per_coil + at));
    }
  }

  // IsmrmrdReadOptions::sample_times of samples [pre, pre + kept) of acquisition `index`.
  void add_times(const ISMRMRD::ISMRMRD_AcquisitionHeader &h, std::size_t index, int pre, int kept,
                 std::vector<float> &times) const {
    const float dwell_us = h.sample_time_us; // by value: the packed header's field may be misaligned
    const std::string where = path_.string() + ": acquisition " + std::to_string(index);
    if (!(dwell_us > 0) || !std::isfinite(dwell_us))
      detail::invalid_argument(where + " sample_time_us", dwell_us, "must be > 0 to give the samples' times");
    const int centre = h.center_sample;
    for (int i = pre; i < pre + kept; ++i) {
      double t = options_.time_offset + (i - centre) * 1e-6 * static_cast<double>(dwell_us);
      if (t < 0 && t > -1e-12) t = 0; // an offset of exactly center_sample dwells, up to its rounding
      if (!(t >= 0))
        detail::invalid_argument(where + " sample " + std::to_string(i) + " time", t,
                                 "must be >= 0 seconds from the echo (center_sample " + std::to_string(centre) +
                                     "; IsmrmrdReadOptions::time_offset moves the times)");
      times.push_back(static_cast<float>(t));
    }
  }

  // Sample i's position in the file's units (Cartesian: from the counters, in cycles/FOV).
  KPoint point(const detail::AcquisitionView &acq, std::size_t index, int i) {
    const int td = acq.head.trajectory_dimensions;
    if (td == 0 && out_.header.trajectory != "cartesian" && out_.header.trajectory != "epi")
      detail::ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + " has no trajectory, but the header's is " +
                                          out_.header.trajectory);
    if (td == 0) return cartesian_point(acq.head, i);
    if (td < grid_.dims())
      detail::ismrmrd_io_error(path_, "acquisition " + std::to_string(index) + " has a " + std::to_string(td) +
                                          "-D trajectory for a " + std::to_string(grid_.dims()) + "-D encoding");
    non_cartesian_ = true;
    // A 2D encoding reads kx, ky: Gadgetron's spirals store the density weight as a third value.
    KPoint p{acq.traj_at(0, i), acq.traj_at(1, i), grid_.dims() == 3 ? acq.traj_at(2, i) : 0.0f};
    if (!std::isfinite(p.kx) || !std::isfinite(p.ky) || !std::isfinite(p.kz))
      detail::invalid_argument(path_.string() + ": acquisition " + std::to_string(index) + " trajectory sample " +
                                   std::to_string(i),
                               "nan/inf", "not finite");
    out_.max_abs_k = std::max({out_.max_abs_k, static_cast<double>(std::abs(p.kx)),
                               static_cast<double>(std::abs(p.ky)), static_cast<double>(std::abs(p.kz))});
    return p;
  }

  KPoint cartesian_point(const ISMRMRD::ISMRMRD_AcquisitionHeader &h, int i) {
    const ISMRMRD::EncodingLimits &lim = xml_.encoding[0].encodingLimits;
    const float kx = static_cast<float>(i - h.center_sample);
    const float ky = static_cast<float>(h.idx.kspace_encode_step_1 -
                                        limit_centre(lim.kspace_encoding_step_1, out_.header.encoded_matrix[1]));
    const float kz = grid_.dims() == 3 ? static_cast<float>(h.idx.kspace_encode_step_2 -
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
    const bool looks_normalized = out_.max_abs_k <= kNormalizedLimit;
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

  std::filesystem::path path_;
  IsmrmrdReadOptions options_;
  detail::IsmrmrdGuard guard_;
  ISMRMRD::IsmrmrdHeader xml_;
  detail::AcquisitionBlocks acquisitions_; // read in blocks, not one H5Dread each, by a thread of their own
  IsmrmrdData out_;
  Grid grid_;
  bool non_cartesian_ = false;
  detail::IsmrmrdPlan plan_;
  std::vector<IsmrmrdItem> items_;   // the plan's items, without data
  std::vector<Group> groups_;        // per item, while it is read
  std::vector<std::size_t> waiting_; // complete items waiting for the units to settle
  const ItemHandler *on_item_ = nullptr;
  detail::ItemMemory *memory_ = nullptr; // during read(): the items' arrays, prepared ahead
};

const char *to_string(TrajUnits u) {
  switch (u) {
  case TrajUnits::Auto: return "auto";
  case TrajUnits::CyclesPerFov: return "cycles";
  case TrajUnits::Normalized: return "normalized";
  }
  return "?";
}

IsmrmrdReader::IsmrmrdReader(const std::filesystem::path &path, const IsmrmrdReadOptions &options) {
  const auto lock = detail::lock_hdf5();
  impl_ = std::make_unique<Impl>(path, options);
}

IsmrmrdReader::~IsmrmrdReader() {
  const auto lock = detail::lock_hdf5(); // closing the file is HDF5 too
  impl_.reset();
}

const IsmrmrdHeader &IsmrmrdReader::header() const { return impl_->header(); }
const std::vector<IsmrmrdItem> &IsmrmrdReader::items() const { return impl_->items(); }

IsmrmrdData IsmrmrdReader::read(const ItemHandler &on_item) {
  if (read_) detail::invalid_argument("IsmrmrdReader::read", "a second call", "a reader reads its file once");
  read_ = true;
  return impl_->read(on_item);
}

IsmrmrdData read_ismrmrd(const std::filesystem::path &path, const IsmrmrdReadOptions &options) {
  IsmrmrdReader reader(path, options);
  std::vector<IsmrmrdItem> items(reader.items().size());
  IsmrmrdData d = reader.read([&items](std::size_t i, IsmrmrdItem &&item, const IsmrmrdData &) { items[i] = std::move(item); });
  d.items = std::move(items);
  return d;
}

} // namespace mri
