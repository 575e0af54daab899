// The GPU reconstruction: device vectors and the one ConjugateGradient template on
// them, the Toeplitz and direct normal operators on the device against explicit float64 sums,
// the Q cache, reconstruct(backend = Cuda) against the CPU path, and bad input.
// Tags: [gpu] all; [small] the quick subset compute-sanitizer runs.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mri_backend/nufft_access.hpp"
#include "recon/device_image.hpp"
#include "nufft/gridding_cuda.hpp"
#include "toeplitz/toeplitz_cuda.hpp"
#include "catch.hpp"
#include "test_support.hpp"
#include "gpu/sampled_reference.hpp"
#include "gpu/under_sanitizer.hpp"
#include "mri/conjugate_gradient.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/metrics.hpp"
#include "mri/nufft.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri/toeplitz.hpp"
#include "mri/toeplitz_cache.hpp"
#include "mri_backend/q_trajectory.hpp"

using namespace mri;
using cuda::DeviceImage;
using cuda::DirectNormalOperator;
using cuda::ToeplitzFft;

namespace {

using gpu_test::fresh_seed; // MRI_GPU_TEST_SEED replays a failure (the seed is in the INFO output)

// F^H (w .* F x) (+ lambda W^H W x) with the CPU float64 sums.
Image explicit_normal(const Trajectory &t, const std::vector<float> &w, const Image &x,
                      Regularizer r = Regularizer::None, double lambda = 0) {
  const FourierOperator f(t, x.grid(), {Backend::Cpu, Precision::Float64});
  auto y = mri::forward(f, x);
  for (std::size_t m = 0; m < w.size(); ++m) y[m] *= w[m];
  Image out = mri::adjoint(f, y);
  add_regularizer_normal(r, lambda, x.grid(), x.data(), out.data());
  return out;
}

// A device image full of NaN: an output any operator must overwrite completely.
DeviceImage poisoned(const Grid &grid) {
  Image nan(grid);
  for (auto &v : nan.values()) v = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN()};
  return DeviceImage(nan);
}

std::string describe(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

struct PhantomProblem {
  Grid grid;
  Image truth;
  KSpaceData data;
};
PhantomProblem spiral_problem(std::int64_t n, int interleaves, int samples, bool weighted) {
  const Grid grid(n, n);
  const auto phantom = Phantom::shepp_logan_2d();
  auto t = traj::spiral(grid, interleaves, samples);
  auto s = phantom.kspace(t, grid);
  add_noise(s, 50.0, 11);
  std::vector<float> w;
  if (weighted) w = test::random_weights(t.size(), 12);
  return {grid, phantom.rasterize(grid), KSpaceData(std::move(t), std::move(s), std::move(w))};
}
PhantomProblem koosh_problem(std::int64_t n, int spokes, int samples, unsigned noise_seed) {
  const Grid grid(n, n, n);
  const auto phantom = Phantom::shepp_logan_3d();
  auto t = traj::koosh(grid, spokes, samples);
  auto s = phantom.kspace(t, grid);
  add_noise(s, 50.0, noise_seed);
  return {grid, phantom.rasterize(grid, 2), KSpaceData(std::move(t), std::move(s))};
}

// reconstruct on the CPU and on the GPU with the same options (tolerance 0: every iteration
// runs); the first iterates agree to float32 accumulation order (1e-4).
struct CpuAndGpu {
  ReconResult cpu, gpu;
};
CpuAndGpu reconstruct_on_both(const PhantomProblem &p, ReconOptions o) {
  o.solver.tolerance = 0;
  std::vector<Image> cpu_iterates, gpu_iterates;
  o.backend = Backend::Cpu;
  o.on_iteration = [&](int, const Image &x, double) { cpu_iterates.push_back(x); };
  CpuAndGpu r{reconstruct(p.data, p.grid, o), {}};
  o.backend = Backend::Cuda;
  o.on_iteration = [&](int, const Image &x, double) { gpu_iterates.push_back(x); };
  r.gpu = reconstruct(p.data, p.grid, o);
  REQUIRE(gpu_iterates.size() == static_cast<std::size_t>(o.solver.iterations));
  for (int k = 0; k < std::min(3, o.solver.iterations); ++k) {
    INFO("iterate " << k + 1);
    CHECK(test::relative_error(gpu_iterates[k], cpu_iterates[k]) < 1e-4);
  }
  return r;
}

} // namespace

