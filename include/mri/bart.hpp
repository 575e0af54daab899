#pragma once
// BART interoperability: .cfl/.hdr files and the one place our conventions meet BART's.
//
// Thread safety: read_cfl and the conversions only read their arguments and may run on any number
// of threads at once; write_cfl writes base.hdr and base.cfl in place, so two writers of one base
// path (or a writer and a reader) race on the files.
#include <complex>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "mri/image.hpp"
#include "mri/trajectory.hpp"

namespace mri::bart {

// A BART array: dims (first fastest, trailing 1s allowed) and complex float data.
struct CflArray {
  std::vector<std::int64_t> dims;
  std::vector<cfloat> data;
};

// `base` is the path without extension (BART style): reads base.hdr and base.cfl.
// Throws IoError for a missing/unreadable/truncated file or a malformed header.
CflArray read_cfl(const std::filesystem::path &base);
// Throws InvalidArgument if prod(dims) != data.size(); IoError if writing fails.
void write_cfl(const std::filesystem::path &base, const std::vector<std::int64_t> &dims,
               const std::vector<cfloat> &data);

// BART's trajectory array (3 x samples x spokes ...) -> Trajectory. dims = 2 takes kx, ky
// and requires kz == 0. Units are the same (cycles/FOV).
Trajectory to_trajectory(const CflArray &traj, int dims);
CflArray from_trajectory(const Trajectory &t);
Image to_image(const CflArray &a);   // first three dims are x, y, z
CflArray from_image(const Image &image);

// BART's nufft is unitary-scaled: bart_nufft = nufft_scale(grid) * (our unnormalised sum).
double nufft_scale(const Grid &grid);

} // namespace mri::bart
