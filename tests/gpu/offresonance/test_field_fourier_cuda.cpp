// The exact field-corrected F^H D and F on the device (cuda/offresonance/field_fourier_cuda.hpp)
// against the host's float64 FieldFourierOperator, on fresh random trajectories, times, maps and
// data: 2D and 3D, odd extents, M not a multiple of the kernels' stage, outputs poisoned with NaN.
// Tags: [gpu][offresonance]; [small] the quick subset the sanitizers run.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "exact/fhd_backend.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/error.hpp"
#include "mri/image.hpp"
#include "mri/offresonance.hpp"
#include "offresonance/field_fourier_cuda.hpp"

namespace {

using mri::cfloat;
using mri::FieldFourierOperator;
using mri::FieldMap;
using mri::Grid;
using mri::Image;
using mri::KernelPolicy;
using mri::Precision;
using mri::Trajectory;
using mri::cuda::detail::FhdPlan;
using mri::cuda::detail::FieldFourierPlan;
using mri::cuda::detail::FieldKernel;
using mri::gpu_test::fresh_seed;
using mri::gpu_test::random_trajectory;
using mri::gpu_test::random_values;
using mri::gpu_test::rel_l2;

constexpr FieldKernel kKernels[] = {FieldKernel::SfuTrig, FieldKernel::Accurate, FieldKernel::Double};

// Tolerances (relative L2 against float64 sums rounded to float):
//  - float32 kernels: the phase in turns is formed in float, |k x / n| up to n / 4 turns plus
//    |f - f0| t up to 1.1 turns here, so its rounding is ~8 turns x 2^-24 = 5e-7 turns (3e-6 rad)
//    per pair, and __sincosf adds ~4e-7 absolute; over random phases the sums' relative error is
//    of that order. 1e-5, as the uncorrected policies (tests/gpu/exact/test_fhd_policies.cpp).
//  - Double: sums in double, inputs and outputs float: the outputs' rounding, 1e-6.
double tolerance(FieldKernel k) { return k == FieldKernel::Double ? 1e-6 : 1e-5; }

// -80 .. 140 Hz per voxel, independent (a harder case than a smooth map: every pair's field phase
// differs), and M times increasing over a 2 ms .. 18 ms readout.
struct FieldProblem {
  Grid grid;
  Trajectory trajectory;
  std::vector<float> times;
  std::shared_ptr<const FieldMap> field;
};

FieldProblem random_problem(const Grid &g, std::size_t m, std::uint64_t seed, bool zero_field = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> hz(-80.f, 140.f), t(0.002f, 0.018f);
  std::vector<float> map(static_cast<std::size_t>(g.voxels()));
  for (float &f : map) f = zero_field ? 0.f : hz(rng);
  std::vector<float> times(m);
  for (float &x : times) x = t(rng);
  std::sort(times.begin(), times.end());
  return {g, random_trajectory(g, m, seed + 1), std::move(times), std::make_shared<const FieldMap>(g, std::move(map))};
}

std::vector<cfloat> poisoned(std::size_t n) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return std::vector<cfloat>(n, cfloat(nan, nan));
}

std::string describe(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

void check_against_host(const Grid &g, std::size_t m) {
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(g) << ", M = " << m << ", seed " << seed);
  const FieldProblem p = random_problem(g, m, seed);
  const FieldFourierOperator host(p.trajectory, g, p.field, p.times, {mri::Backend::Cpu, Precision::Float64});
  const std::vector<cfloat> y = random_values(m, seed + 2);
  const std::vector<cfloat> x = random_values(static_cast<std::size_t>(g.voxels()), seed + 3);
  Image adjoint_ref(g);
  host.adjoint(y, adjoint_ref);
  std::vector<cfloat> forward_ref(m);
  host.forward(Image(g, x), forward_ref);

  FieldFourierPlan plan(p.trajectory, g, p.field->hz(), p.times);
  for (FieldKernel k : kKernels) {
    INFO("kernel " << mri::cuda::detail::to_string(k));
    std::vector<cfloat> adjoint = poisoned(x.size()), forward = poisoned(m);
    plan.adjoint(k, y.data(), adjoint.data());
    plan.forward(k, x.data(), forward.data());
    const double ea = rel_l2(adjoint, adjoint_ref.values()), ef = rel_l2(forward, forward_ref);
    std::printf("  field %-10s %-20s adjoint rel L2 %.3e, forward %.3e\n", describe(g).c_str(),
                mri::cuda::detail::to_string(k), ea, ef);
    CHECK(ea <= tolerance(k));
    CHECK(ef <= tolerance(k));
  }
}

} // namespace

TEST_CASE("GPU field-corrected F^H D and F match the host's float64 sums", "[gpu][offresonance][small]") {
  check_against_host(Grid(23, 17), 3001);
  check_against_host(Grid(12, 10, 7), 1537);
}

TEST_CASE("GPU field-corrected sums split over many blocks match the host", "[gpu][offresonance]") {
  // 64^2 voxels and 20000 samples: the adjoint's and the forward's splits over blockIdx.y (their
  // fixed-order addition) run with several stages each.
  check_against_host(Grid(64, 64), 20000);
}