TEST_CASE("gpu vector ops: the VectorOps table on device images matches the host one", "[gpu][recon][vector-ops][small]") {
  using H = VectorOps<Image>;
  using D = VectorOps<DeviceImage>;
  const std::uint64_t seed = fresh_seed();
  const Grid grid = GENERATE(Grid(1001, 1), Grid(37, 29, 3), Grid(1 << 12, 300));
  INFO("grid " << describe(grid) << ", seed " << seed);
  const Image a = test::random_image(grid, seed), b = test::random_image(grid, seed + 1);
  const DeviceImage da(a), db(b);

  const std::complex<double> dot = D::dot(da, db), dot_ref = H::dot(a, b);
  CHECK(std::abs(dot - dot_ref) <= 1e-12 * std::abs(dot_ref) + 1e-9);
  CHECK(std::abs(D::norm2(da) - H::norm2(a)) <= 1e-12 * H::norm2(a));
  CHECK(D::all_finite(da));

  const std::complex<double> alpha(0.37, -1.25), beta(-0.5, 0.75);
  Image y = b;
  H::axpy(alpha, a, y);
  DeviceImage dy = D::like(db);
  D::copy(db, dy);
  D::axpy(alpha, da, dy);
  CHECK(test::relative_error(dy.to_host(), y) < 1e-6);
  H::xpay(a, beta, y);
  D::xpay(da, beta, dy);
  CHECK(test::relative_error(dy.to_host(), y) < 1e-6);

  // The fused CG update: x += alpha p, r -= alpha ap, ||r||^2.
  Image x = test::random_image(grid, seed + 2), r = test::random_image(grid, seed + 3);
  DeviceImage dx(x), dr(r);
  const double rr = D::update_norm2(0.8, da, db, dx, dr);
  H::axpy(0.8, a, x);
  H::axpy(-0.8, b, r);
  CHECK(test::relative_error(dx.to_host(), x) < 1e-6);
  CHECK(test::relative_error(dr.to_host(), r) < 1e-6);
  CHECK(std::abs(rr - H::norm2(r)) <= 1e-5 * H::norm2(r));

  D::zero(dy);
  CHECK(D::norm2(dy) == 0.0);
  const DeviceImage nan = poisoned(grid);
  CHECK_FALSE(D::all_finite(nan));
}

namespace {

void check_toeplitz(const Grid &grid, ToeplitzFft fft, bool weighted) {
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(grid) << ", " << cuda::to_string(fft) << (weighted ? ", weighted" : "") << ", seed "
               << seed);
  const auto t = traj::uniform_random(grid, 700 + seed % 97, seed);
  const auto w = weighted ? test::random_weights(t.size(), seed + 1) : std::vector<float>{};
  const Image x = test::random_image(grid, seed + 2);

  cuda::QOperator q(t, w, grid, KernelPolicy::Auto, fft);
  INFO("runs: " << q.fft_note());
  if (fft != ToeplitzFft::Unfused) WARN(cuda::to_string(fft) << " requested, runs: " << q.fft_note());
  if (fft == ToeplitzFft::Pruned || cuda::toeplitz_callbacks_built()) CHECK(q.fft() == fft);
  const DeviceImage dx(x);
  DeviceImage out = poisoned(grid);
  q.apply(dx, out);
  const double err = test::relative_error(out.to_host(), explicit_normal(t, w, x));
  WARN("toeplitz " << cuda::to_string(q.fft()) << " " << describe(grid) << " rel L2 " << err);
  CHECK(err < 1e-4);

  // The regulariser fused into the crop (or the inverse FFT's store callback).
  for (Regularizer r : {Regularizer::Tikhonov, Regularizer::FiniteDifference}) {
    DeviceImage out_r = poisoned(grid);
    q.apply_regularized(dx, out_r, r, 0.7);
    CHECK(test::relative_error(out_r.to_host(), explicit_normal(t, w, x, r, 0.7)) < 1e-4);
  }

  // The spectrum round trip (what the cache stores) gives the same operator, on the GPU and in a
  // CPU QOperator (one cache format for both backends). The spectra themselves differ in the
  // unused offsets d = -n (zeroed here, kept by the CPU), which never reach the crop.
  const std::vector<float> spectrum = q.spectrum();
  const cuda::QOperator from(grid, spectrum, fft);
  DeviceImage out2 = poisoned(grid);
  from.apply(dx, out2);
  const Image gpu_out = out.to_host();
  CHECK(test::relative_error(out2.to_host(), gpu_out) < 1e-6);
  CHECK(test::relative_error(mri::forward(QOperator::from_spectrum(grid, spectrum), x), gpu_out) < 1e-5);
}

} // namespace

TEST_CASE("gpu toeplitz: F^H W F on the device equals the explicit float64 F^H(W F x)", "[gpu][recon][toeplitz]") {
  const Grid grid = GENERATE(Grid(16, 16), Grid(15, 12), Grid(8, 6, 5), Grid(7, 9, 6));
  const ToeplitzFft fft = GENERATE(ToeplitzFft::Unfused, ToeplitzFft::Pruned, ToeplitzFft::Callbacks,
                                   ToeplitzFft::PrunedCallback);
  const bool weighted = GENERATE(false, true);
  check_toeplitz(grid, fft, weighted);
}

