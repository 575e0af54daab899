#pragma once
// The warp benchmarks' problem (bench_mcir_cpu, bench_mcir_gpu): a 128^3 complex image and a smooth
// breathing-like field (a dilation along z about the centre, up to 3 voxels at the faces, plus a
// sinusoidal in-plane shear of 1 voxel), so that neighbouring voxels read neighbouring reference
// voxels as a respiratory motion field does.
#include <cmath>
#include <cstdint>
#include <random>

#include "mri/image.hpp"
#include "mri/motion.hpp"

namespace mri::bench {

inline constexpr std::int64_t kWarpExtent = 128;

inline DisplacementField breathing_field(const Grid &g) {
  DisplacementField f(g);
  const double cz = g.nz() / 2.0;
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        f.u.at(x, y, z) = static_cast<float>(std::sin(2 * M_PI * double(y) / double(g.ny())));
        f.v.at(x, y, z) = static_cast<float>(0.5 * std::cos(2 * M_PI * double(x) / double(g.nx())));
        f.w.at(x, y, z) = static_cast<float>(3.0 * (double(z) - cz) / cz);
      }
  return f;
}

inline Image random_warp_image(const Grid &g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Image x(g);
  for (auto &v : x.values())
    v = {n(rng), n(rng)};
  return x;
}

} // namespace mri::bench
