// The segmented Toeplitz normal's application paths on the device (segmented_cuda.hpp,
// SegmentedToeplitzPaths): the pruned row-interleaved transforms (2D) and the fused L x L product
// against the host's SegmentedToeplitz with SENSE's coil sum (float64 accumulation of the host's
// result), against the previous path (whole-grid transforms, a coil per product thread), a
// remainder pass and repeated applications (the pad buffer's zero rows kept), and self-adjointness.
// Fresh random inputs (seeds printed). Tags: [gpu][offresonance].
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/offresonance.hpp"
#include "mri/trajectory.hpp"
#include "nufft/gridding_cuda.hpp"
#include "offresonance/segmented_cuda.hpp"
#include "recon/device_image.hpp"
#include "sense/sense_cuda.hpp"

namespace {

using mri::cfloat;
using mri::FieldMap;
using mri::Grid;
using mri::Image;
using mri::Trajectory;
using mri::cuda::DeviceImage;
using mri::cuda::detail::SegmentedFft;
using mri::cuda::detail::SegmentedProduct;
using mri::cuda::detail::SegmentedToeplitzDevice;
using mri::cuda::detail::SegmentedToeplitzPaths;
using mri::gpu_test::fresh_seed;
using mri::gpu_test::random_values;
using mri::gpu_test::rel_l2;

// Both NUFFTs (host and device, float32) at 1e-5 build the kernels; the results differ by about
// twice that; the bound keeps a factor 5 (as test_offresonance_recon_cuda.cpp).
constexpr double kNufftTolerance = 1e-5;
constexpr double kOperatorBound = 1e-4;
// Paths with the same transforms compute the same products in the same order: they differ at most
// by the compiler's contraction of the same expressions, far below float32 rounding of the sums.
constexpr double kSameTransformBound = 1e-6;
// Pruned and whole transforms round differently (float32 FFTs of a few hundred points per axis,
// about 1e-7 relative per pass, a few passes): 1e-5 keeps a factor of 10 or more.
constexpr double kOtherTransformBound = 1e-5;

struct PathCase {
  Grid grid;
  int segments, coils, batch; // coils 0: one coil without maps; batch 0: by memory
};

// M = 4 readouts of `per` samples: a spiral in 2D, uniform random points in 3D.
Trajectory trajectory_of(const Grid &g, int per, std::uint64_t seed) {
  if (g.dims() == 2) return mri::traj::spiral(g, 4, per).wrapped(g);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<mri::KPoint> p(static_cast<std::size_t>(4 * per));
  for (auto &k : p)
    k = {u(rng) * static_cast<float>(g.nx()), u(rng) * static_cast<float>(g.ny()), u(rng) * static_cast<float>(g.nz())};
  return Trajectory(3, std::move(p)).wrapped(g);
}

// A field of -80 .. 140 Hz: a ramp along x plus independent noise per voxel.
FieldMap field_of(const Grid &g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-20, 20);
  std::vector<float> f(static_cast<std::size_t>(g.voxels()));
  for (std::size_t v = 0; v < f.size(); ++v) {
    const double x = static_cast<double>(static_cast<std::int64_t>(v) % g.nx()) / static_cast<double>(g.nx());
    f[v] = static_cast<float>(-60 + 180 * x + u(rng));
  }
  return FieldMap(g, std::move(f));
}

std::vector<float> readout_times(int per) {
  std::vector<float> t;
  for (int i = 0; i < 4; ++i)
    for (int s = 0; s < per; ++s) t.push_back(0.001f + 0.016f * static_cast<float>(s) / static_cast<float>(per));
  return t;
}

// sum_c conj(S_c) T(S_c x) + lambda x on the host (T: SegmentedToeplitz), float64 accumulation.
std::vector<std::complex<double>> host_normal(const mri::SegmentedToeplitz &t, const mri::CoilSensitivities *maps,
                                              const std::vector<cfloat> &x, const Grid &g, double lambda) {
  const std::size_t n = x.size();
  std::vector<std::complex<double>> ref(n);
  for (std::size_t i = 0; i < n; ++i) ref[i] = lambda * std::complex<double>(x[i]);
  Image coil(g), out(g);
  const int coils = maps ? maps->coils() : 1;
  for (int k = 0; k < coils; ++k) {
    for (std::size_t i = 0; i < n; ++i) coil[i] = maps ? maps->map(k)[i] * x[i] : x[i];
    t.forward(coil, out);
    for (std::size_t i = 0; i < n; ++i)
      ref[i] += maps ? std::complex<double>(std::conj(maps->map(k)[i]) * out[i]) : std::complex<double>(out[i]);
  }
  return ref;
}