TEST_CASE("gpu toeplitz: at the RECON-3D size the pruned and callback paths equal the unfused path",
          "[gpu][recon][toeplitz]") {
  // Large padded grids take cuFFT's multi-kernel paths: the callbacks then sit in the first and
  // last kernels only, and the pruned plans are batched/strided. The unfused path is checked
  // against float64 above; here the others agree with it.
  const Grid grid = GENERATE(Grid(128, 128, 128), Grid(96, 80, 72), Grid(512, 384));
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(grid) << ", seed " << seed);
  const auto t = traj::uniform_random(grid, 3000, seed);
  const auto w = test::random_weights(t.size(), seed + 1);
  cuda::QOperator unfused(t, w, grid, KernelPolicy::Auto, ToeplitzFft::Unfused);
  const std::vector<float> spectrum = unfused.spectrum();
  const DeviceImage x(test::random_image(grid, seed + 2));
  for (ToeplitzFft fft : {ToeplitzFft::Pruned, ToeplitzFft::Callbacks, ToeplitzFft::PrunedCallback}) {
    cuda::QOperator other(grid, spectrum, fft);
    INFO("runs: " << other.fft_note());
    if (fft == ToeplitzFft::Pruned || cuda::toeplitz_callbacks_built()) CHECK(other.fft() == fft);
    DeviceImage a = poisoned(grid), b = poisoned(grid);
    for (Regularizer r : {Regularizer::None, Regularizer::FiniteDifference}) {
      unfused.apply_regularized(x, a, r, 0.3);
      other.apply_regularized(x, b, r, 0.3);
      const double err = test::relative_error(b.to_host(), a.to_host());
      WARN(cuda::to_string(fft) << " vs unfused " << describe(grid) << " " << to_string(r) << ": rel L2 " << err);
      CHECK(err < 1e-5);
    }
  }
}

TEST_CASE("gpu toeplitz: the tensor-core Dirichlet spectrum equals Q's spectrum and the float64 sum",
          "[gpu][recon][toeplitz][dirichlet][small]") {
  // KernelPolicy::Auto in 3D computes the spectrum directly (cuda/exact/dirichlet_spectrum.cu); a named
  // policy sums Q with that F^H D kernel and transforms it. Sizes: odd extents, doubled extents
  // that are not multiples of the 64 x 32 x 8 frequency blocks, M past one 65536-sample table
  // chunk (two streams); weighted, unweighted and all-zero weights.
  struct Case {
    Grid grid;
    std::size_t m;
    int weights; // 0 none, 1 random, 2 all zero
  };
  const Case c = GENERATE(Case{Grid(7, 9, 6), 3001, 1}, Case{Grid(20, 16, 12), 20000, 0},
                          Case{Grid(12, 10, 8), 70001, 1}, Case{Grid(33, 17, 40), 9000, 1},
                          Case{Grid(8, 8, 8), 500, 2});
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(c.grid) << ", M " << c.m << ", weights " << c.weights << ", seed " << seed);
  const auto t = traj::uniform_random(c.grid, c.m, seed);
  std::vector<float> w;
  if (c.weights == 1) w = test::random_weights(t.size(), seed + 1);
  if (c.weights == 2) w.assign(t.size(), 0.0f);
  const cuda::QOperator dirichlet(t, w, c.grid); // Auto
  const cuda::QOperator tuned(t, w, c.grid, KernelPolicy::Tuned);
  const std::vector<float> kd = dirichlet.spectrum(), kt = tuned.spectrum();
  REQUIRE(kd.size() == kt.size());
  if (c.weights == 2) {
    CHECK(std::all_of(kd.begin(), kd.end(), [](float v) { return v == 0.0f; }));
    return;
  }
  // Both float32-class (Tuned's Q 2.5e-6; the fp16 hi/lo products ~2^-22, truncating tensor adds
  // over 128 samples between rounded flushes): 1e-5.
  const double vs_tuned = gpu_test::rel_l2(kd, kt);
  WARN("dirichlet vs Q by tuned + FFT, " << describe(c.grid) << " M " << c.m << ": rel L2 " << vs_tuned);
  CHECK(vs_tuned < 1e-5);

  const Grid doubled = c.grid.doubled();
  std::mt19937_64 rng(seed + 2);
  std::vector<double> ref, got;
  for (int i = 0; i < 48; ++i) {
    int f[3];
    for (int a = 0; a < 3; ++a)
      f[a] = i == 0 ? 0 : static_cast<int>(rng() % static_cast<std::uint64_t>(doubled.extent(a)));
    ref.push_back(test::dirichlet_spectrum_at(t, w, c.grid, f));
    got.push_back(kd[static_cast<std::size_t>(f[0] + doubled.nx() * (f[1] + doubled.ny() * f[2]))]);
  }
  const double vs_f64 = gpu_test::rel_l2(got, ref);
  WARN("dirichlet vs float64 sum at 48 frequencies: rel L2 " << vs_f64);
  CHECK(vs_f64 < 1e-5);
}

