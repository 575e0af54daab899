#pragma once
// What the GPU tests and the GPU benchmark share: random inputs and the direct sums at a few
// sampled voxels (or samples) in long double or double, for problems where the full float64
// reference (mri::detail::adjoint_sum_f64 over every voxel) would take minutes.
//
//   adjoint: s(x) = sum_m c_m exp(+i 2 pi sum_a k_ma x_a / period_a), x on `out`
//   forward: (F x)_m = sum_n x_n exp(-i 2 pi sum_a k_ma x_a / n_a), x on the image grid
// Both are split over the host's cores (std::thread; one reference point per task).
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <limits>
#include <numbers>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/nufft.hpp"
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace mri::gpu_test {

// Every F^H D policy the tests run (Auto resolves to Tuned).
inline constexpr KernelPolicy kAllPolicies[] = {KernelPolicy::ScatterAtomic, KernelPolicy::Gather,
                                                KernelPolicy::Register,      KernelPolicy::ConstantChunked,
                                                KernelPolicy::SfuTrig,       KernelPolicy::Tuned,
                                                KernelPolicy::SeparableGemm, KernelPolicy::Auto};

// n complex values, real and imaginary parts N(0, 1) (never zeros: they hide unwritten output).
template <class Real = float> std::vector<std::complex<Real>> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<Real> g(0, 1);
  std::vector<std::complex<Real>> v(n);
  for (auto &x : v) x = std::complex<Real>(g(rng), g(rng));
  return v;
}

// `count` indices drawn uniformly from [0, n).
inline std::vector<std::int64_t> random_indices(std::int64_t n, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> pick(0, n - 1);
  std::vector<std::int64_t> v(count);
  for (auto &i : v) i = pick(rng);
  return v;
}

// f(i) for i in [0, n), spread over the host's cores.
template <class F> void parallel_for(std::size_t n, F &&f) {
  const std::size_t workers = std::max<std::size_t>(1, std::min<std::size_t>(n, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (std::size_t i = w; i < n; i += workers) f(i);
    });
  for (auto &t : pool) t.join();
}

// Centred coordinate of voxel v of g along every axis, in turns per unit k (x_a / period_a).
template <class Real> std::array<Real, 3> scaled_coordinates(const Grid &g, const Grid &period, std::int64_t v) {
  const std::int64_t i[3] = {v % g.nx(), (v / g.nx()) % g.ny(), v / (g.nx() * g.ny())};
  std::array<Real, 3> x{};
  for (int a = 0; a < 3; ++a)
    x[static_cast<std::size_t>(a)] = static_cast<Real>(g.coordinate(a, i[a])) / static_cast<Real>(period.extent(a));
  return x;
}

// Sample m's k (cycles per FOV) in Real: the reference sums below read the points through such
// a function, so they can also run at points held in another form (e.g. a peer library's radians
// converted back, in double) without a copy of the sums.
template <class Real> auto trajectory_k(const Trajectory &t) {
  return [&t](std::size_t m) {
    const KPoint &k = t[m];
    return std::array<Real, 3>{static_cast<Real>(k.kx), static_cast<Real>(k.ky), static_cast<Real>(k.kz)};
  };
}

// The adjoint sum at the voxels `voxels` of `out` over m samples with k = k_of(sample),
// accumulated in Real (long double or double).
template <class Real = long double, class C, class KOf>
std::vector<std::complex<double>> adjoint_at_points(std::size_t m, KOf &&k_of, std::span<const std::complex<C>> c,
                                                    const Grid &out, const Grid &period,
                                                    std::span<const std::int64_t> voxels) {
  std::vector<std::complex<double>> ref(voxels.size());
  const Real two_pi = 2 * std::numbers::pi_v<Real>;
  parallel_for(voxels.size(), [&](std::size_t i) {
    const auto x = scaled_coordinates<Real>(out, period, voxels[i]);
    Real re = 0, im = 0;
    for (std::size_t s = 0; s < m; ++s) {
      const std::array<Real, 3> k = k_of(s);
      const Real ph = two_pi * (k[0] * x[0] + k[1] * x[1] + k[2] * x[2]);
      const Real cs = std::cos(ph), sn = std::sin(ph);
      const Real cr = static_cast<Real>(c[s].real()), ci = static_cast<Real>(c[s].imag());
      re += cr * cs - ci * sn;
      im += cr * sn + ci * cs;
    }
    ref[i] = {static_cast<double>(re), static_cast<double>(im)};
  });
  return ref;
}

