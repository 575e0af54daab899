// Off-resonance on the device beyond the exact kernels: the time-segmented F, F^H and Toeplitz
// normal (cuda/offresonance/segmented_cuda.hpp) against the host's operators on the same
// segmentation, FieldFourierOperator with backend = Cuda, and mri::reconstruct with a field map on
// the GPU against the CPU's. Fresh random inputs (seeds printed). Tags: [gpu][offresonance].
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/fourier.hpp"
#include "mri/offresonance.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri/trajectory.hpp"
#include "nufft/gridding_cuda.hpp"
#include "offresonance/segmented_cuda.hpp"
#include "recon/device_image.hpp"
#include "sense/sense_cuda.hpp"

namespace {

using mri::Backend;
using mri::cfloat;
using mri::FieldMap;
using mri::Grid;
using mri::Image;
using mri::Precision;
using mri::Trajectory;
using mri::cuda::DeviceImage;
using mri::gpu_test::fresh_seed;
using mri::gpu_test::random_values;
using mri::gpu_test::rel_l2;

// A field of -80 .. 140 Hz, smooth (a bump on a ramp) plus `jitter` Hz of independent noise per voxel.
std::vector<float> field_map(const Grid &g, double jitter, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-jitter, jitter);
  std::vector<float> f(static_cast<std::size_t>(g.voxels()));
  for (std::int64_t y = 0; y < g.ny(); ++y)
    for (std::int64_t x = 0; x < g.nx(); ++x) {
      const double a = static_cast<double>(x) / g.nx() - 0.5, b = static_cast<double>(y) / g.ny() - 0.5;
      f[static_cast<std::size_t>(g.index(x, y))] =
          static_cast<float>(220 * (0.6 * std::exp(-10 * (a * a + b * b)) + 0.4 * (a + 0.5)) - 80 + u(rng));
    }
  return f;
}

// 4 interleaves of `per` samples each over a 16 ms readout from 1 ms after the echo.
std::vector<float> readout_times(int interleaves, int per) {
  std::vector<float> t;
  for (int i = 0; i < interleaves; ++i)
    for (int s = 0; s < per; ++s) t.push_back(0.001f + 0.016f * static_cast<float>(s) / static_cast<float>(per));
  return t;
}

// A device vector of samples: a DeviceImage of M x 1 values.
DeviceImage device_samples(const std::vector<cfloat> &v) {
  DeviceImage d(Grid(static_cast<std::int64_t>(v.size()), 1));
  d.upload(v.data());
  return d;
}
std::vector<cfloat> host(const DeviceImage &d) {
  std::vector<cfloat> v(d.size());
  d.download(v.data());
  return v;
}

mri::NufftOptions host_nufft(double tolerance) {
  mri::NufftOptions o;
  o.tolerance = tolerance;
  o.backend = Backend::Cpu;
  return o;
}

// NUFFT tolerance of the operator comparisons: both NUFFTs (host and device, float32) are within
// about this of the same segmented model, so they differ by at most about twice it; the bound
// below keeps a factor 5 beyond that.
constexpr double kNufftTolerance = 1e-5;
constexpr double kOperatorBound = 1e-4;

struct SegmentedCase {
  Grid grid;
  Trajectory trajectory;
  std::vector<float> times;
  FieldMap field;
  std::vector<float> weights;
};

SegmentedCase segmented_case(std::uint64_t seed) {
  const Grid g(40, 36);
  const Trajectory t = mri::traj::spiral(g, 4, 1500).wrapped(g);
  std::vector<float> w(t.size());
  std::mt19937_64 rng(seed + 7);
  std::uniform_real_distribution<float> u(0.2f, 1.0f);
  for (float &x : w) x = u(rng);
  return {g, t, readout_times(4, 1500), FieldMap(g, field_map(g, 20, seed)), std::move(w)};
}

} // namespace