TEST_CASE("gpu toeplitz: at the RECON-3D size the Dirichlet spectrum and Q's agree with the float64 sum",
          "[gpu][recon][toeplitz][dirichlet][large]") {
  // RECON-3D's koosh (2^20 samples, 4096 spokes through k = 0: a coherent centre) and a smaller one;
  // under a sanitizer a 16^3 koosh of 256 spokes (under_sanitizer.hpp: the same kernels; racecheck
  // does not finish 64^3 within the sanitizer script's time limit).
  const int n = gpu_test::under_sanitizer() ? 16 : GENERATE(64, 128);
  const Grid grid(n, n, n);
  const auto t = n == 128 ? traj::koosh(grid, 4096, 256) : traj::koosh(grid, n * 16, n * 2);
  const std::vector<float> w; // RECON-3D's data carries no weights
  const std::vector<float> kd = cuda::QOperator(t, w, grid).spectrum();
  const std::vector<float> kt = cuda::QOperator(t, w, grid, KernelPolicy::Tuned).spectrum();
  const Grid doubled = grid.doubled();
  std::mt19937_64 rng(fresh_seed());
  std::vector<double> ref, got_d, got_t;
  for (int i = 0; i < 24; ++i) {
    int f[3];
    for (int a = 0; a < 3; ++a) f[a] = i < 2 ? i : static_cast<int>(rng() % static_cast<std::uint64_t>(doubled.extent(a)));
    ref.push_back(test::dirichlet_spectrum_at(t, w, grid, f));
    const auto at = static_cast<std::size_t>(f[0] + doubled.nx() * (f[1] + doubled.ny() * f[2]));
    got_d.push_back(kd[at]);
    got_t.push_back(kt[at]);
  }
  const double err_d = gpu_test::rel_l2(got_d, ref), err_t = gpu_test::rel_l2(got_t, ref);
  WARN(n << "^3 koosh M " << t.size() << ": vs float64 at 24 frequencies: dirichlet " << err_d << ", Q by tuned + FFT "
         << err_t << "; dirichlet vs tuned (all) " << gpu_test::rel_l2(kd, kt));
  CHECK(err_d < 1e-5);
  CHECK(err_t < 1e-5);
  // Where the spectrum is small (the ill-conditioned directions CG resolves last).
  float peak = 0;
  for (float v : kt) peak = std::max(peak, std::abs(v));
  double worst = 0, small_num = 0, small_den = 0;
  for (std::size_t i = 0; i < kt.size(); ++i) {
    const double d = std::abs(static_cast<double>(kd[i]) - kt[i]);
    worst = std::max(worst, d);
    if (std::abs(kt[i]) < 1e-3 * peak) {
      small_num += d * d;
      small_den += static_cast<double>(kt[i]) * kt[i];
    }
  }
  WARN("max |dirichlet - tuned| / max |K| " << worst / peak << "; rel L2 where |K| < 1e-3 max "
                                            << std::sqrt(small_num / small_den));
}

TEST_CASE("gpu toeplitz: the quick subset (odd 2D and 3D, both FFT paths)", "[gpu][recon][toeplitz][small]") {
  const Grid grid = GENERATE(Grid(15, 12), Grid(7, 9, 6));
  const ToeplitzFft fft = GENERATE(ToeplitzFft::Unfused, ToeplitzFft::Pruned, ToeplitzFft::Callbacks,
                                   ToeplitzFft::PrunedCallback);
  check_toeplitz(grid, fft, true);
}

TEST_CASE("gpu direct normal operator: forward then adjoint equals the explicit float64 sums", "[gpu][recon][direct][small]") {
  const Grid grid = GENERATE(Grid(14, 11), Grid(6, 7, 5));
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(grid) << ", seed " << seed);
  const auto t = traj::uniform_random(grid, 900, seed);
  const auto w = test::random_weights(t.size(), seed + 1);
  const Image x = test::random_image(grid, seed + 2);
  DirectNormalOperator d(t, w, grid);
  const DeviceImage dx(x);
  DeviceImage out = poisoned(grid);
  d.apply(dx, out);
  CHECK(test::relative_error(out.to_host(), explicit_normal(t, w, x)) < 1e-4);
  d.apply_regularized(dx, out, Regularizer::FiniteDifference, 1.5);
  CHECK(test::relative_error(out.to_host(), explicit_normal(t, w, x, Regularizer::FiniteDifference, 1.5)) < 1e-4);
}

