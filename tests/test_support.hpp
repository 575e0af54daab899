#pragma once
// Shared helpers for the tests: random inputs and double-precision comparisons.
#include <cmath>
#include <cstdint>
#include <complex>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <random>
#include <unistd.h>
#include <span>
#include <utility>
#include <vector>

#include "mri/image.hpp"
#include "mri/trajectory.hpp"

namespace mri::test {

// The Toeplitz spectrum of Q with the offsets |d_a| <= n_a - 1, at one frequency f of
// grid.doubled(), as the sum of separable Dirichlet kernels, in double (what
// cuda/exact/dirichlet_spectrum.cu computes on the tensor cores):
//   K(f) = (1/L) sum_m w_m prod_a D_a(k_a / n_a - f_a / L_a), D_a(t) = sin(pi (2 n_a - 1) t) / sin(pi t).
// w: empty (all ones) or one weight per sample.
inline double dirichlet_spectrum_at(const Trajectory &t, const std::vector<float> &w, const Grid &grid,
                                    const int (&f)[3]) {
  const Grid doubled = grid.doubled();
  double sum = 0;
  for (std::size_t m = 0; m < t.size(); ++m) {
    const double k[3] = {t[m].kx, t[m].ky, t[m].kz};
    double term = w.empty() ? 1.0 : w[m];
    for (int a = 0; a < 3; ++a) {
      const double n = static_cast<double>(grid.extent(a));
      const double x = k[a] / n - static_cast<double>(f[a]) / static_cast<double>(doubled.extent(a));
      const double d = x - std::nearbyint(x);
      term *= std::abs(d) < 1e-12 ? 2 * n - 1 : std::sin(M_PI * (2 * n - 1) * d) / std::sin(M_PI * d);
    }
    sum += term;
  }
  return sum / static_cast<double>(doubled.voxels());
}

inline std::vector<cfloat> random_complex(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<cfloat> v(n);
  for (auto &c : v) c = {g(rng), g(rng)};
  return v;
}

inline Image random_image(const Grid &grid, std::uint64_t seed) {
  return Image(grid, random_complex(static_cast<std::size_t>(grid.voxels()), seed));
}

// m sample weights uniform in [0.1, 2).
inline std::vector<float> random_weights(std::size_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.1f, 2.0f);
  std::vector<float> w(m);
  for (auto &v : w) v = u(rng);
  return w;
}

// M points uniform in [-n/2, n/2) per axis from std::mt19937_64 (a value that rounds up to
// n/2 in float is moved just inside).
inline Trajectory random_trajectory(const Grid &grid, std::size_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  std::vector<KPoint> points(m);
  for (auto &p : points) {
    float k[3] = {0, 0, 0};
    for (int a = 0; a < grid.dims(); ++a) {
      const float half = static_cast<float>(grid.extent(a)) / 2;
      k[a] = static_cast<float>(u(rng) * static_cast<double>(grid.extent(a)));
      if (k[a] >= half) k[a] = std::nextafter(half, 0.0f);
    }
    p = {k[0], k[1], k[2]};
  }
  return Trajectory(grid.dims(), std::move(points));
}

// Samples on the k-space edge (-n/2, the largest float below n/2), the centre and one off-grid
// value per axis: 12 (2D) or 36 (3D) samples whose windows wrap around the periodic grid.
inline Trajectory edge_trajectory(const Grid &g) {
  std::vector<KPoint> p;
  const float hx = g.nx() / 2.0f, hy = g.ny() / 2.0f, hz = g.nz() / 2.0f;
  for (const float x : {-hx, std::nextafter(hx, 0.0f), 0.0f, 0.3f})
    for (const float y : {-hy, std::nextafter(hy, 0.0f), -0.7f})
      for (const float z : g.dims() == 3 ? std::vector<float>{-hz, std::nextafter(hz, 0.0f), 0.1f} : std::vector<float>{0.0f})
        p.push_back({x, y, z});
  return Trajectory(g.dims(), p);
}