TEST_CASE("GPU time-segmented F, F^H and Toeplitz normal match the host's on one segmentation", "[gpu][offresonance]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const SegmentedCase c = segmented_case(seed);
  mri::SegmentationOptions so;
  so.segments = 6;
  const mri::SegmentedFieldOperator host_op(c.trajectory, c.grid, c.field, c.times, so, host_nufft(kNufftTolerance));
  const auto plan = mri::cuda::detail::make_device_nufft_plan(c.trajectory, c.grid,
                                                              mri::gpu_test::cuda_nufft(kNufftTolerance, mri::Gridding::Gather));
  const mri::cuda::detail::SegmentedFieldDevice dev_op(host_op.segmentation(), plan, c.grid, c.trajectory.size(),
                                                      mri::Gridding::Gather);
  const std::size_t m = c.trajectory.size(), n = static_cast<std::size_t>(c.grid.voxels());
  const std::vector<cfloat> x = random_values(n, seed + 1), y = random_values(m, seed + 2);

  // forward and adjoint
  std::vector<cfloat> fwd_ref(m);
  host_op.forward(Image(c.grid, x), fwd_ref);
  Image adj_ref(c.grid);
  host_op.adjoint(y, adj_ref);
  DeviceImage dx(Image(c.grid, x)), dy = device_samples(y), dfwd(Grid(static_cast<std::int64_t>(m), 1)), dadj(c.grid);
  dev_op.forward_device(dx.data(), dfwd.data());
  dev_op.adjoint_device(dy.data(), dadj.data());
  plan->synchronize();
  const double ef = rel_l2(host(dfwd), fwd_ref), ea = rel_l2(dadj.to_host().values(), adj_ref.values());
  std::printf("  segmented L = 6: forward rel L2 %.3e, adjoint %.3e\n", ef, ea);
  CHECK(ef <= kOperatorBound);
  CHECK(ea <= kOperatorBound);

  // the Toeplitz normal (one coil, no maps) against the host's SegmentedToeplitz, and the direct
  // normal against the host's A^H W A
  const mri::SegmentedToeplitz host_t(host_op, c.weights);
  Image t_ref(c.grid);
  host_t.forward(Image(c.grid, x), t_ref);
  const mri::cuda::detail::DevicePoints points(c.trajectory);
  const mri::cuda::detail::SegmentedToeplitzDevice dev_t(dev_op, points.data(), c.weights,
                                                        mri::gpu_test::cuda_nufft(kNufftTolerance, mri::Gridding::Gather),
                                                        mri::Gridding::Gather, nullptr, mri::Regularizer::None, 0);
  DeviceImage dt(c.grid);
  dev_t.apply(dx, dt);
  const double et = rel_l2(dt.to_host().values(), t_ref.values());
  const mri::cuda::detail::SegmentedDirectNormal dev_d(dev_op, c.weights);
  DeviceImage dd(c.grid);
  dev_d.apply(dx, dd);
  std::vector<cfloat> ax(m);
  host_op.forward(Image(c.grid, x), ax);
  for (std::size_t i = 0; i < m; ++i) ax[i] *= c.weights[i];
  Image d_ref(c.grid);
  host_op.adjoint(ax, d_ref);
  const double ed = rel_l2(dd.to_host().values(), d_ref.values());
  std::printf("  segmented normal: Toeplitz rel L2 %.3e (kernels in %.3f s), direct %.3e\n", et, dev_t.kernel_seconds(), ed);
  CHECK(et <= kOperatorBound);
  CHECK(ed <= kOperatorBound);
}

TEST_CASE("GPU segmented Toeplitz normal with SENSE coils batched matches the host's coil sum", "[gpu][offresonance]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const SegmentedCase c = segmented_case(seed);
  mri::SegmentationOptions so;
  so.segments = 5;
  const mri::SegmentedFieldOperator host_op(c.trajectory, c.grid, c.field, c.times, so, host_nufft(kNufftTolerance));
  const mri::SegmentedToeplitz host_t(host_op, c.weights);
  const mri::CoilSensitivities maps = mri::SimulatedCoils(2, 3).maps(c.grid);
  const std::size_t n = static_cast<std::size_t>(c.grid.voxels());
  const std::vector<cfloat> x = random_values(n, seed + 1);
  // sum_c conj(S_c) T(S_c x) + lambda x (Tikhonov)
  constexpr double kLambda = 0.3;
  Image ref(c.grid), coil(c.grid), out(c.grid);
  for (std::size_t i = 0; i < n; ++i) ref[i] = static_cast<float>(kLambda) * x[i];
  for (int k = 0; k < maps.coils(); ++k) {
    for (std::size_t i = 0; i < n; ++i) coil[i] = maps.map(k)[i] * x[i];
    host_t.forward(coil, out);
    for (std::size_t i = 0; i < n; ++i) ref[i] += std::conj(maps.map(k)[i]) * out[i];
  }
  const auto plan = mri::cuda::detail::make_device_nufft_plan(c.trajectory, c.grid,
                                                              mri::gpu_test::cuda_nufft(kNufftTolerance, mri::Gridding::Gather));
  const mri::cuda::detail::SegmentedFieldDevice dev_op(host_op.segmentation(), plan, c.grid, c.trajectory.size(),
                                                      mri::Gridding::Gather);
  const mri::cuda::detail::DevicePoints points(c.trajectory);
  const mri::cuda::detail::DeviceCoils coils(maps, mri::Regularizer::None, 0, mri::cuda::default_stream());
  const mri::cuda::detail::SegmentedToeplitzDevice dev_t(dev_op, points.data(), c.weights,
                                                        mri::gpu_test::cuda_nufft(kNufftTolerance, mri::Gridding::Gather),
                                                        mri::Gridding::Gather, &coils, mri::Regularizer::Tikhonov, kLambda);
  DeviceImage dx(Image(c.grid, x)), dt(c.grid);
  dev_t.apply(dx, dt);
  const double e = rel_l2(dt.to_host().values(), ref.values());
  std::printf("  segmented Toeplitz, 3 coils (%d per batch), Tikhonov: rel L2 %.3e\n", dev_t.coil_batch(), e);
  CHECK(e <= kOperatorBound);
}