std::complex<double> dot(const std::vector<cfloat> &a, const std::vector<cfloat> &b) { // <a, b> = sum conj(a) b
  std::complex<double> s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::conj(std::complex<double>(a[i])) * std::complex<double>(b[i]);
  return s;
}
double norm(const std::vector<cfloat> &a) { return std::sqrt(std::abs(dot(a, a))); }

const char *name(SegmentedFft f) {
  return f == SegmentedFft::Pruned ? "pruned" : f == SegmentedFft::PrunedInPlace ? "pruned-in-place" : "whole";
}
const char *name(SegmentedProduct p) { return p == SegmentedProduct::Fused ? "fused" : "per-coil"; }

void check_paths(const PathCase &pc, std::uint64_t seed) {
  const Grid &g = pc.grid;
  const int per = g.dims() == 3 ? 700 : 1200;
  const Trajectory traj = trajectory_of(g, per, seed);
  const std::vector<float> times = readout_times(per);
  std::vector<float> w(traj.size());
  std::mt19937_64 rng(seed + 7);
  std::uniform_real_distribution<float> u(0.2f, 1.0f);
  for (float &x : w) x = u(rng);
  mri::SegmentationOptions so;
  so.segments = pc.segments;
  mri::NufftOptions host_nufft;
  host_nufft.tolerance = kNufftTolerance;
  host_nufft.backend = mri::Backend::Cpu;
  const mri::SegmentedFieldOperator host_op(traj, g, field_of(g, seed), times, so, host_nufft);
  const mri::SegmentedToeplitz host_t(host_op, w);
  std::optional<mri::CoilSensitivities> maps;
  if (pc.coils > 0) maps.emplace(mri::SimulatedCoils(g.dims(), pc.coils).maps(g));
  constexpr double kLambda = 0.3;

  const auto nufft = mri::gpu_test::cuda_nufft(kNufftTolerance, mri::Gridding::Gather);
  const auto plan = mri::cuda::detail::make_device_nufft_plan(traj, g, nufft);
  const mri::cuda::detail::SegmentedFieldDevice dev_op(host_op.segmentation(), plan, g, traj.size(), mri::Gridding::Gather);
  const mri::cuda::detail::DevicePoints points(traj);
  std::optional<mri::cuda::detail::DeviceCoils> coils;
  if (maps) coils.emplace(*maps, mri::Regularizer::None, 0, mri::cuda::default_stream());

  const std::size_t n = static_cast<std::size_t>(g.voxels());
  const std::vector<cfloat> x1 = random_values(n, seed + 1), x2 = random_values(n, seed + 2);
  const auto ref1 = host_normal(host_t, maps ? &*maps : nullptr, x1, g, kLambda);
  const auto ref2 = host_normal(host_t, maps ? &*maps : nullptr, x2, g, kLambda);

  // every path applied to x1, then x2 (the second application finds what the first left)
  std::vector<std::vector<cfloat>> first, second;
  std::vector<SegmentedToeplitzPaths> resolved;
  for (const SegmentedFft fft : {SegmentedFft::Whole, SegmentedFft::Pruned, SegmentedFft::PrunedInPlace})
    for (const SegmentedProduct product : {SegmentedProduct::PerCoil, SegmentedProduct::Fused}) {
      SegmentedToeplitzPaths paths{fft, product, pc.batch};
      const SegmentedToeplitzDevice t(dev_op, points.data(), w, nufft, mri::Gridding::Gather, coils ? &*coils : nullptr,
                                      mri::Regularizer::Tikhonov, kLambda, paths);
      DeviceImage dx1(Image(g, x1)), dx2(Image(g, x2)), out(g);
      t.apply(dx1, out);
      first.push_back(out.to_host().values());
      t.apply(dx2, out);
      second.push_back(out.to_host().values());
      resolved.push_back(t.paths());
      const double e1 = rel_l2(first.back(), ref1), e2 = rel_l2(second.back(), ref2);
      std::printf("  %lldx%lldx%lld L=%d coils=%d, %s/%s (ran %s, %d coil(s) per pass): host rel L2 %.3e, %.3e\n",
                  static_cast<long long>(g.nx()), static_cast<long long>(g.ny()), static_cast<long long>(g.nz()),
                  pc.segments, pc.coils, name(fft), name(product), name(t.paths().fft), t.coil_batch(), e1, e2);
      CHECK(e1 <= kOperatorBound);
      CHECK(e2 <= kOperatorBound);
      if (pc.batch > 0 && pc.coils > pc.batch) CHECK(t.coil_batch() == pc.batch);
      CHECK(t.paths().product == product);
      CHECK(t.paths().fft == (g.dims() == 2 ? fft : SegmentedFft::Whole)); // Pruned is 2D only
    }
  // against the previous path (index 0: whole transforms, a coil per product thread)
  for (std::size_t i = 1; i < first.size(); ++i) {
    const double bound = resolved[i].fft == resolved[0].fft ? kSameTransformBound : kOtherTransformBound;
    const double e1 = rel_l2(first[i], first[0]), e2 = rel_l2(second[i], second[0]);
    std::printf("    %s/%s against whole/per-coil: %.3e, %.3e (bound %.0e)\n", name(resolved[i].fft),
                name(resolved[i].product), e1, e2, bound);
    CHECK(e1 <= bound);
    CHECK(e2 <= bound);
  }
}

} // namespace

