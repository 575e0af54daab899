#pragma once
// The SENSE normal operator summed directly in float64, the reference of the GPU's SENSE operators
// (tests/gpu/sense/test_sense_toeplitz_cuda.cpp, test_coil_split.cpp):
//   sum_c conj(S_c) F^H W F (S_c x) + lambda R^H R x
// F: the DFT at the samples, voxel index i at coordinate i - n/2 on every axis, exp(-i 2 pi k x / n)
// forward. O(coils x voxels x samples): small problems only.
#include <complex>
#include <memory>
#include <cstdint>
#include <numbers>
#include <vector>

#include "mri/coils.hpp"
#include "mri/image.hpp"
#include "mri/reconstruct.hpp"
#include "mri/regularizer.hpp"
#include "mri/trajectory.hpp"
#include "../test_support.hpp"
#include "sampled_reference.hpp"

namespace mri::gpu_test {

inline std::vector<std::complex<double>> sense_normal_f64(const Trajectory &t, const std::vector<float> &w,
                                                          const CoilSensitivities &maps, const Image &x, Regularizer r,
                                                          double lambda) {
  using cdouble = std::complex<double>;
  const Grid &g = x.grid();
  const auto n = static_cast<std::size_t>(g.voxels());
  std::vector<cdouble> phase(t.size() * n); // exp(-i 2 pi k_m . x_v / n)
  for (std::size_t m = 0; m < t.size(); ++m)
    for (std::size_t v = 0; v < n; ++v) {
      const auto i = static_cast<std::int64_t>(v);
      const double px = double(i % g.nx() - g.nx() / 2) / double(g.nx());
      const double py = double(i / g.nx() % g.ny() - g.ny() / 2) / double(g.ny());
      const double pz = double(i / (g.nx() * g.ny()) - g.nz() / 2) / double(g.nz());
      phase[m * n + v] = std::polar(1.0, -2 * std::numbers::pi * (t[m].kx * px + t[m].ky * py + t[m].kz * pz));
    }
  std::vector<cdouble> out(n);
  for (int c = 0; c < maps.coils(); ++c) {
    const auto s = maps.map(c);
    for (std::size_t m = 0; m < t.size(); ++m) {
      cdouble y = 0;
      for (std::size_t v = 0; v < n; ++v) y += cdouble(s[v]) * cdouble(x[v]) * phase[m * n + v];
      y *= w.empty() ? 1.0 : double(w[m]);
      for (std::size_t v = 0; v < n; ++v) out[v] += std::conj(cdouble(s[v])) * y * std::conj(phase[m * n + v]);
    }
  }
  Image reg(g);
  add_regularizer_normal(r, lambda, g, x.data(), reg.data());
  for (std::size_t v = 0; v < n; ++v) out[v] += cdouble(reg[v]);
  return out;
}

// A small SENSE reconstruction with random samples, weights and maps on the GPU (the coil-split
// tests: one device against several entries of ReconOptions::gpu.devices): 6 CG iterations to the
// end (tolerance 0), Tikhonov lambda 0.01; the caller sets method, normal and devices.
struct SenseRecon {
  KSpaceData data;
  ReconOptions options;
};

inline SenseRecon sense_recon(const Grid &grid, int coils, std::uint64_t seed) {
  const Trajectory t = random_trajectory(grid, grid.dims() == 3 ? 3000 : 1500, seed);
  KSpaceData data(t, test::random_complex(coils * t.size(), seed + 1), test::random_weights(t.size(), seed + 2), coils);
  ReconOptions o;
  o.method = Method::Exact;
  o.backend = Backend::Cuda;
  o.solver.iterations = 6;
  o.solver.tolerance = 0;
  o.solver.lambda = 0.01;
  o.solver.regularizer = Regularizer::Tikhonov;
  o.coils.sensitivities = std::make_shared<const CoilSensitivities>(
      grid, coils, test::random_complex(static_cast<std::size_t>(coils * grid.voxels()), seed + 3));
  return {std::move(data), std::move(o)};
}

} // namespace mri::gpu_test
