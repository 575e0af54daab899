// KSpaceData -> a new ISMRMRD file (what `mri phantom --out raw.h5` writes), through a temporary
// file renamed at the end so a failure leaves nothing half-written.
#include "mri/io/ismrmrd.hpp"

#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/xml.h>

#include <array>
#include <cstring>
#include <sstream>

#include "ismrmrd_common.hpp"
#include "mri/error.hpp"

namespace mri {
namespace {

ISMRMRD::TrajectoryType trajectory_type(const std::string &name) {
  if (name == "cartesian") return ISMRMRD::TrajectoryType::CARTESIAN;
  if (name == "epi") return ISMRMRD::TrajectoryType::EPI;
  if (name == "radial") return ISMRMRD::TrajectoryType::RADIAL;
  if (name == "goldenangle") return ISMRMRD::TrajectoryType::GOLDENANGLE;
  if (name == "spiral") return ISMRMRD::TrajectoryType::SPIRAL;
  return ISMRMRD::TrajectoryType::OTHER;
}

ISMRMRD::EncodingSpace space(const std::array<int, 3> &m, const std::array<double, 3> &fov) {
  ISMRMRD::EncodingSpace s;
  s.matrixSize = ISMRMRD::MatrixSize(static_cast<unsigned short>(m[0]), static_cast<unsigned short>(m[1]),
                                     static_cast<unsigned short>(m[2]));
  s.fieldOfView_mm = {static_cast<float>(fov[0]), static_cast<float>(fov[1]), static_cast<float>(fov[2])};
  return s;
}

std::string header_xml(const IsmrmrdWriteInput &in) {
  ISMRMRD::IsmrmrdHeader h;
  ISMRMRD::Encoding e;
  e.encodedSpace = space(in.header.encoded_matrix, in.header.encoded_fov_mm);
  e.reconSpace = space(in.header.recon_matrix, in.header.recon_fov_mm);
  e.trajectory = trajectory_type(in.header.trajectory);
  e.encodingLimits.kspace_encoding_step_1 =
      ISMRMRD::Limit(0, static_cast<unsigned short>(in.readouts - 1), static_cast<unsigned short>(in.readouts / 2));
  const auto slices = static_cast<unsigned short>(in.slices.size());
  e.encodingLimits.slice = ISMRMRD::Limit(0, static_cast<unsigned short>(slices - 1), static_cast<unsigned short>(slices / 2));
  h.encoding.push_back(e);
  ISMRMRD::AcquisitionSystemInformation sys;
  sys.receiverChannels = static_cast<unsigned short>(in.slices[0].data->coils());
  h.acquisitionSystemInformation = sys;
  std::ostringstream os;
  ISMRMRD::serialize(h, os);
  return os.str();
}

void check_input(const IsmrmrdWriteInput &in) {
  if (in.slices.empty()) detail::invalid_argument("write_ismrmrd: slices", 0, "no k-space data");
  for (std::size_t s = 0; s < in.slices.size(); ++s) {
    const KSpaceData *d = in.slices[s].data;
    const std::string name = "write_ismrmrd: slices[" + std::to_string(s) + "]";
    if (d == nullptr) detail::invalid_argument(name + ".data", "null", "no k-space data");
    if (d->coils() != in.slices[0].data->coils() || d->samples_per_coil() != in.slices[0].data->samples_per_coil())
      detail::invalid_argument(name + ".data", d->samples_per_coil(), "differs from slices[0] in coils or samples per coil");
    if (d->has_weights())
      detail::invalid_argument(name + ".data.weights()", d->weights().size(),
                               "ISMRMRD stores no density weights; pass data without them");
  }
  if (in.slices.size() > 65535) detail::invalid_argument("write_ismrmrd: slices", in.slices.size(), "too many");
  const KSpaceData &first = *in.slices[0].data;
  const std::size_t m = first.samples_per_coil();
  if (in.readouts < 1 || m % static_cast<std::size_t>(in.readouts) != 0 || m / in.readouts > 65535)
    detail::invalid_argument("write_ismrmrd: readouts", in.readouts,
                             "must divide the " + std::to_string(m) + " samples per coil into readouts of at most 65535");
  if (in.units == TrajUnits::Auto) detail::invalid_argument("write_ismrmrd: units", "auto", "say cycles or normalized");
  if (first.coils() > 65535) detail::invalid_argument("write_ismrmrd: coils", first.coils(), "too many");
  const auto stamps = [&](std::size_t size, const char *name) {
    if (size != 0 && size != static_cast<std::size_t>(in.readouts))
      detail::invalid_argument(std::string("write_ismrmrd: ") + name + ".size()", size,
                               "must be 0 or the readouts, " + std::to_string(in.readouts));
  };
  stamps(in.acquisition_time_stamps.size(), "acquisition_time_stamps");
  stamps(in.physiology_time_stamps.size(), "physiology_time_stamps");
}

// The header is packed (2-byte aligned): its float arrays are written by memcpy, not through the
// float pointers the accessors return (a misaligned store; UBSan in CI).
void set_geometry(ISMRMRD::Acquisition &acq, const ScannerGeometry &g) {
  const auto put = [](float *to, const std::array<double, 3> &v) {
    const float f[3] = {static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
    std::memcpy(to, f, sizeof f);
  };
  put(acq.read_dir(), g.read_dir);
  put(acq.phase_dir(), g.phase_dir);
  put(acq.slice_dir(), g.slice_dir);
  put(acq.position(), g.position);
}

// Readout r of slice `slice` as an acquisition: C channels x S samples, its trajectory in `units`.
ISMRMRD::Acquisition readout(const IsmrmrdWriteInput &in, std::size_t slice, int r) {
  const KSpaceData &d = *in.slices[slice].data;
  const std::size_t m = d.samples_per_coil(), s = m / static_cast<std::size_t>(in.readouts);
  const int dims = d.trajectory().dims();
  ISMRMRD::Acquisition acq(static_cast<std::uint16_t>(s), static_cast<std::uint16_t>(d.coils()),
                           static_cast<std::uint16_t>(dims));
  const std::array<int, 3> &n = in.header.encoded_matrix;
  for (std::size_t i = 0; i < s; ++i) {
    const KPoint &p = d.trajectory()[r * s + i];
    const float k[3] = {p.kx, p.ky, p.kz};
    for (int a = 0; a < dims; ++a)
      acq.traj(static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(i)) =
          in.units == TrajUnits::Normalized ? k[a] / static_cast<float>(n[a]) : k[a];
    for (int c = 0; c < d.coils(); ++c)
      acq.data(static_cast<std::uint16_t>(i), static_cast<std::uint16_t>(c)) = d.samples()[c * m + r * s + i];
  }
  acq.idx().kspace_encode_step_1 = static_cast<std::uint16_t>(r);
  acq.idx().slice = static_cast<std::uint16_t>(slice);
  if (in.slices[slice].geometry) set_geometry(acq, *in.slices[slice].geometry);
  acq.center_sample() = static_cast<std::uint16_t>(s / 2);
  // memcpy: the packed header's 32-bit fields may be misaligned (as set_geometry's floats).
  std::memcpy(&acq.sample_time_us(), &in.sample_time_us, sizeof(float));
  if (!in.acquisition_time_stamps.empty())
    std::memcpy(&acq.acquisition_time_stamp(), &in.acquisition_time_stamps[static_cast<std::size_t>(r)], sizeof(std::uint32_t));
  if (!in.physiology_time_stamps.empty())
    std::memcpy(&acq.physiology_time_stamp(), in.physiology_time_stamps[static_cast<std::size_t>(r)].data(),
                3 * sizeof(std::uint32_t)); // the array's address: no misaligned element is formed
  if (r == 0) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_FIRST_IN_SLICE);
  if (r == in.readouts - 1) acq.setFlag(ISMRMRD::ISMRMRD_ACQ_LAST_IN_SLICE);
  return acq;
}

ISMRMRD::Acquisition noise_scan(const std::vector<cfloat> &noise, int coils) {
  const std::size_t s = noise.size() / static_cast<std::size_t>(coils);
  ISMRMRD::Acquisition acq(static_cast<std::uint16_t>(s), static_cast<std::uint16_t>(coils), 0);
  std::copy(noise.begin(), noise.end(), acq.getDataPtr()); // coil-major, as libismrmrd stores it
  acq.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
  return acq;
}

void write_all(const std::filesystem::path &path, const IsmrmrdWriteInput &in) {
  ISMRMRD::Dataset dataset(path.c_str(), "dataset", true);
  dataset.writeHeader(header_xml(in));
  for (const auto &noise : in.noise) dataset.appendAcquisition(noise_scan(noise, in.slices[0].data->coils()));
  for (std::size_t s = 0; s < in.slices.size(); ++s)
    for (int r = 0; r < in.readouts; ++r) dataset.appendAcquisition(readout(in, s, r));
}

} // namespace

void write_ismrmrd(const std::filesystem::path &path, const IsmrmrdWriteInput &input) {
  check_input(input);
  for (std::size_t s = 0; s < input.noise.size(); ++s)
    if (input.noise[s].size() % static_cast<std::size_t>(input.slices[0].data->coils()) != 0)
      detail::invalid_argument("write_ismrmrd: noise[" + std::to_string(s) + "].size()", input.noise[s].size(),
                               "not a multiple of the coils");
  detail::write_then_rename(path, [&](const std::filesystem::path &tmp) { write_all(tmp, input); });
}

} // namespace mri