TEST_CASE("gpu cg: the CPU ConjugateGradient template on device images, same iterates", "[gpu][recon][cg][small]") {
  const Grid grid(20, 18);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const auto t = traj::uniform_random(grid, 1500, seed);
  const auto w = test::random_weights(t.size(), seed + 1);
  const Image b = test::random_image(grid, seed + 2);

  const QOperator q_cpu(t, w, grid, {Backend::Cpu, Precision::Float64});
  cuda::QOperator q_gpu(t, w, grid);
  auto cpu_op = [&](const Image &in, Image &out) {
    q_cpu.forward(in, out);
    add_regularizer_normal(Regularizer::Tikhonov, 0.1, grid, in.data(), out.data());
  };
  auto gpu_op = [&](const DeviceImage &in, DeviceImage &out) {
    q_gpu.apply_regularized(in, out, Regularizer::Tikhonov, 0.1);
  };
  std::vector<Image> cpu_iterates, gpu_iterates;
  ConjugateGradient<decltype(cpu_op), Image> cg_cpu(cpu_op);
  ConjugateGradient<decltype(gpu_op), DeviceImage> cg_gpu(gpu_op);
  cg_cpu.set_max_iterations(8).set_tolerance(0).set_callback(
      [&](int, const Image &x, double) { cpu_iterates.push_back(x); });
  cg_gpu.set_max_iterations(8).set_tolerance(0).set_callback(
      [&](int, const DeviceImage &x, double) { gpu_iterates.push_back(x.to_host()); });
  const Image x_cpu = cg_cpu.solve(b);
  const DeviceImage x_gpu = cg_gpu.solve(DeviceImage(b));
  REQUIRE(gpu_iterates.size() == 8);
  REQUIRE(cpu_iterates.size() == 8);
  for (int k = 0; k < 3; ++k) {
    INFO("iterate " << k + 1);
    CHECK(test::relative_error(gpu_iterates[k], cpu_iterates[k]) < 1e-4);
  }
  CHECK(test::relative_error(x_gpu.to_host(), x_cpu) < 1e-3);
  for (std::size_t k = 0; k < cg_cpu.residual_history().size(); ++k)
    CHECK(std::abs(cg_gpu.residual_history()[k] - cg_cpu.residual_history()[k]) <=
          1e-3 * cg_cpu.residual_history()[k] + 1e-7);
  CHECK(cg_gpu.info() == CgStatus::MaxIterations);
}

TEST_CASE("gpu cg: a broken operator stops with a status, not NaNs", "[gpu][recon][cg][bad-input][small]") {
  const Grid grid(33, 7);
  const DeviceImage b(test::random_image(grid, 5));
  auto nan_op = [&](const DeviceImage &, DeviceImage &out) { out = poisoned(grid); };
  ConjugateGradient<decltype(nan_op), DeviceImage> cg(nan_op);
  const DeviceImage x = cg.solve(b);
  CHECK(cg.info() == CgStatus::NonFinite);
  CHECK(VectorOps<DeviceImage>::all_finite(x));
  auto negative = [&](const DeviceImage &in, DeviceImage &out) {
    VectorOps<DeviceImage>::zero(out);
    VectorOps<DeviceImage>::axpy(-1.0, in, out);
  };
  ConjugateGradient<decltype(negative), DeviceImage> cg2(negative);
  cg2.solve(b);
  CHECK(cg2.info() == CgStatus::Breakdown);
}

TEST_CASE("gpu reconstruct: same iterates as the CPU CG, same PSNR within 0.05 dB", "[gpu][recon][reconstruct]") {
  const bool weighted = GENERATE(false, true);
  const PhantomProblem p = spiral_problem(64, 8, 1024, weighted);
  ReconOptions o;
  o.method = Method::Exact;
  o.solver.iterations = 15;
  std::vector<std::string> phases; // the one driver announces the same phases on the GPU
  double q_expected = 0;
  o.on_phase = [&](const ReconPhase &phase) {
    if (phase.fraction == 0) phases.push_back(std::string(phase.name));
    if (phase.name == "Q" && phase.fraction == 0) q_expected = phase.expected_seconds;
  };
  const auto [cpu, gpu] = reconstruct_on_both(p, o);
  const std::vector<std::string> twice = {"coil maps", "F^H D", "Q", "CG", "coil maps", "F^H D", "Q", "CG"};
  CHECK(phases == twice);
  CHECK(std::isnan(q_expected)); // the GPU's last: its Q kernels have no estimate from F^H D
  const double psnr_cpu = psnr(cpu.image, p.truth), psnr_gpu = psnr(gpu.image, p.truth);
  WARN("PSNR cpu " << psnr_cpu << " dB, gpu " << psnr_gpu << " dB");
  CHECK(std::abs(psnr_gpu - psnr_cpu) <= 0.05);
  CHECK(psnr_gpu > 24.0);

  const ReconReport &r = gpu.report;
  CHECK(r.backend == Backend::Cuda);
  CHECK(r.status == CgStatus::MaxIterations);
  CHECK(r.iterations == 15);
  CHECK(r.residuals.size() == 16);
  CHECK(r.fhd_seconds > 0);
  CHECK(r.q_seconds > 0);
  CHECK(r.fft_setup_seconds > 0);
  CHECK(r.cg_seconds > 0);
  CHECK(r.transfer_seconds > 0);
  CHECK(r.device_bytes > 0);
  CHECK_FALSE(r.toeplitz_fft.empty());
  // Every phase field counts its own seconds once (transfers and FFT plans out of F^H D and Q).
  CHECK(r.total_seconds >= r.setup_seconds + r.coil_seconds + r.transfer_seconds + r.fhd_seconds + r.q_seconds +
                               r.fft_setup_seconds + r.cg_seconds);
  CHECK(r.setup_seconds >= 0);
}