TEST_CASE("GPU field-corrected F and F^H are adjoint", "[gpu][offresonance][small]") {
  const std::uint64_t seed = fresh_seed();
  const Grid g(20, 14);
  const std::size_t m = 2500;
  INFO("seed " << seed);
  const FieldProblem p = random_problem(g, m, seed);
  FieldFourierPlan plan(p.trajectory, g, p.field->hz(), p.times);
  const std::vector<cfloat> x = random_values(static_cast<std::size_t>(g.voxels()), seed + 2);
  const std::vector<cfloat> y = random_values(m, seed + 3);
  for (FieldKernel k : kKernels) {
    INFO("kernel " << mri::cuda::detail::to_string(k));
    std::vector<cfloat> ax(m), ahy(x.size());
    plan.forward(k, x.data(), ax.data());
    plan.adjoint(k, y.data(), ahy.data());
    std::complex<double> lhs = 0, rhs = 0; // <A x, y> and <x, A^H y>
    double ax2 = 0, y2 = 0, x2 = 0, ahy2 = 0;
    for (std::size_t i = 0; i < m; ++i) {
      lhs += std::conj(std::complex<double>(ax[i])) * std::complex<double>(y[i]);
      ax2 += std::norm(std::complex<double>(ax[i]));
      y2 += std::norm(std::complex<double>(y[i]));
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      rhs += std::conj(std::complex<double>(x[i])) * std::complex<double>(ahy[i]);
      x2 += std::norm(std::complex<double>(x[i]));
      ahy2 += std::norm(std::complex<double>(ahy[i]));
    }
    // each side's error is at most its kernel's relative error (tolerance()) times the norms
    // (Cauchy-Schwarz): |<dA x, y>| <= ||dA x|| ||y||
    const double bound = tolerance(k) * (std::sqrt(ax2 * y2) + std::sqrt(x2 * ahy2));
    std::printf("  adjointness %-20s |<Ax,y> - <x,A^H y>| %.3e (bound %.3e)\n", mri::cuda::detail::to_string(k),
                std::abs(lhs - rhs), bound);
    CHECK(std::abs(lhs - rhs) <= bound);
  }
}

TEST_CASE("GPU field-corrected sums with a zero field equal the uncorrected exact operator", "[gpu][offresonance][small]") {
  // The field kernels with f = 0 run the k part alone: the uncorrected F^H D (FhdPlan, Tuned and
  // the forward reference) within both kernels' float32 tolerance.
  const std::uint64_t seed = fresh_seed();
  const Grid g(19, 22);
  const std::size_t m = 2049;
  INFO("seed " << seed);
  const FieldProblem p = random_problem(g, m, seed, true);
  FieldFourierPlan field(p.trajectory, g, p.field->hz(), p.times);
  FhdPlan plain(p.trajectory, g, g);
  const std::vector<cfloat> y = random_values(m, seed + 2);
  const std::vector<cfloat> x = random_values(static_cast<std::size_t>(g.voxels()), seed + 3);
  std::vector<cfloat> a_plain(x.size()), a_field = poisoned(x.size()), f_plain(m), f_field = poisoned(m);
  plain.adjoint(KernelPolicy::Tuned, y.data(), a_plain.data());
  plain.forward(x.data(), f_plain.data());
  field.adjoint(FieldKernel::SfuTrig, y.data(), a_field.data());
  field.forward(FieldKernel::SfuTrig, x.data(), f_field.data());
  CHECK(rel_l2(a_field, a_plain) <= 2e-5);
  CHECK(rel_l2(f_field, f_plain) <= 2e-5);
}

TEST_CASE("GPU field kernels: each policy's kernel and bad input", "[gpu][offresonance][small]") {
  using mri::cuda::detail::field_kernel;
  CHECK(field_kernel(KernelPolicy::Auto, Precision::Float32) == FieldKernel::SfuTrig);
  CHECK(field_kernel(KernelPolicy::Tuned, Precision::Float32) == FieldKernel::SfuTrig);
  CHECK(field_kernel(KernelPolicy::Register, Precision::Float32) == FieldKernel::Accurate);
  CHECK(field_kernel(KernelPolicy::SeparableGemm, Precision::Float32) == FieldKernel::Double);
  CHECK(field_kernel(KernelPolicy::Auto, Precision::Float64) == FieldKernel::Double);
  CHECK_THROWS_AS(field_kernel(KernelPolicy::Tuned, Precision::Float64), mri::Unsupported);

  const FieldProblem p = random_problem(Grid(8, 8), 100, fresh_seed());
  const std::vector<float> short_map(63, 1.f), short_times(99, 0.01f);
  CHECK_THROWS_AS(FieldFourierPlan(p.trajectory, p.grid, short_map, p.times), mri::InvalidArgument);
  CHECK_THROWS_AS(FieldFourierPlan(p.trajectory, p.grid, p.field->hz(), short_times), mri::InvalidArgument);
  std::vector<float> negative = p.times;
  negative[5] = -1e-3f;
  CHECK_THROWS_AS(FieldFourierPlan(p.trajectory, p.grid, p.field->hz(), negative), mri::InvalidArgument);
  std::vector<float> nan_map = p.field->hz();
  nan_map[3] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(FieldFourierPlan(p.trajectory, p.grid, nan_map, p.times), mri::InvalidArgument);
  CHECK_THROWS_AS(FieldFourierPlan(Trajectory{}, p.grid, p.field->hz(), {}), mri::InvalidArgument);
}