TEST_CASE("GPU segmented Toeplitz paths (pruned transforms, fused product) match the host and the previous path",
          "[gpu][offresonance]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  // L = 8: the fused product holds the 36 pairs in registers; L = 9: it runs per coil; 3D: whole
  // transforms; odd extents; a remainder pass (3 coils, 2 a pass) and one coil per pass; no maps.
  const PathCase cases[] = {{Grid(40, 36), 8, 3, 2},  {Grid(33, 27), 3, 3, 0}, {Grid(31, 20), 9, 2, 1},
                            {Grid(40, 36), 2, 0, 0},  {Grid(12, 10, 8), 4, 2, 0}};
  for (const PathCase &pc : cases) {
    INFO("grid " << pc.grid.nx() << "x" << pc.grid.ny() << "x" << pc.grid.nz() << ", L = " << pc.segments);
    check_paths(pc, seed);
  }
}

TEST_CASE("GPU segmented Toeplitz normal (pruned, fused) is self-adjoint; its stage times add up", "[gpu][offresonance]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid g(48, 40);
  const Trajectory traj = trajectory_of(g, 1500, seed);
  const std::vector<float> times = readout_times(1500);
  mri::SegmentationOptions so;
  so.segments = 8;
  mri::NufftOptions host_nufft;
  host_nufft.tolerance = kNufftTolerance;
  host_nufft.backend = mri::Backend::Cpu;
  const mri::SegmentedFieldOperator host_op(traj, g, field_of(g, seed), times, so, host_nufft);
  const auto nufft = mri::gpu_test::cuda_nufft(kNufftTolerance, mri::Gridding::Gather);
  const auto plan = mri::cuda::detail::make_device_nufft_plan(traj, g, nufft);
  const mri::cuda::detail::SegmentedFieldDevice dev_op(host_op.segmentation(), plan, g, traj.size(), mri::Gridding::Gather);
  const mri::cuda::detail::DevicePoints points(traj);
  const mri::CoilSensitivities maps = mri::SimulatedCoils(2, 4).maps(g);
  const mri::cuda::detail::DeviceCoils coils(maps, mri::Regularizer::None, 0, mri::cuda::default_stream());
  const SegmentedToeplitzDevice t(dev_op, points.data(), {}, nufft, mri::Gridding::Gather, &coils, mri::Regularizer::None, 0);
  REQUIRE(t.paths().fft == SegmentedFft::Pruned);
  REQUIRE(t.paths().product == SegmentedProduct::Fused);
  const std::size_t n = static_cast<std::size_t>(g.voxels());
  const std::vector<cfloat> x = random_values(n, seed + 1), y = random_values(n, seed + 2);
  DeviceImage dx(Image(g, x)), dy(Image(g, y)), tx(g), ty(g);
  t.apply(dx, tx);
  const mri::cuda::detail::SegmentedStageTimes stages = t.apply_timed(dy, ty);
  const std::vector<cfloat> htx = tx.to_host().values(), hty = ty.to_host().values();
  // <T x, y> = <x, T y>: each side is a sum of float32 products, about 1e-7 relative to |T x| |y|;
  // 1e-5 keeps a factor 100
  const std::complex<double> a = dot(htx, y), b = dot(x, hty);
  const double gap = std::abs(a - b) / (norm(htx) * norm(y));
  std::printf("  self-adjointness (48x40, L = 8, 4 coils): |<Tx,y> - <x,Ty>| / (|Tx| |y|) = %.3e; stages (ms) pad %.3f "
              "forward %.3f product %.3f inverse %.3f crop %.3f\n",
              gap, stages.pad, stages.forward, stages.product, stages.inverse, stages.crop);
  CHECK(gap <= 1e-5);
  // x^H T x is real and >= 0 (T = A^H W A with w >= 0, no regulariser)
  const std::complex<double> q = dot(x, htx);
  CHECK(std::abs(q.imag()) <= 1e-5 * std::abs(q.real()));
  CHECK(q.real() > 0);
  CHECK(stages.total() > 0);
  CHECK(stages.pad >= 0);
  CHECK(stages.product > 0);
}