TEST_CASE("gpu reconstruct: 3D, regularisers and the direct normal operator agree with the CPU",
          "[gpu][recon][reconstruct]") {
  const auto [grid, truth, data] = koosh_problem(20, 300, 40, 3);
  for (Regularizer reg : {Regularizer::None, Regularizer::FiniteDifference}) {
    INFO(to_string(reg));
    ReconOptions o;
    o.method = Method::Exact;
    o.solver.iterations = 10;
    o.solver.tolerance = 0;
    o.solver.regularizer = reg;
    o.solver.lambda = reg == Regularizer::None ? 0.0 : 2.0;
    o.backend = Backend::Cpu;
    const ReconResult cpu = reconstruct(data, grid, o);
    o.backend = Backend::Cuda;
    const ReconResult gpu = reconstruct(data, grid, o);
    CHECK(test::relative_error(gpu.image, cpu.image) < 1e-3);
    CHECK(std::abs(psnr(gpu.image, truth) - psnr(cpu.image, truth)) <= 0.05);
    o.solver.normal = Normal::Direct;
    o.solver.iterations = 4;
    const ReconResult direct = reconstruct(data, grid, o);
    o.solver.normal = Normal::Toeplitz;
    const ReconResult toeplitz4 = reconstruct(data, grid, o);
    CHECK(direct.report.normal == Normal::Direct);
    CHECK(test::relative_error(direct.image, toeplitz4.image) < 1e-4);
  }
}

TEST_CASE("gpu toeplitz and direct normal by NUFFT: equal the explicit float64 sums to the tolerance",
          "[gpu][recon][nufft][small]") {
  // Q by one adjoint NUFFT on the doubled grid (device plan), then cuda::QOperator from that
  // device Q; and the NUFFT pair as the direct normal operator. Float32 NUFFT at 1e-4: both
  // within 1e-4 of F^H(W F x) (float32 rounding ~1e-6 on top of the kernel's error).
  const Grid grid = GENERATE(Grid(16, 14), Grid(15, 12), Grid(8, 6, 5), Grid(7, 9, 6));
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(grid) << ", seed " << seed);
  const auto t = traj::uniform_random(grid, 900, seed);
  const auto w = test::random_weights(t.size(), seed + 1);
  const Image x = test::random_image(grid, seed + 2);
  const Image reference = explicit_normal(t, w, x);
  NufftOptions o;
  o.tolerance = 1e-4;
  o.backend = Backend::Cuda;
  const DeviceImage dx(x);

  const NufftOperator q_op(mri::detail::q_trajectory(t, grid), grid.doubled(), o);
  std::vector<cfloat> wc(w.begin(), w.end());
  const DeviceImage dw(Image(Grid(static_cast<std::int64_t>(wc.size()), 1), wc));
  DeviceImage q(grid.doubled());
  cuda::detail::device_plan_of(q_op).adjoint_device(dw.data(), q.data(), Gridding::Gather);
  cuda::detail::device_plan_of(q_op).synchronize();
  const cuda::QOperator toeplitz(grid, q);
  DeviceImage out = poisoned(grid);
  toeplitz.apply(dx, out);
  CHECK(test::relative_error(out.to_host(), reference) < 1e-4);
  // The same Q on the CPU (nufft_q + QOperator::from_q) gives the same operator.
  CHECK(test::relative_error(mri::forward(QOperator::from_q(grid, nufft_q(t, w, grid, o)), x), out.to_host()) < 1e-5);

  const NufftOperator pair(t, grid, o);
  for (const Gridding g : {Gridding::Gather, Gridding::Scatter}) {
    DirectNormalOperator direct(std::dynamic_pointer_cast<cuda::detail::NufftDevicePlan>(mri::detail::NufftAccess::device_plan(pair)), g, w,
                                grid, t.size());
    DeviceImage out_d = poisoned(grid);
    direct.apply_regularized(dx, out_d, Regularizer::FiniteDifference, 0.8);
    CHECK(test::relative_error(out_d.to_host(), explicit_normal(t, w, x, Regularizer::FiniteDifference, 0.8)) < 1e-4);
  }
}

