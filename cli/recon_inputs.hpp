#pragma once
// What `mri recon` reconstructs: the problems of an ISMRMRD file (one per slice, contrast,
// repetition, average ...) or of BART files, with the grid, the output crop and voxel size.
#include <nlohmann/json.hpp>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace mri::cli {

struct ReconProblem {
  std::string label; // "slice 0 contrast 0 repetition 1 ..." or the k-space file
  KSpaceData data;   // ISMRMRD: empty until read_problems has read it
  std::vector<IsmrmrdReadout> readouts; // ISMRMRD: its acquisitions (sizes, time stamps); BART: none
  std::optional<ScannerGeometry> geometry; // ISMRMRD: where the item lies in the scanner
};

struct ReconInputs {
  Grid grid;                               // the reconstruction grid
  Grid output;                             // the written grid: centre crop of grid (ISMRMRD recon matrix)
  std::array<double, 3> voxel_mm{1, 1, 1}; // of the output
  bool bart = false;                       // BART inputs: --lambda and the image in BART's unitary units
  std::vector<ReconProblem> problems;
  nlohmann::json source;                   // for the report (ISMRMRD: complete once read_problems returns)

  // An ISMRMRD file whose samples are read by read_problems.
  struct Ismrmrd {
    std::unique_ptr<IsmrmrdReader> reader; // its headers read
    std::string file;
    bool prewhiten = true, quiet = false;
    std::vector<cdouble> covariance; // of the noise scans, once the first problem is read (empty: none)
  };
  std::optional<Ismrmrd> ismrmrd; // none: BART inputs, read whole by load_inputs
};

struct InputArgs {
  std::string in, traj, kspace, weights, matrix, fov;
  std::string readout_times; // BART: the samples' times (s), shaped like the k-space without coils
  std::string group = "dataset"; // ISMRMRD: the HDF5 group
  TrajUnits units = TrajUnits::Auto;
  bool prewhiten = true; // ISMRMRD: with the noise scans' covariance, when there are noise scans
};

// Throws UsageError for contradicting or missing inputs, or a malformed --matrix or --fov; reads
// no file (the subcommands call it while the command line is parsed).
void check_inputs(const InputArgs &args);

// The inputs of arguments that passed check_inputs: BART files read, an ISMRMRD file's headers
// read (its problems' labels and geometry, their data not yet). Throws the SDK's errors for bad
// files, and UsageError for a --matrix that contradicts an ISMRMRD file.
ReconInputs load_inputs(const InputArgs &args, bool quiet);

// Stores each problem's data, then calls ready(i), on the calling thread: an ISMRMRD file's
// problems as it is read (slice after slice for a file written so), BART's at once. Then
// completes `source` and says the file's counts (unless quiet). Throws the reader's errors.
void read_problems(ReconInputs &inputs, const std::function<void(std::size_t)> &ready);

// Problem i's data, moved out of the inputs, prewhitened with the noise scans' covariance where
// there is one (unless --no-prewhiten): what its reconstruction gets.
KSpaceData take_data(ReconInputs &inputs, std::size_t i);

// Each problem's geometry, or none when one of them has none (BART inputs): the NIfTI placement.
std::vector<ScannerGeometry> scanner_geometry(const ReconInputs &inputs);

// The centre `to` of `image` (voxel coordinates {-n/2 .. n/2-1} kept on both).
Image centre_crop(const Image &image, const Grid &to);

} // namespace mri::cli
