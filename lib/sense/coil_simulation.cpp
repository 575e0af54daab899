// SimulatedCoils: smooth surface-coil profiles as finite Fourier series (coil_simulation.hpp).
#include "mri/coil_simulation.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "mri/error.hpp"

namespace mri {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr int kSamples = 16; // profile samples per axis over the field of view for the series

// Coil c's profile at u in [-1, 1)^3 (normalised units; u_z = 0 in 2D): a Gaussian fall-off from
// the coil's position and a phase turning with its angle.
cdouble profile(int dims, int coils, int c, const double u[3]) {
  const int per_ring = dims == 2 ? coils : (coils + 1) / 2;
  const double angle = 2 * kPi * (c % per_ring) / per_ring + (dims == 3 && c >= per_ring ? kPi / per_ring : 0);
  const double p[3] = {1.4 * std::cos(angle), 1.4 * std::sin(angle),
                       dims == 3 ? (c < per_ring ? 0.8 : -0.8) : 0.0};
  double d2 = 0;
  for (int a = 0; a < dims; ++a) d2 += (u[a] - p[a]) * (u[a] - p[a]);
  const double width = dims == 2 ? 1.1 : 1.3;
  const double phase = angle + 0.4 * kPi * (u[0] * std::cos(angle) + u[1] * std::sin(angle));
  return std::exp(-d2 / (2 * width * width)) * cdouble(std::cos(phase), std::sin(phase));
}

} // namespace

SimulatedCoils::SimulatedCoils(int dims, int coils) : dims_(dims), coils_(coils) {
  if (dims != 2 && dims != 3) detail::invalid_argument("dims", dims, "must be 2 or 3");
  if (coils < 1 || coils > 64) detail::invalid_argument("coils", coils, "must be in [1, 64]");
  const int fmax = dims == 2 ? 2 : 1;
  for (int fz = dims == 3 ? -fmax : 0; fz <= (dims == 3 ? fmax : 0); ++fz)
    for (int fy = -fmax; fy <= fmax; ++fy)
      for (int fx = -fmax; fx <= fmax; ++fx) terms_.push_back({{fx, fy, fz}});
  // a_cf = mean over the sampled field of view of profile(u) exp(-i pi f . u) (x/n = u/2).
  const int nz = dims == 3 ? kSamples : 1;
  const double count = static_cast<double>(kSamples) * kSamples * nz;
  coefficients_.assign(static_cast<std::size_t>(coils) * terms_.size(), 0);
  for (int c = 0; c < coils; ++c)
    for (int iz = 0; iz < nz; ++iz)
      for (int iy = 0; iy < kSamples; ++iy)
        for (int ix = 0; ix < kSamples; ++ix) {
          const double u[3] = {-1 + 2.0 * ix / kSamples, -1 + 2.0 * iy / kSamples,
                               dims == 3 ? -1 + 2.0 * iz / kSamples : 0};
          const cdouble s = profile(dims, coils, c, u);
          for (std::size_t t = 0; t < terms_.size(); ++t) {
            const double arg = -kPi * (terms_[t].f[0] * u[0] + terms_[t].f[1] * u[1] + terms_[t].f[2] * u[2]);
            coefficients_[static_cast<std::size_t>(c) * terms_.size() + t] +=
                s * cdouble(std::cos(arg), std::sin(arg)) / count;
          }
        }
}

CoilSensitivities SimulatedCoils::maps(const Grid &grid) const {
  if (grid.dims() != dims_) detail::invalid_argument("grid.dims()", grid.dims(), "must equal the array's dims " + std::to_string(dims_));
  const std::size_t n = static_cast<std::size_t>(grid.voxels());
  std::vector<cfloat> out(n * static_cast<std::size_t>(coils_));
  const std::int64_t ext[3] = {grid.extent(0), grid.extent(1), grid.extent(2)};
#pragma omp parallel for schedule(static)
  for (std::int64_t v = 0; v < static_cast<std::int64_t>(n); ++v) {
    // Voxel coordinate x_a in {-n_a/2 .. n_a/2 - 1}; the series' phase is 2 pi f . x / n.
    const std::int64_t idx[3] = {v % ext[0], (v / ext[0]) % ext[1], v / (ext[0] * ext[1])};
    double x[3];
    for (int a = 0; a < 3; ++a) x[a] = static_cast<double>(idx[a] - ext[a] / 2) / static_cast<double>(ext[a]);
    for (int c = 0; c < coils_; ++c) {
      cdouble s = 0;
      for (std::size_t t = 0; t < terms_.size(); ++t) {
        const double arg = 2 * kPi * (terms_[t].f[0] * x[0] + terms_[t].f[1] * x[1] + terms_[t].f[2] * x[2]);
        s += coefficients_[static_cast<std::size_t>(c) * terms_.size() + t] * cdouble(std::cos(arg), std::sin(arg));
      }
      out[static_cast<std::size_t>(c) * n + static_cast<std::size_t>(v)] = cfloat(s);
    }
  }
  return CoilSensitivities(grid, coils_, std::move(out));
}

std::vector<cfloat> SimulatedCoils::kspace(const Phantom &phantom, const Trajectory &trajectory, const Grid &grid) const {
  if (trajectory.dims() != dims_)
    detail::invalid_argument("trajectory.dims()", trajectory.dims(), "must equal the array's dims " + std::to_string(dims_));
  const std::size_t m = trajectory.size();
  std::vector<cdouble> sum(m * static_cast<std::size_t>(coils_), 0);
  std::vector<KPoint> shifted(m);
  for (std::size_t t = 0; t < terms_.size(); ++t) {
    // FT(S_c rho)(k) = sum_f a_cf rho^(k - f).
    for (std::size_t i = 0; i < m; ++i)
      shifted[i] = {trajectory[i].kx - static_cast<float>(terms_[t].f[0]), trajectory[i].ky - static_cast<float>(terms_[t].f[1]),
                    trajectory[i].kz - static_cast<float>(terms_[t].f[2])};
    const std::vector<cfloat> rho = phantom.kspace(Trajectory(trajectory.dims(), shifted), grid);
    for (int c = 0; c < coils_; ++c) {
      const cdouble a = coefficients_[static_cast<std::size_t>(c) * terms_.size() + t];
      cdouble *dst = sum.data() + static_cast<std::size_t>(c) * m;
      for (std::size_t i = 0; i < m; ++i) dst[i] += a * cdouble(rho[i]);
    }
  }
  return std::vector<cfloat>(sum.begin(), sum.end());
}

} // namespace mri
