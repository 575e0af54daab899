#pragma once
// ISMRMRD raw data (the field's HDF5 standard, written by Gadgetron, BART, the vendors'
// converters and ISMRMRD's own tools) read into KSpaceData, and written from it.
//
// Conventions of the reader:
// - The image grid is the first encoding space's *encoded* matrix; trajectories are returned in
//   our units, cycles per encoded FOV (BART's). A file's trajectory is either in those units or
//   normalised to [-0.5, 0.5] (Gadgetron): IsmrmrdReadOptions::units picks, Auto decides from the
//   largest |k| and says so in IsmrmrdData::notes.
// - Acquisitions without a trajectory (trajectory_dimensions = 0) are Cartesian: sample i of the
//   readout is at kx = i - center_sample, the line at ky = kspace_encode_step_1 - the encoding
//   limit's centre (kz likewise from step 2 on a 3D encoding), so files from
//   ismrmrd_generate_cartesian_shepp_logan reconstruct. Only where the header's trajectory is
//   cartesian or epi: elsewhere a missing trajectory is an IoError.
// - discard_pre / discard_post samples are dropped (with their trajectory points).
// - Noise scans (ISMRMRD_ACQ_IS_NOISE_MEASUREMENT) are not image data: they are kept apart and
//   give the coil noise covariance. Navigators, phase-correction, dummy-scan, feedback and
//   phase-stabilisation acquisitions are skipped. Every skipped acquisition is counted.
// - Image acquisitions are grouped by (slice, contrast, repetition, average, phase, set) into one
//   KSpaceData each, samples coil-major (sample m of coil c at c*M + m), in that counter order.
// - An item's geometry (read_dir, phase_dir, slice_dir, position) is that of its first
//   acquisition; none when one of the directions is zero (files that do not say).
//
// Thread safety: the readers and writers may be called from any number of threads, but their
// HDF5 calls run one at a time (HDF5 as Debian builds it is not thread-safe: one process-wide
// lock; a reader takes it per block of acquisitions, so readers interleave); prewhiten and
// noise_covariance run in parallel freely. The first call switches libismrmrd's and HDF5's error
// printing off process-wide (their messages become the IoError's text instead), and raises
// glibc's malloc mmap and trim thresholds to 8 and 32 MiB (mallopt, process-wide): HDF5 zeroes a
// fresh 1 MiB buffer per acquisition read otherwise, which slows reading several-fold. Other code of the
// process that calls HDF5 itself at the same time is not covered by the lock.
#include <array>
#include <cstdint>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mri/grid.hpp"
#include <optional>

#include "mri/image.hpp"
#include "mri/io/geometry.hpp"
#include "mri/kspace.hpp"

namespace mri {

// Units of the trajectory stored in an ISMRMRD file.
enum class TrajUnits {
  Auto,         // Normalized when every |k| <= 0.5 (and the grid is larger than 2), else CyclesPerFov
  CyclesPerFov, // ours and BART's: k in [-n/2, n/2)
  Normalized    // Gadgetron's: k in [-0.5, 0.5), multiplied by n on reading
};
const char *to_string(TrajUnits);

struct IsmrmrdReadOptions {
  TrajUnits units = TrajUnits::Auto;
  std::string group = "dataset"; // the HDF5 group holding the header and the acquisitions
  // The samples' times (KSpaceData::sample_times, for off-resonance correction) from each imaging
  // acquisition's sample_time_us (the dwell) and center_sample (the echo: the k-space centre
  // crossing): sample i of an acquisition, counted from its first stored sample (discarded ones
  // included), at time_offset + (i - center_sample) * sample_time_us seconds from the echo. Off:
  // no times. Refused (InvalidArgument naming the acquisition): a sample_time_us not > 0, a time
  // below 0 (samples before the echo: the model's times start there; time_offset moves them).
  bool sample_times = false;
  double time_offset = 0; // seconds, finite
};

// The facts of the XML header the reconstruction needs (first encoding space).
struct IsmrmrdHeader {
  std::array<int, 3> encoded_matrix{1, 1, 1};
  std::array<int, 3> recon_matrix{1, 1, 1};
  std::array<double, 3> encoded_fov_mm{0, 0, 0};
  std::array<double, 3> recon_fov_mm{0, 0, 0};
  std::string trajectory = "cartesian"; // cartesian, epi, radial, goldenangle, spiral, other
  int coils = 0;                        // receiverChannels, or the acquisitions' active channels
  int encodings = 1;                    // encoding spaces in the header (the first one is read)