TEST_CASE("gpu reconstruct: method = Nufft agrees with the CPU NUFFT path and with the exact method",
          "[gpu][recon][reconstruct][nufft]") {
  // Same NUFFT (kernel, grid, tolerance) on both backends: the iterates agree to float32
  // accumulation order (1e-4 on the first ones), the final PSNR within 0.05 dB; and within 0.1 dB
  // of the exact method, for both normal operators, 2D and 3D.
  const PhantomProblem p = spiral_problem(64, 8, 1024, true);
  for (const Normal normal : {Normal::Toeplitz, Normal::Direct}) {
    INFO(to_string(normal));
    ReconOptions o;
    o.solver.iterations = 12;
    o.solver.normal = normal;
    o.method = Method::Nufft;
    const auto [cpu, gpu] = reconstruct_on_both(p, o);
    o.backend = Backend::Cuda;
    o.solver.tolerance = 0;
    o.method = Method::Exact;
    const ReconResult exact = reconstruct(p.data, p.grid, o);
    const double psnr_gpu = psnr(gpu.image, p.truth);
    WARN("2D " << to_string(normal) << ": PSNR nufft gpu " << psnr_gpu << " cpu " << psnr(cpu.image, p.truth)
               << " exact gpu " << psnr(exact.image, p.truth) << " dB");
    CHECK(gpu.report.method == Method::Nufft);
    CHECK(gpu.report.backend == Backend::Cuda);
    CHECK(std::abs(psnr_gpu - psnr(cpu.image, p.truth)) <= 0.05);
    CHECK(std::abs(psnr_gpu - psnr(exact.image, p.truth)) <= 0.1);
  }

  const auto [grid, truth, data] = koosh_problem(24, 400, 48, 5);
  ReconOptions o;
  o.method = Method::Exact;
  o.solver.iterations = 10;
  o.solver.tolerance = 0;
  o.backend = Backend::Cuda;
  const ReconResult exact = reconstruct(data, grid, o);
  o.method = Method::Nufft;
  const ReconResult fast = reconstruct(data, grid, o);
  WARN("3D: PSNR nufft " << psnr(fast.image, truth) << " exact " << psnr(exact.image, truth) << " dB");
  CHECK(std::abs(psnr(fast.image, truth) - psnr(exact.image, truth)) <= 0.1);
  CHECK(test::relative_error(fast.image, exact.image) < 1e-2);
}

TEST_CASE("gpu reconstruct: precision = float64 (SeparableGemm sums) agrees with the CPU float64 path",
          "[gpu][recon][reconstruct]") {
  const PhantomProblem p = spiral_problem(32, 8, 512, true);
  ReconOptions o;
  o.method = Method::Exact;
  o.solver.iterations = 6;
  o.solver.tolerance = 0;
  o.precision = Precision::Float64;
  o.backend = Backend::Cpu;
  const ReconResult cpu = reconstruct(p.data, p.grid, o);
  o.backend = Backend::Cuda;
  const ReconResult gpu = reconstruct(p.data, p.grid, o);
  CHECK(test::relative_error(gpu.image, cpu.image) < 1e-4);
  o.solver.normal = Normal::Direct;
  const ReconResult direct = reconstruct(p.data, p.grid, o);
  CHECK(test::relative_error(direct.image, cpu.image) < 1e-4);
}

