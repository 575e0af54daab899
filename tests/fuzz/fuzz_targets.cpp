// The fuzz harnesses of the BART and Q-cache readers (fuzz_targets.hpp).
#include "fuzz_targets.hpp"

#include <cmath>
#include <filesystem>

#include "fuzz_scratch.hpp"
#include "mri/bart.hpp"
#include "mri/error.hpp"
#include "mri/trajectory.hpp"

namespace mri::fuzz {

namespace fs = std::filesystem;

int cfl_reader(const std::uint8_t *data, std::size_t size) {
  const fs::path base = scratch_dir() / "input";
  std::size_t split = 0;
  while (split < size && data[split] != 0)
    ++split;
  write_file(fs::path(base) += ".hdr", data, split);
  const std::size_t rest = split < size ? split + 1 : size;
  write_file(fs::path(base) += ".cfl", data + rest, size - rest);
  bart::CflArray a;
  try {
    a = bart::read_cfl(base);
  } catch (const Error &) {
    return 0; // the expected answer to a bad file
  }
  std::uint64_t count = 1;
  for (const std::int64_t d : a.dims) {
    if (d <= 0)
      finding("read_cfl returned a non-positive dimension");
    count *= static_cast<std::uint64_t>(d);
  }
  if (a.dims.empty() || count != a.data.size())
    finding("read_cfl returned dims that do not match its data");
  try {
    (void)bart::to_image(a);
  } catch (const Error &) {
  }
  for (const int dims : {2, 3}) {
    try {
      (void)bart::to_trajectory(a, dims);
    } catch (const Error &) {
    }
  }
  return 0;
}

Grid q_cache_grid() { return Grid(4, 3); }

ToeplitzCacheKey q_cache_key() {
  const Grid grid = q_cache_grid();
  return toeplitz_cache_key(traj::uniform_random(grid, 16, 1), {}, grid, Precision::Float32);
}

int q_cache_reader(const std::uint8_t *data, std::size_t size) {
  static const Grid grid = q_cache_grid();
  static const ToeplitzCacheKey key = q_cache_key();
  const fs::path file = scratch_dir() / "entry.mriq";
  write_file(file, data, size);
  std::vector<float> spectrum;
  try {
    spectrum = load_toeplitz_spectrum(file, key, grid);
  } catch (const Error &) {
    return 0;
  }
  if (spectrum.size() != static_cast<std::size_t>(grid.doubled().voxels()))
    finding("load_toeplitz_spectrum returned a spectrum of the wrong length");
  for (const float v : spectrum)
    if (!std::isfinite(v))
      finding("load_toeplitz_spectrum returned a non-finite value");
  return 0;
}

} // namespace mri::fuzz
