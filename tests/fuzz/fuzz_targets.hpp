#pragma once
// The fuzz harnesses, one per file reader of the SDK and one for the `mri` command line. Each
// takes one input as raw bytes, feeds it to the reader through a real file (the readers' public
// API takes paths; cli_options: as arguments), and fails hard (std::abort, or an exception
// escaping: std::terminate) on anything but a clean result or an mri::Error: every hostile file
// must be answered by an SDK exception, never a crash, a hang, another exception type or a
// silently wrong value.
//
// libFuzzer drives them through libfuzzer_main.cpp (option MRI_BUILD_FUZZERS, clang only);
// mri_fuzz_replay (fuzz_replay.cpp) runs the committed corpus and regression inputs through the
// same functions in every build, as ctest entries. Seeds: tests/fuzz/README.md; figures:
// docs/reliability.md.
#include <cstddef>
#include <cstdint>

#include "mri/grid.hpp"
#include "mri/toeplitz_cache.hpp"

namespace mri::fuzz {

// bart::read_cfl on a .hdr/.cfl pair: the bytes before the first NUL are the .hdr text, those
// after it the .cfl data (no NUL: all header, empty data). A successful read is also converted
// by bart::to_image and bart::to_trajectory (2D and 3D).
int cfl_reader(const std::uint8_t *data, std::size_t size);

// load_toeplitz_spectrum on the input as an entry file, for q_cache_grid() and q_cache_key().
// A successful load must hold q_cache_grid().doubled().voxels() finite values.
int q_cache_reader(const std::uint8_t *data, std::size_t size);

// read_ismrmrd on a file made from the input, then what `mri recon` does with a read before
// reconstructing (output grid, noise covariance, prewhitening, trajectory range). The first
// byte's lowest bit picks how the file is made: 0, the rest of the input is the file's bytes;
// 1, the rest is an XML header (up to a NUL) and up to 8 acquisitions (flags, sizes, counters and
// one byte per value: fuzz_ismrmrd.cpp) written by libismrmrd into a valid file, so that the
// reader's own checks are reached and not only HDF5's. A successful read must keep its promises
// (counts that add up, items matching the header, finite samples).
int ismrmrd_reader(const std::uint8_t *data, std::size_t size);

// read_nifti on the input as a .nii file; a successful read's dims must match its data.
int nifti_reader(const std::uint8_t *data, std::size_t size);

// The `mri` app (cli/app.hpp) parses the input split at NUL bytes into arguments; a parse also
// runs the subcommand's checks of its options, never its work (no file is read or written). A
// finding is any outcome but a clean parse choosing a subcommand, CLI::ParseError,
// cli::UsageError or mri::Error.
int cli_options(const std::uint8_t *data, std::size_t size);

// The entry the Q-cache harness expects (its corpus's seed inputs are this key's valid entries).
Grid q_cache_grid();
ToeplitzCacheKey q_cache_key();

} // namespace mri::fuzz