TEST_CASE("FieldFourierOperator with backend = cuda matches the CPU; a zero field is the uncorrected device operator",
          "[gpu][offresonance][small]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid g(21, 18);
  const Trajectory t = mri::gpu_test::random_trajectory(g, 1800, seed);
  std::vector<float> times(t.size());
  for (std::size_t i = 0; i < times.size(); ++i) times[i] = 0.016f * static_cast<float>(i) / static_cast<float>(times.size());
  const auto field = std::make_shared<const FieldMap>(g, field_map(g, 30, seed + 1));
  const std::vector<cfloat> x = random_values(static_cast<std::size_t>(g.voxels()), seed + 2), y = random_values(t.size(), seed + 3);
  for (const Precision p : {Precision::Float32, Precision::Float64}) {
    INFO("precision " << mri::to_string(p));
    const mri::FieldFourierOperator cpu(t, g, field, times, {Backend::Cpu, Precision::Float64});
    const mri::FieldFourierOperator gpu(t, g, field, times, {Backend::Cuda, p});
    const double tol = p == Precision::Float64 ? 1e-6 : 1e-5; // as test_field_fourier_cuda.cpp
    CHECK(rel_l2(mri::forward(gpu, Image(g, x)), mri::forward(cpu, Image(g, x))) <= tol);
    CHECK(rel_l2(mri::adjoint(gpu, y).values(), mri::adjoint(cpu, y).values()) <= tol);
  }
  const auto zero = std::make_shared<const FieldMap>(g, std::vector<float>(static_cast<std::size_t>(g.voxels())));
  const mri::FieldFourierOperator gpu0(t, g, zero, times, {Backend::Cuda, Precision::Float32});
  const mri::FourierOperator plain(t, g, {Backend::Cuda, Precision::Float32});
  CHECK(mri::forward(gpu0, Image(g, x)) == mri::forward(plain, Image(g, x)));
  CHECK(mri::adjoint(gpu0, y).values() == mri::adjoint(plain, y).values());
}

namespace {

struct ReconProblem {
  Grid grid;
  Image truth;
  std::shared_ptr<const FieldMap> field;
  mri::KSpaceData data;
  std::shared_ptr<const mri::CoilSensitivities> maps;
};

// A 32^2, 2-coil spiral (4 x 1024 samples over 16 ms), data by the exact field model (float64).
ReconProblem recon_problem(std::uint64_t seed) {
  const Grid g(32, 32);
  ReconProblem p{g, mri::Phantom::shepp_logan_2d().rasterize(g), {}, {}, {}};
  p.field = std::make_shared<const FieldMap>(g, field_map(g, 0, seed));
  const Trajectory t = mri::traj::spiral(g, 4, 1024);
  const std::vector<float> times = readout_times(4, 1024);
  const mri::FieldFourierOperator a(t, g, p.field, times, {Backend::Cpu, Precision::Float64});
  p.maps = std::make_shared<const mri::CoilSensitivities>(mri::SimulatedCoils(2, 2).maps(g));
  std::vector<cfloat> y;
  for (int c = 0; c < 2; ++c) {
    Image coil = p.truth;
    for (std::size_t i = 0; i < coil.size(); ++i) coil[i] *= p.maps->map(c)[i];
    const auto yc = mri::forward(a, coil);
    y.insert(y.end(), yc.begin(), yc.end());
  }
  p.data = mri::KSpaceData(t, std::move(y), {}, 2, times);
  return p;
}

mri::ReconOptions recon_options(const ReconProblem &p, Backend b, mri::Method method, mri::Normal normal) {
  mri::ReconOptions o;
  o.backend = b;
  o.method = method;
  o.solver.normal = normal;
  o.solver.iterations = 8;
  o.solver.lambda = 1e-3;
  o.solver.regularizer = mri::Regularizer::Tikhonov;
  o.nufft.tolerance = 1e-5;
  o.coils.sensitivities = p.maps;
  o.offresonance.field_map = p.field;
  o.offresonance.segmentation.segments = 6;
  return o;
}

} // namespace