  Grid encoded_grid() const { return Grid(encoded_matrix[0], encoded_matrix[1], encoded_matrix[2]); }
  Grid recon_grid() const { return Grid(recon_matrix[0], recon_matrix[1], recon_matrix[2]); }
};

// One imaging acquisition (a readout) of an item, in the item's order: what sorting a continuous
// acquisition into frames needs (mri/frames.hpp).
struct IsmrmrdReadout {
  std::size_t samples = 0;              // its samples per coil in the item (discards removed)
  std::uint32_t acquisition_time_stamp = 0; // the vendor's ticks (2.5 ms on Siemens' and ours)
  std::array<std::uint32_t, 3> physiology_time_stamp{0, 0, 0};
};

// One reconstruction problem of a file: the acquisitions of one counter combination.
struct IsmrmrdItem {
  int slice = 0, contrast = 0, repetition = 0, average = 0, phase = 0, set = 0;
  KSpaceData data;
  std::vector<IsmrmrdReadout> readouts; // its acquisitions, in the order of data's samples
  std::optional<ScannerGeometry> geometry; // none: the acquisitions do not say
};

// Acquisition counts: every acquisition of the file is in exactly one of these.
struct IsmrmrdCounts {
  std::size_t acquisitions = 0; // in the file
  std::size_t imaging = 0;      // read into items
  std::size_t noise = 0;        // noise scans (kept for the covariance)
  std::size_t navigation = 0;   // navigators
  std::size_t other = 0;        // phase correction, dummy scans, feedback, phase stabilisation
  std::size_t other_encoding = 0; // encoding_space_ref != 0 (only the first space is read)
};

struct IsmrmrdData {
  IsmrmrdHeader header;
  std::vector<IsmrmrdItem> items;
  IsmrmrdCounts counts;
  TrajUnits units = TrajUnits::CyclesPerFov; // the units the trajectory was read in
  double max_abs_k = 0;                      // largest |k| stored in the file (its own units)
  // The noise scans' samples, coil-major per scan: coil c of noise scan s at
  // noise[s][c*S + i] (S samples of that scan); empty without noise scans.
  std::vector<std::vector<cfloat>> noise;
  // Notes for the user: the units chosen by Auto, and a warning when the largest |k| suggests
  // the other unit than the one asked for.
  std::vector<std::string> notes;
};

// Throws IoError naming the file for a missing file, one that is not HDF5/ISMRMRD, a missing or
// malformed XML header, or acquisitions that disagree with it (channels, trajectory dimensions,
// no trajectory on a non-Cartesian encoding);
// InvalidArgument for a header with zero coils or an empty matrix, NaN/Inf samples (noise scans too) or
// trajectories (naming the acquisition), or a file without imaging acquisitions.
IsmrmrdData read_ismrmrd(const std::filesystem::path &path, const IsmrmrdReadOptions &options = {});

// The same reading, streamed: each item is handed over as soon as the acquisitions it is made
// of are read, so that work on the first slices starts while later ones are still read (a file
// written slice after slice completes its items one by one; an interleaved one at its end).
// read_ismrmrd is this reader keeping every item. Same conventions, checks and errors.
class IsmrmrdReader {
public:
  // Opens the file and reads the XML header and every acquisition's header (not the samples).
  // Throws what read_ismrmrd throws for those.
  explicit IsmrmrdReader(const std::filesystem::path &path, const IsmrmrdReadOptions &options = {});
  ~IsmrmrdReader();
  IsmrmrdReader(const IsmrmrdReader &) = delete;
  IsmrmrdReader &operator=(const IsmrmrdReader &) = delete;

  // The header; coils from the first noise or image acquisition where the XML has none.
  const IsmrmrdHeader &header() const;
  // The items in read_ismrmrd's order, with their counters and geometry, and empty data.
  const std::vector<IsmrmrdItem> &items() const;