// The adjoint sum at the voxels `voxels` of `out`, accumulated in Real (long double or double).
template <class Real = long double, class C>
std::vector<std::complex<double>> adjoint_at(const Trajectory &t, std::span<const std::complex<C>> c, const Grid &out,
                                             const Grid &period, std::span<const std::int64_t> voxels) {
  return adjoint_at_points<Real>(t.size(), trajectory_k<Real>(t), c, out, period, voxels);
}

// The forward sum of `image` (on grid g, period g) at the samples `samples`, sample s at
// k = k_of(s), in Real.
template <class Real = long double, class C, class KOf>
std::vector<std::complex<double>> forward_at_points(KOf &&k_of, std::span<const std::complex<C>> image, const Grid &g,
                                                    std::span<const std::int64_t> samples) {
  std::vector<std::complex<double>> ref(samples.size());
  const Real two_pi = 2 * std::numbers::pi_v<Real>;
  parallel_for(samples.size(), [&](std::size_t i) {
    const std::array<Real, 3> k = k_of(static_cast<std::size_t>(samples[i]));
    Real re = 0, im = 0;
    for (std::int64_t v = 0; v < g.voxels(); ++v) {
      const auto x = scaled_coordinates<Real>(g, g, v);
      const Real ph = -two_pi * (k[0] * x[0] + k[1] * x[1] + k[2] * x[2]);
      const Real cs = std::cos(ph), sn = std::sin(ph);
      const auto val = image[static_cast<std::size_t>(v)];
      const Real vr = static_cast<Real>(val.real()), vi = static_cast<Real>(val.imag());
      re += vr * cs - vi * sn;
      im += vr * sn + vi * cs;
    }
    ref[i] = {static_cast<double>(re), static_cast<double>(im)};
  });
  return ref;
}

// The forward sum of `image` (on grid g, period g) at the samples `samples`, in Real.
template <class Real = long double, class C>
std::vector<std::complex<double>> forward_at(const Trajectory &t, std::span<const std::complex<C>> image, const Grid &g,
                                             std::span<const std::int64_t> samples) {
  return forward_at_points<Real>(trajectory_k<Real>(t), image, g, samples);
}

// ||result[at] - ref|| / ||ref|| over the sampled points; +inf when any of them is not finite.
template <class C>
double sampled_rel_l2(std::span<const std::complex<C>> result, std::span<const std::int64_t> at,
                      std::span<const std::complex<double>> ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < at.size(); ++i) {
    const std::complex<double> r(result[static_cast<std::size_t>(at[i])]);
    if (!std::isfinite(r.real()) || !std::isfinite(r.imag())) return std::numeric_limits<double>::infinity();
    num += std::norm(r - ref[i]);
    den += std::norm(ref[i]);
  }
  return std::sqrt(num / den);
}

// NUFFT options on the GPU at `tolerance` with adjoint gridding `g` (tests and benchmarks).
inline NufftOptions cuda_nufft(double tolerance, Gridding g) {
  NufftOptions o;
  o.tolerance = tolerance;
  o.gridding = g;
  o.backend = Backend::Cuda;
  return o;
}

// Fresh inputs every run, each seed printed by its test. MRI_GPU_TEST_SEED=S makes every call
// return S, so a replay of the failing test (named on the command line) gets the very inputs
// the failure printed, whatever ran before it.
inline std::uint64_t fresh_seed() {
  if (const char *s = std::getenv("MRI_GPU_TEST_SEED")) return std::stoull(s);
  return (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ static_cast<std::uint64_t>(std::random_device{}());
}

// M points uniform in [-n/2, n/2) of `period` (kz == 0 in 2D).
inline Trajectory random_trajectory(const Grid &period, std::size_t m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<mri::KPoint> pts(m);
  for (auto &p : pts) {
    const auto draw = [&](std::int64_t n) {
      const float k = u(rng) * static_cast<float>(n);
      return k >= static_cast<float>(n) / 2 ? -static_cast<float>(n) / 2 : k;
    };
    p.kx = draw(period.nx());
    p.ky = draw(period.ny());
    p.kz = period.dims() == 3 ? draw(period.nz()) : 0.f;
  }
  return Trajectory(period.dims(), std::move(pts));
}

// ||a - ref|| / ||ref||; any non-finite element of `a` (an unwritten NaN) gives +inf.
template <class C, class R> double rel_l2(const std::vector<C> &a, const std::vector<R> &ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::complex<double> x(a[i]), r(ref[i]);
    if (!std::isfinite(x.real()) || !std::isfinite(x.imag())) return std::numeric_limits<double>::infinity();
    num += std::norm(x - r);
    den += std::norm(r);
  }
  return std::sqrt(num / den);
}

} // namespace mri::gpu_test