TEST_CASE("reconstruct with a field map on the GPU equals the CPU's", "[gpu][offresonance]") {
  // Same model and segmentation on both backends; they differ by their NUFFTs (each within
  // nufft.tolerance 1e-5) and float32 rounding, which 8 CG iterations carry into the image: 1e-3
  // relative (the exact form: the float32 kernels' 1e-5 against the CPU's float32 polynomial trig,
  // 2e-4; the uncorrected GPU and CPU iterates agree to 1e-4 in tests/gpu/recon).
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const ReconProblem p = recon_problem(seed);
  struct Run {
    mri::Method method;
    mri::Normal normal;
    const char *form;
    double bound;
  };
  for (const Run r : {Run{mri::Method::Nufft, mri::Normal::Toeplitz, "time-segmented", 1e-3},
                      Run{mri::Method::Nufft, mri::Normal::Direct, "time-segmented", 1e-3},
                      Run{mri::Method::Exact, mri::Normal::Direct, "exact", 2e-4}}) {
    INFO("method " << mri::to_string(r.method) << ", normal " << mri::to_string(r.normal));
    const mri::ReconResult cpu = mri::reconstruct(p.data, p.grid, recon_options(p, Backend::Cpu, r.method, r.normal));
    const mri::ReconResult gpu = mri::reconstruct(p.data, p.grid, recon_options(p, Backend::Cuda, r.method, r.normal));
    const double e = rel_l2(gpu.image.values(), cpu.image.values());
    std::printf("  reconstruct %-14s normal %-8s: GPU vs CPU rel L2 %.3e (GPU %.3f s, CPU %.3f s; %s)\n", r.form,
                mri::to_string(gpu.report.normal), e, gpu.report.total_seconds, cpu.report.total_seconds,
                gpu.report.device_note.c_str());
    CHECK(gpu.report.backend == Backend::Cuda);
    CHECK(gpu.report.offresonance == r.form);
    CHECK(gpu.report.segments == cpu.report.segments);
    CHECK(gpu.report.normal == r.normal);
    CHECK(gpu.report.iterations == cpu.report.iterations);
    CHECK(e <= r.bound);
  }
}

TEST_CASE("reconstruct with a field map and an l1-wavelet term on the GPU iterates as on the CPU", "[gpu][offresonance]") {
  // The proximal solver (FISTA) on the segmented Toeplitz normal: the same steps on device images;
  // 1e-3 relative after 10 iterations as for the CG above and tests/gpu/sparse.
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const ReconProblem p = recon_problem(seed);
  mri::ReconResult r[2];
  for (const Backend b : {Backend::Cpu, Backend::Cuda}) {
    mri::ReconOptions o = recon_options(p, b, mri::Method::Nufft, mri::Normal::Toeplitz);
    o.solver.iterations = 10;
    o.solver.tolerance = 0;
    o.solver.lambda = 0;
    o.solver.regularizer = mri::Regularizer::None;
    mri::SparseTerm t;
    t.penalty = mri::SparsePenalty::L1Wavelet;
    t.lambda = 1e-4;
    o.solver.terms = {t};
    r[b == Backend::Cuda] = mri::reconstruct(p.data, p.grid, o);
  }
  const double e = rel_l2(r[1].image.values(), r[0].image.values());
  std::printf("  reconstruct time-segmented + l1-wavelet (%s): GPU vs CPU rel L2 %.3e\n", r[1].report.solver.c_str(), e);
  CHECK(r[1].report.backend == Backend::Cuda);
  CHECK(r[1].report.solver == r[0].report.solver);
  CHECK(r[1].report.offresonance == "time-segmented");
  CHECK(e <= 1e-3);
}

TEST_CASE("reconstruct on the GPU with a zero field map equals the uncorrected GPU reconstruction", "[gpu][offresonance][small]") {
  // A zero map runs the uncorrected model, which it equals (bitwise: the device reductions run in a
  // fixed order), as on the CPU.
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const ReconProblem p = recon_problem(seed);
  mri::ReconOptions o = recon_options(p, Backend::Cuda, mri::Method::Nufft, mri::Normal::Toeplitz);
  o.offresonance.field_map.reset();
  const mri::ReconResult plain = mri::reconstruct(p.data, p.grid, o);
  o.offresonance.field_map = std::make_shared<const FieldMap>(p.grid, std::vector<float>(static_cast<std::size_t>(p.grid.voxels())));
  const mri::ReconResult zero = mri::reconstruct(p.data, p.grid, o);
  CHECK(zero.report.backend == Backend::Cuda);
  CHECK(zero.report.offresonance == "none");
  CHECK(zero.image.values() == plain.image.values());
}