  // Item `index` of items(), with its data; `file`: the header and every noise scan (all are
  // read before the first item is handed over), the counts so far.
  using ItemHandler = std::function<void(std::size_t index, IsmrmrdItem &&item, const IsmrmrdData &file)>;
  // Reads the samples, calling on_item once per item, on this thread, as soon as the item's
  // acquisitions and the noise scans are read and the trajectory units are settled (explicit
  // units at once; Auto as soon as a |k| above 0.5 shows cycles/FOV, else at the end of the
  // file). Returns what read_ismrmrd returns, without the items. Throws what read_ismrmrd
  // throws, after handing over the items completed before the error (a file damaged mid-way);
  // an exception of on_item stops the reading and propagates. Call once. Two threads of the
  // reader read the next acquisitions (taking the HDF5 lock) and prepare the next items' memory
  // while this one copies the acquisitions into the items and while on_item runs.
  IsmrmrdData read(const ItemHandler &on_item);

private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  bool read_ = false;
};

// The coils' noise covariance (C x C, row-major, Hermitian) from the noise scans: sum over
// samples of n_i conj(n_j) / (S - 1), S the total noise samples per coil. Empty without noise
// scans or with fewer than 2 samples. Throws InvalidArgument when a scan's size is not a multiple
// of `coils`.
std::vector<cdouble> noise_covariance(const std::vector<std::vector<cfloat>> &noise, int coils);

// The samples with the coils' noise decorrelated and normalised: sample vectors y (over coils)
// become L^{-1} y, covariance = L L^H (Cholesky), so the noise has identity covariance (the image
// scale changes by about 1/sigma). Throws InvalidArgument when covariance is not coils x coils or
// not positive definite.
KSpaceData prewhiten(const KSpaceData &data, const std::vector<cdouble> &covariance);

// One slice of a file to write: its data and where it lies.
struct IsmrmrdSlice {
  const KSpaceData *data = nullptr;
  std::optional<ScannerGeometry> geometry; // none: directions and position written as zeros
};

// What write_ismrmrd puts in a file: the header, each slice's data split into `readouts`
// acquisitions of equal length (each with its trajectory in cycles per FOV, slice counter = the
// slice's index, its geometry), and optional noise scans.
struct IsmrmrdWriteInput {
  IsmrmrdHeader header;           // encoded = recon matrix for a non-Cartesian file
  std::vector<IsmrmrdSlice> slices; // at least one; all with the same coils and samples per coil
  int readouts = 1;               // samples_per_coil must be a multiple of it
  TrajUnits units = TrajUnits::CyclesPerFov; // how the trajectory is stored
  std::vector<std::vector<cfloat>> noise;    // noise scans, coil-major as IsmrmrdData::noise
  // Optional, empty or one per readout (every slice the same): the acquisition_time_stamp
  // (ISMRMRD leaves its unit to the vendor; 2.5 ms ticks, Siemens', are the common one) and the
  // physiology_time_stamp[0..2] of readout r.
  std::vector<std::uint32_t> acquisition_time_stamps;
  std::vector<std::array<std::uint32_t, 3>> physiology_time_stamps;
  float sample_time_us = 0; // every acquisition's dwell time (ISMRMRD's sample_time_us), microseconds
};

// Writes a new file (replacing `path`) through a temporary file renamed at the end, so nothing
// half-written is left. Throws InvalidArgument for inconsistent input, IoError when writing fails.
void write_ismrmrd(const std::filesystem::path &path, const IsmrmrdWriteInput &input);

// Images into a new ISMRMRD file (group "dataset", variable "image_0", one image per entry with
// image_index and repetition = its position; FOV = voxel_mm x matrix; with `geometry`, one per
// image, its position and read/phase/slice directions): float magnitude, or complex float with
// `complex`. Written through a temporary file renamed at the end. Throws InvalidArgument for no
// images, extents above 65535 or a geometry count other than 0 or one per image, IoError when
// writing fails.
void write_ismrmrd_images(const std::filesystem::path &path, const std::vector<Image> &images,
                          const std::array<double, 3> &voxel_mm, bool complex = false,
                          const std::vector<ScannerGeometry> &geometry = {});

} // namespace mri
