#pragma once
// What `mri recon` reconstructs: the problems of an ISMRMRD file (one per slice, contrast,
// repetition, average ...) or of BART files, with the grid, the output crop and voxel size.
#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace mri::cli {

struct ReconProblem {
  std::string label; // "slice 0 contrast 0 repetition 1 ..." or the k-space file
  KSpaceData data;
  std::optional<ScannerGeometry> geometry; // ISMRMRD: where the item lies in the scanner
};

struct ReconInputs {
  Grid grid;                               // the reconstruction grid
  Grid output;                             // the written grid: centre crop of grid (ISMRMRD recon matrix)
  std::array<double, 3> voxel_mm{1, 1, 1}; // of the output
  bool bart = false;                       // BART inputs: --lambda and the image in BART's unitary units
  std::vector<ReconProblem> problems;
  nlohmann::json source;                   // for the report
};

struct InputArgs {
  std::string in, traj, kspace, weights, matrix, fov;
  std::string group = "dataset"; // ISMRMRD: the HDF5 group
  TrajUnits units = TrajUnits::Auto;
  bool prewhiten = true; // ISMRMRD: with the noise scans' covariance, when there are noise scans
};

// Throws UsageError for contradicting or missing inputs, or a malformed --matrix or --fov; reads
// no file (the subcommands call it while the command line is parsed).
void check_inputs(const InputArgs &args);

// The inputs of arguments that passed check_inputs. Throws the SDK's errors for bad files, and
// UsageError for a --matrix that contradicts an ISMRMRD file.
ReconInputs load_inputs(const InputArgs &args, bool quiet);

// Each problem's geometry, or none when one of them has none (BART inputs): the NIfTI placement.
std::vector<ScannerGeometry> scanner_geometry(const ReconInputs &inputs);

// The centre `to` of `image` (voxel coordinates {-n/2 .. n/2-1} kept on both).
Image centre_crop(const Image &image, const Grid &to);

} // namespace mri::cli