// Samples on and beyond the grid's edge: random points moved by -n, 0 or +n per axis (kept
// within 3n/2), plus samples exactly at +n/2 on each axis and at the corner (n/2, n/2[, n/2]):
// what a spiral designed to Nyquist or a gradient overshoot gives.
inline Trajectory beyond_edge_trajectory(const Grid &grid, std::size_t m, std::uint64_t seed) {
  std::vector<KPoint> points = random_trajectory(grid, m, seed).points();
  std::mt19937_64 rng(seed + 7);
  std::uniform_int_distribution<int> shift(-1, 1);
  for (KPoint &p : points) {
    float *k[3] = {&p.kx, &p.ky, &p.kz};
    for (int a = 0; a < grid.dims(); ++a) {
      const auto n = static_cast<float>(grid.extent(a));
      const float moved = *k[a] + static_cast<float>(shift(rng)) * n;
      if (std::abs(moved) <= 1.5f * n) *k[a] = moved;
    }
  }
  const float hx = grid.nx() / 2.0f, hy = grid.ny() / 2.0f, hz = grid.dims() == 3 ? grid.nz() / 2.0f : 0.0f;
  for (const KPoint p : {KPoint{hx, 0, 0}, KPoint{0, hy, 0}, KPoint{0, 0, hz}, KPoint{hx, hy, hz}})
    points.push_back(p);
  return Trajectory(grid.dims(), std::move(points));
}

// ||a - b|| / ||b|| in double.
inline double relative_error(std::span<const cfloat> a, std::span<const cfloat> b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(cdouble(a[i]) - cdouble(b[i]));
    den += std::norm(cdouble(b[i]));
  }
  return std::sqrt(num / den);
}
inline double relative_error(const Image &a, const Image &b) {
  return relative_error(std::span<const cfloat>(a.values()), std::span<const cfloat>(b.values()));
}
// ||a - ref|| / ||ref|| against a float64 reference.
inline double relative_error(std::span<const cfloat> a, std::span<const cdouble> ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += std::norm(cdouble(a[i]) - ref[i]);
    den += std::norm(ref[i]);
  }
  return std::sqrt(num / den);
}

// sum conj(a) b in double.
inline cdouble inner(std::span<const cfloat> a, std::span<const cfloat> b) {
  cdouble s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::conj(cdouble(a[i])) * cdouble(b[i]);
  return s;
}

// Sets an environment variable for one scope and restores it after ("" unsets it): the CPU
// kernel caps (MRI_SEPARABLE_KERNEL, MRI_GRIDDING_KERNEL), so that each kernel this machine
// supports is compared with the reference.
class EnvScope {
public:
  EnvScope(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~EnvScope() { set(old_.value_or("")); }
  EnvScope(const EnvScope &) = delete;
  EnvScope &operator=(const EnvScope &) = delete;

private:
  void set(const std::string &value) const {
    if (value.empty())
      ::unsetenv(name_);
    else
      ::setenv(name_, value.c_str(), 1);
  }
  const char *name_;
  std::optional<std::string> old_;
};

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
public:
  explicit TempDir(const std::string &tag) {
    std::random_device rd;
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = std::filesystem::temp_directory_path() /
              ("mri_test_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
      if (std::filesystem::create_directory(path_)) return;
    }
    throw std::runtime_error("cannot create a temporary directory");
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  std::filesystem::path operator/(const std::string &name) const { return path_ / name; }
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

// Overwrites bytes of an HDF5 file mid-way, `at` bytes into the last global heap collection
// ("GCOL", where HDF5 keeps variable-length data such as ISMRMRD's samples) that starts in the
// file's last quarter, before its last tenth. The file's structure (and so the acquisitions'
// headers) stays readable; the samples in that collection do not. False when there is no such
// collection.
inline bool overwrite_late_heap(const std::filesystem::path &path, std::size_t at, const std::string &with) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::size_t heap = bytes.rfind("GCOL", bytes.size() * 9 / 10);
  if (heap == std::string::npos || heap < bytes.size() * 3 / 4) return false;
  f.seekp(static_cast<std::streamoff>(heap + at));
  return static_cast<bool>(f.write(with.data(), static_cast<std::streamsize>(with.size())));
}

// The collection's signature: HDF5 refuses to read it.
inline bool damage_late_heap(const std::filesystem::path &path) { return overwrite_late_heap(path, 0, "XXXX"); }

// The collection's first object (after its 16-byte header) made a free-space object (index 0) of
// size 0: HDF5 1.10.8 decodes it forever when it loads the collection (docs/reliability.md,
// finding 5).
inline bool loop_late_heap(const std::filesystem::path &path) {
  return overwrite_late_heap(path, 16, std::string(16, '\0'));
}

} // namespace mri::test