TEST_CASE("gpu reconstruct: the Q cache misses, hits (same image), never serves another trajectory, and "
          "replaces a corrupt entry",
          "[gpu][recon][q-cache]") {
  const PhantomProblem p = spiral_problem(48, 8, 1024, true);
  test::TempDir dir("gpu_qcache");
  ReconOptions o;
  o.method = Method::Exact;
  o.solver.iterations = 8;
  o.backend = Backend::Cuda;
  o.q_cache_dir = dir.path();
  // A miss, then a hit with the same image; the CPU reads the GPU's entry (one format for both).
  const auto miss_then_hits = [&](ReconOptions opts) {
    const ReconResult first = reconstruct(p.data, p.grid, opts);
    CHECK(first.report.q_cache == QCacheStatus::Miss);
    REQUIRE(std::filesystem::exists(first.report.q_cache_file));
    const ReconResult hit = reconstruct(p.data, p.grid, opts);
    CHECK(hit.report.q_cache == QCacheStatus::Hit);
    CHECK(test::relative_error(hit.image, first.image) < 1e-7);
    opts.backend = Backend::Cpu;
    const ReconResult cpu_hit = reconstruct(p.data, p.grid, opts);
    CHECK(cpu_hit.report.q_cache == QCacheStatus::Hit);
    CHECK(test::relative_error(cpu_hit.image, hit.image) < 1e-4);
    return first;
  };
  const ReconResult miss = miss_then_hits(o);

  const PhantomProblem other = spiral_problem(48, 8, 1000, true);
  const ReconResult other_r = reconstruct(other.data, other.grid, o);
  CHECK(other_r.report.q_cache == QCacheStatus::Miss);
  CHECK(other_r.report.q_cache_file != miss.report.q_cache_file);

  {
    std::fstream f(miss.report.q_cache_file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(300);
    f.put('\x5a');
  }
  const ReconResult rejected = reconstruct(p.data, p.grid, o);
  CHECK(rejected.report.q_cache == QCacheStatus::Rejected);
  CHECK_THAT(rejected.report.q_cache_message, test::contains("rejected"));
  CHECK(test::relative_error(rejected.image, miss.image) < 1e-7);
  CHECK(reconstruct(p.data, p.grid, o).report.q_cache == QCacheStatus::Hit);

  // Q by NUFFT is its own entry, never the exact one, with the same miss / hit / CPU-hit story.
  o.method = Method::Nufft;
  CHECK(miss_then_hits(o).report.q_cache_file != miss.report.q_cache_file);
}

TEST_CASE("gpu reconstruct: bad input is refused with a message", "[gpu][recon][bad-input][small]") {
  const PhantomProblem p = spiral_problem(16, 4, 256, false);
  ReconOptions o;
  o.method = Method::Exact;
  o.backend = Backend::Cuda;
  o.solver.iterations = 2;
  o.solver.lambda = -1;
  CHECK_THROWS_WITH(reconstruct(p.data, p.grid, o), test::contains("options.solver.lambda = -1"));
  o.solver.lambda = 0;

  // A device-memory budget too small: refused up front, naming the bytes.
  o.gpu.memory_limit = 1 << 20;
  CHECK_THROWS_AS(reconstruct(p.data, p.grid, o), Unsupported);
  CHECK_THROWS_WITH(reconstruct(p.data, p.grid, o), test::contains("needs about"));
  o.gpu.memory_limit = 0;

  // Overflowing sums: CG stops with a status.
  std::vector<cfloat> samples = p.data.samples();
  for (auto &v : samples) v *= 1e-3f;
  const KSpaceData huge(p.data.trajectory(), samples, std::vector<float>(samples.size(), 1e36f));
  const ReconResult r = reconstruct(huge, p.grid, o);
  CHECK(r.report.status == CgStatus::NonFinite);

  // Operators: wrong grid, aliasing, bad spectrum, bad weights.
  const Grid grid(8, 8);
  const auto t = traj::uniform_random(grid, 64, 3);
  cuda::QOperator q(t, {}, grid);
  DeviceImage in(test::random_image(grid, 1)), wrong(Grid(8, 7));
  CHECK_THROWS_AS(q.apply(in, wrong), InvalidArgument);
  CHECK_THROWS_AS(q.apply(in, in), InvalidArgument);
  DeviceImage right(grid);
  CHECK_THROWS_WITH(q.apply_regularized(in, right, Regularizer::Tikhonov, -0.5), test::contains("lambda"));
  CHECK_THROWS_AS(cuda::QOperator(grid, std::vector<float>(10)), InvalidArgument);
  std::vector<float> w(64, 1.0f);
  w[9] = -2;
  CHECK_THROWS_WITH(cuda::QOperator(t, w, grid), test::contains("weights[9]"));
  CHECK_THROWS_AS(cuda::QOperator(t, {}, Grid(4, 4)), InvalidArgument); // samples outside [-2, 2)
  CHECK_THROWS_AS(DirectNormalOperator(t, std::vector<float>(3), grid), InvalidArgument);
  CHECK_THROWS_AS(cuda::QOperator(grid, DeviceImage(grid)), InvalidArgument); // Q not on the doubled grid
  CHECK_THROWS_AS(DirectNormalOperator(nullptr, Gridding::Gather, {}, grid, 64), InvalidArgument);

  // method = Nufft: the CUDA NUFFT is float32; a float64 request on cuda says so.
  o.method = Method::Nufft;
  o.precision = Precision::Float64;
  CHECK_THROWS_WITH(reconstruct(p.data, p.grid, o), test::contains("float64"));
  CHECK_THROWS_AS(reconstruct(p.data, p.grid, o), Unsupported);
}

TEST_CASE("gpu reconstruct: large problems run or fail up front with the memory they need", "[gpu][recon][large][small]") {
  // 256^3 with M = 2^20: the estimate must fit on this device (it runs: see the benchmark).
  const auto need = cuda::reconstruct_device_bytes(Grid(256, 256, 256), std::size_t{1} << 20, false, false);
  const auto memory = cuda::device_memory();
  WARN("256^3 reconstruct needs about " << need.peak() / double(1 << 30) << " GiB; device total "
                                                 << memory.total / double(1 << 30) << " GiB");
  CHECK(need.peak() < memory.total);
  // 1024^3 (Toeplitz grid 2048^3) cannot: refused before any allocation, naming the bytes.
  const Grid huge(1024, 1024, 1024);
  const KSpaceData data(traj::uniform_random(huge, 100, 1), std::vector<cfloat>(100, cfloat(1, 0)));
  ReconOptions o;
  o.method = Method::Exact;
  o.backend = Backend::Cuda;
  try {
    reconstruct(data, huge, o);
    FAIL("a 1024^3 reconstruction should not fit");
  } catch (const Unsupported &e) {
    WARN(e.what());
    CHECK_THAT(std::string(e.what()), test::contains("needs about"));
  }
}
