#pragma once
// A file cache for the Toeplitz kernel. Q (and so its spectrum) depends only on the trajectory,
// the density weights and the grid, so a scanner's trajectory pays for Q once: reconstruct()
// with ReconOptions::q_cache_dir looks the spectrum up by a 128-bit hash of all three, and
// computes and stores it on a miss.
//
// What is stored: the Toeplitz spectrum K = Re(FFT(Q)) / L on grid.doubled() (L voxels), in FFT
// order (offset d at index d mod L per axis), as float32. Q is Hermitian, Q(-d) = conj(Q(d)), so
// its spectrum is real up to the offsets d = -n per axis (whose partner +n is not on the grid):
// they never enter the cropped convolution, so the real part of FFT(Q) is the same operator. F^H W F x = crop(IFFT(K .* FFT(zero-pad(x)))) with an unnormalised inverse FFT.
//
// File (format version 2): a fixed header (magic, format version, the key, the image and padded
// grids, the sample count, the payload length and a checksum of header and payload) followed by
// the L floats. Loading checks every field against what the caller expects: a file written for
// another trajectory, weights or grid (a stale entry, a renamed file, a hash collision), another
// format version (version 1 included) or a truncated/corrupt one is rejected with an IoError
// saying which field differs; the size is checked before anything is allocated.
//
// Faults (tested in tests/toeplitz/test_toeplitz_cache_faults.cpp, figures in docs/reliability.md): a
// write goes to a unique temporary file in the same directory, is fsync-ed, then renamed into
// place, so a reader sees the old entry, no entry or the whole new one, whatever happens to the
// writer (SIGKILL, full disk, concurrent writers of the same entry in other threads or
// processes: the last rename wins, both wrote the same bytes). A killed writer may leave a
// "<entry>.tmp.<pid>.<n>" file behind that no reader opens.
//
// The proximal solvers' step (docs/sparse.md) comes from L, the largest eigenvalue of the normal
// operator N = sum_c S_c^H F^H W F S_c + lambda R^H R, by a power iteration: it is kept beside Q
// as well (lipschitz-<key>.mril, the same write and reject rules), so that a second solve with the
// same Q, maps, l2 term, backend and power-iteration count skips it (ReconReport::lipschitz_cached).
// What is kept is the first solve's estimate (ProximalSolver::initial_lipschitz): a solve of the
// same data starts from the same L and repeats the first bit for bit; one of other data starts
// from that estimate of the same eigenvalue instead of its own.
//
// Thread safety: every function here may be called concurrently from any number of threads and
// processes, for the same entry too.
#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/options.hpp"
#include "mri/regularizer.hpp"
#include "mri/trajectory.hpp"

namespace mri {

struct ToeplitzCacheKey {
  std::array<std::uint64_t, 2> hash{};
  std::uint64_t samples = 0;
  std::string hex() const; // 32 hex digits
  friend bool operator==(const ToeplitzCacheKey &, const ToeplitzCacheKey &) = default;
};

// The key of (trajectory, weights, grid, precision of Q, how Q was computed: nufft_tolerance 0
// for the exact sum, else the NUFFT tolerance). Any change of a coordinate or weight bit, of the
// sample count or order, of the grid, the precision or the method gives a different key.
// Throws InvalidArgument if weights are neither empty nor one per sample.
ToeplitzCacheKey toeplitz_cache_key(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
                                    Precision precision, double nufft_tolerance = 0);

// <dir>/toeplitz-<key.hex()>.mriq
std::filesystem::path toeplitz_cache_file(const std::filesystem::path &dir, const ToeplitzCacheKey &key);

// Writes the spectrum (grid.doubled().voxels() floats). Creates `file`'s directory if needed.
// Throws InvalidArgument on a wrong length or a non-finite value, IoError when the file cannot be
// written.
void save_toeplitz_spectrum(const std::filesystem::path &file, const ToeplitzCacheKey &key, const Grid &grid,
                            std::span<const float> spectrum);

// Reads a spectrum written for exactly (key, grid). Throws IoError naming the file and the
// reason: missing, truncated, not a spectrum file, another format version, another key or grid,
// checksum mismatch.
std::vector<float> load_toeplitz_spectrum(const std::filesystem::path &file, const ToeplitzCacheKey &key,
                                          const Grid &grid);

// The key of L for the normal operator on Q's entry `q`: the coil maps' values (empty: one coil
// without maps), the l2 term (regularizer, lambda), the backend (its rounding moves the estimate)
// and the power iterations of the estimate. Any change of these gives a different key.
ToeplitzCacheKey lipschitz_cache_key(const ToeplitzCacheKey &q, std::span<const cfloat> maps, Regularizer regularizer,
                                     double lambda, Backend backend, int power_iterations);

// <dir>/lipschitz-<key.hex()>.mril
std::filesystem::path lipschitz_cache_file(const std::filesystem::path &dir, const ToeplitzCacheKey &key);

// Writes L (finite, > 0, else InvalidArgument); IoError when the file cannot be written.
void save_lipschitz(const std::filesystem::path &file, const ToeplitzCacheKey &key, double lipschitz);

// Reads L written for exactly `key`. Throws IoError naming the file and the reason (missing,
// truncated, not an L file, another format version or key, checksum mismatch).
double load_lipschitz(const std::filesystem::path &file, const ToeplitzCacheKey &key);

} // namespace mri
