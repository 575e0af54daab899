// Several GPUs in one process for the exact sums (ReconOptions::gpu.devices, cuda/devices/device_slabs.hpp),
// tested on one GPU: a device listed twice is two slabs, two plans and streams on it.
//  - each slab's share of F^H D (and Q's half grid) against the float64 sum, fresh random inputs;
//  - the Dirichlet spectrum by fz slabs against one device's (atomic adds: float rounding);
//  - reconstruct with devices {0, 0} and {0, 0, 0} against {0}: bitwise where the policy's
//    per-voxel summation order does not depend on the slab (Gather, Register, ConstantChunked,
//    SfuTrig: a thread per voxel walks the samples in order, the coordinates are the whole grid's
//    integers), within float rounding for Tuned (Auto: its sample splits depend on the grid's
//    tiles) and SeparableGemm (the GEMM's shape, and with it cuBLAS's order, is the slab's);
//  - bad ordinals and windows refused.
// Tags: [gpu] all; [slabs] these; [small] the quick subset.
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "recon/device_image.hpp"
#include "devices/device_slabs.hpp"
#include "exact/fhd_backend.hpp"
#include "toeplitz/toeplitz_cuda.hpp"
#include "catch.hpp"
#include "test_support.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/coils.hpp"
#include "mri/density.hpp"
#include "mri/error.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri_backend/direct_sums.hpp"
#include "gpu/sampled_reference.hpp"

using namespace mri;

namespace {

using cuda::DeviceImage;
using cuda::detail::SlabAdjoint;
using gpu_test::fresh_seed;
using gpu_test::random_trajectory;
using gpu_test::random_values;
using gpu_test::rel_l2;

std::string describe(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

// count x n values as one device array (a DeviceImage of an n x count grid: coil-major).
DeviceImage device_array(const std::vector<cfloat> &values, std::size_t n, int count) {
  Image host(Grid(static_cast<std::int64_t>(n), count));
  std::copy(values.begin(), values.end(), host.values().begin());
  return DeviceImage(host);
}
DeviceImage poisoned_array(std::size_t n, int count) {
  const cfloat nan(std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN());
  return device_array(std::vector<cfloat>(n * static_cast<std::size_t>(count), nan), n, count);
}

// Every policy's slabs over `devices` against adjoint_sum_f64, two coils at once.
void check_slabs(const Grid &out, const Grid &period, std::size_t m, const std::vector<int> &devices) {
  const std::uint64_t seed = fresh_seed();
  INFO("out " << describe(out) << ", period " << describe(period) << ", M = " << m << ", " << devices.size()
              << " slabs, seed " << seed);
  constexpr int kCoils = 2;
  const Trajectory t = random_trajectory(period, m, seed);
  const std::vector<cfloat> c = random_values(m * kCoils, seed + 1);
  const auto n = static_cast<std::size_t>(out.voxels());
  std::vector<cfloat> ref(n * kCoils);
  for (int v = 0; v < kCoils; ++v)
    detail::adjoint_sum_f64(t, std::span<const cfloat>(c).subspan(v * m, m), out, period, ref.data() + v * n);
  SlabAdjoint slabs(t, out, period, devices);
  REQUIRE(slabs.slabs().size() == devices.size());
  const DeviceImage c_dev = device_array(c, m, kCoils);
  for (const KernelPolicy p : gpu_test::kAllPolicies) {
    INFO("policy " << to_string(p));
    DeviceImage result = poisoned_array(n, kCoils);
    std::vector<double> seconds(devices.size());
    slabs.adjoint_coils(p, c_dev.data(), kCoils, result.data(), c_dev.stream(), seconds);
    const Image host = result.to_host();
    const double err = rel_l2(host.values(), ref);
    std::printf("  slabs %s x%zu %-16s rel L2 %.3e\n", describe(out).c_str(), devices.size(), to_string(p), err);
    CHECK(err <= 1e-5); // the policies' own bound (test_fhd_policies.cpp)
    for (std::size_t i = 0; i < seconds.size(); ++i)
      CHECK(seconds[i] > 0); // every slab has planes here, and its time is counted
  }
}

// A small problem: radial (2D) or koosh (3D) with density weights, one coil or `coils` with maps.
struct Problem {
  Grid grid;
  KSpaceData data;
  std::shared_ptr<const CoilSensitivities> maps;
};
Problem problem(const Grid &grid, int coils) {
  const bool three_d = grid.dims() == 3;
  const Phantom phantom = three_d ? Phantom::shepp_logan_3d() : Phantom::shepp_logan_2d();
  const int n = static_cast<int>(grid.nx());
  Trajectory t = three_d ? traj::koosh(grid, n * n / 2, 2 * n) : traj::radial(grid, n, 2 * n);
  std::vector<float> w = three_d ? density::pipe_menon(t, grid).weights : density::radial(t, grid, n);
  if (coils == 1) {
    std::vector<cfloat> y = phantom.kspace(t, grid);
    add_noise(y, 80.0, 5);
    return {grid, KSpaceData(std::move(t), std::move(y), std::move(w)), nullptr};
  }
  const SimulatedCoils array(grid.dims(), coils);
  std::vector<cfloat> y = array.kspace(phantom, t, grid);
  add_noise(y, 80.0, 5);
  return {grid, KSpaceData(std::move(t), std::move(y), std::move(w), coils),
          std::make_shared<const CoilSensitivities>(array.maps(grid))};
}

bool bitwise_equal(const Image &a, const Image &b) {
  return a.values().size() == b.values().size() &&
         std::memcmp(a.values().data(), b.values().data(), a.values().size() * sizeof(cfloat)) == 0;
}

// Whether a policy's per-voxel sum is the same whatever the slab (see the header comment).
bool order_independent(KernelPolicy p) {
  return p == KernelPolicy::Gather || p == KernelPolicy::Register || p == KernelPolicy::ConstantChunked ||
         p == KernelPolicy::SfuTrig;
}

// reconstruct with devices {0, 0} and {0, 0, 0} against {0}.
void check_reconstruct(const Problem &pb, ReconOptions o) {
  o.backend = Backend::Cuda;
  o.solver.iterations = 6;
  o.solver.tolerance = 0;
  o.coils.sensitivities = pb.maps;
  o.gpu.devices = {0};
  const ReconResult one = reconstruct(pb.data, pb.grid, o);
  REQUIRE(one.report.device_seconds.size() == 1);
  for (const std::size_t count : {2u, 3u}) {
    o.gpu.devices.assign(count, 0);
    INFO(describe(pb.grid) << ", " << (pb.maps ? "SENSE" : "one coil") << ", " << to_string(o.method) << ", "
                           << to_string(o.solver.normal) << ", policy " << to_string(o.gpu.policy) << ", precision "
                           << to_string(o.precision) << ", devices x" << count);
    const ReconResult many = reconstruct(pb.data, pb.grid, o);
    INFO("device note: " << many.report.device_note);
    // The report: one entry per listed device, the same fields meaning the same.
    REQUIRE(many.report.device_seconds.size() == count);
    for (const DevicePhaseSeconds &d : many.report.device_seconds) CHECK(d.device == 0);
    CHECK(many.report.q_method == one.report.q_method);
    CHECK(many.report.iterations == one.report.iterations);
    const bool exact = o.method == Method::Exact;
    if (exact)
      for (const DevicePhaseSeconds &d : many.report.device_seconds) CHECK(d.fhd_seconds > 0);
    CHECK(many.report.device_note.find(exact ? "F^H D: " : "F^H D: the NUFFT, not split") != std::string::npos);
    // SENSE's CG splits by coils too (coil_split.hpp): its coil sums regrouped by entry.
    const bool coils_split = pb.maps && o.solver.normal == Normal::Toeplitz;
    const bool same_order = (order_independent(o.gpu.policy) || o.method == Method::Nufft) && !coils_split;
    const bool bitwise = bitwise_equal(many.image, one.image);
    const double err = test::relative_error(many.image, one.image);
    std::printf("  slabs recon %s %s %s %s x%zu: %s (rel %.2e)\n", describe(pb.grid).c_str(),
                pb.maps ? "sense" : "1coil", to_string(o.method), to_string(o.gpu.policy), count,
                bitwise ? "bitwise" : "differs", err);
    if (same_order)
      CHECK(bitwise);
    else // F^H D, Q or the coil sums rounded in another order: ~1e-7 relative, grown by 6 CG iterations
      CHECK(err <= 1e-4);
  }
}

} // namespace

TEST_CASE("slabs: each slab's F^H D matches the float64 sum, every policy", "[gpu][slabs][small]") {
  check_slabs(Grid(37, 29), Grid(37, 29), 1531, {0, 0});
  check_slabs(Grid(13, 11, 9), Grid(13, 11, 9), 1201, {0, 0, 0});
  // Q's out = period.doubled(), in 3 slabs
  check_slabs(Grid(2 * 9, 2 * 7, 2 * 5), Grid(9, 7, 5), 977, {0, 0, 0});
}

TEST_CASE("slabs: more slabs than planes leave the last ones empty", "[gpu][slabs][small]") {
  const Grid g(5, 3);
  const auto slabs = cuda::detail::voxel_slabs(g, {0, 0, 0, 0, 0});
  REQUIRE(slabs.size() == 5);
  CHECK(slabs[0].planes == 1);
  CHECK(slabs[2].planes == 1);
  CHECK(slabs[3].planes == 0);
  CHECK(cuda::detail::describe(slabs) ==
        "y planes 0-0 on device 0, 1-1 on device 0, 2-2 on device 0, none on device 0, none on device 0");
  const Trajectory t = random_trajectory(g, 100, fresh_seed());
  const std::vector<cfloat> c = random_values(100, 7);
  std::vector<cfloat> ref(static_cast<std::size_t>(g.voxels()));
  detail::adjoint_sum_f64(t, c, g, g, ref.data());
  SlabAdjoint adjoint(t, g, g, {0, 0, 0, 0, 0});
  const DeviceImage c_dev = device_array(c, 100, 1);
  DeviceImage result = poisoned_array(ref.size(), 1);
  std::vector<double> seconds(5);
  adjoint.adjoint_coils(KernelPolicy::Gather, c_dev.data(), 1, result.data(), c_dev.stream(), seconds);
  CHECK(rel_l2(result.to_host().values(), ref) <= 1e-5);
  CHECK(seconds[3] == 0);
}

TEST_CASE("slabs: reconstruct on {0, 0} and {0, 0, 0} equals {0}, 2D and 3D, one coil and SENSE",
          "[gpu][slabs]") {
  for (const Grid grid : {Grid(40, 40), Grid(16, 16, 16)})
    for (const int coils : {1, 4}) {
      const Problem pb = problem(grid, coils);
      for (const KernelPolicy p : {KernelPolicy::Gather, KernelPolicy::SfuTrig, KernelPolicy::Auto}) {
        ReconOptions o;
        o.method = Method::Exact;
        o.gpu.policy = p;
        check_reconstruct(pb, o);
      }
      ReconOptions f64; // SeparableGemm, in double
      f64.method = Method::Exact;
      f64.precision = Precision::Float64;
      check_reconstruct(pb, f64);
    }
}

TEST_CASE("slabs: what does not split runs on the first device and the report says so", "[gpu][slabs][small]") {
  const Problem pb = problem(Grid(32, 32), 1);
  ReconOptions direct;
  direct.method = Method::Exact;
  direct.solver.normal = Normal::Direct;
  direct.gpu.policy = KernelPolicy::Register;
  check_reconstruct(pb, direct);
  ReconOptions nufft;
  nufft.method = Method::Nufft;
  check_reconstruct(pb, nufft);

  ReconOptions o;
  o.backend = Backend::Cuda;
  o.solver.iterations = 2;
  o.gpu.devices = {0, 0};
  o.method = Method::Nufft;
  const ReconResult n = reconstruct(pb.data, pb.grid, o);
  CHECK(n.report.device_note.find("Q: the NUFFT, not split: on device 0") != std::string::npos);
}

TEST_CASE("slabs: the Dirichlet spectrum by fz slabs matches one device's", "[gpu][slabs][small]") {
  // Padded nz 40 (5 kernel tiles of 8 planes: 16, 16, 8 on three slabs) and 18 (8 + 8 + 2: 16
  // and 2 on two); weighted and not.
  for (const Grid grid : {Grid(12, 10, 20), Grid(14, 12, 9)})
    for (const bool weighted : {false, true}) {
      const std::uint64_t seed = fresh_seed();
      const std::vector<int> devices(grid.nz() == 20 ? 3 : 2, 0);
      INFO(describe(grid) << (weighted ? ", weighted" : "") << ", " << devices.size() << " slabs, seed " << seed);
      const Trajectory t = random_trajectory(grid, 3001, seed);
      const std::vector<float> w = weighted ? test::random_weights(t.size(), seed + 1) : std::vector<float>{};
      const std::vector<float> one = cuda::QOperator(t, w, grid).spectrum(); // Auto: the Dirichlet sum
      std::vector<double> seconds(devices.size());
      const cuda::detail::SlabSpectrum many = cuda::detail::slab_dirichlet_spectrum(t, w, grid, devices, seconds);
      REQUIRE(many.spectrum.size() == one.size());
      INFO("slabs: " << cuda::detail::describe(many.slabs));
      CHECK(many.slabs.back().first + many.slabs.back().planes == grid.doubled().nz());
      const double err = rel_l2(many.spectrum, one);
      std::printf("  dirichlet slabs %s x%zu rel L2 %.3e\n", describe(grid).c_str(), devices.size(), err);
      CHECK(err <= 5e-6); // each run's own error against float64 is 3e-7 - 6e-7 (dirichlet_spectrum.cu)
      for (const double s : seconds) CHECK(s > 0);
    }

  // In reconstruct: 3D, policy Auto, on two "devices" (the images: check_reconstruct's tolerance)
  const Problem pb = problem(Grid(16, 16, 16), 1);
  ReconOptions o;
  o.method = Method::Exact;
  o.backend = Backend::Cuda;
  o.solver.iterations = 2;
  o.gpu.devices = {0, 0};
  const ReconResult d = reconstruct(pb.data, pb.grid, o);
  CHECK(d.report.q_method == "dirichlet-tensor-cores");
  INFO("device note: " << d.report.device_note);
  CHECK(d.report.device_note.find("Q: dirichlet-tensor-cores, its spectrum's z planes 0-15 on device 0, 16-31 on "
                                  "device 0") != std::string::npos);
  for (const DevicePhaseSeconds &s : d.report.device_seconds) CHECK(s.q_seconds > 0);
}

TEST_CASE("slabs: bad ordinals and windows are refused", "[gpu][slabs][small][bad-input]") {
  const Problem pb = problem(Grid(16, 16), 1);
  ReconOptions o;
  o.method = Method::Exact;
  o.backend = Backend::Cuda;
  o.solver.iterations = 1;
  o.gpu.devices = {0, 1000};
  CHECK_THROWS_WITH(reconstruct(pb.data, pb.grid, o),
                    test::contains("options.gpu.devices[1] = 1000: is not a CUDA device of this process, which sees"));
  o.gpu.devices = {-1};
  CHECK_THROWS_AS(reconstruct(pb.data, pb.grid, o), InvalidArgument);
  o.gpu.devices = {0};
  o.backend = Backend::Cpu;
  CHECK_THROWS_WITH(reconstruct(pb.data, pb.grid, o), test::contains("options.gpu.devices"));

  const Grid g(8, 8);
  const Trajectory t = random_trajectory(g, 10, 3);
  cuda::detail::FhdPlanOptions window;
  window.window = cuda::detail::FhdPlanOptions::Window{g, {0, 6, 0}};
  CHECK_THROWS_AS(cuda::detail::FhdPlan(t, Grid(8, 4), g, window), InvalidArgument); // planes 6-9 of 8
  window.window = cuda::detail::FhdPlanOptions::Window{Grid(8, 8, 8), {0, 0, 0}};
  CHECK_THROWS_AS(cuda::detail::FhdPlan(t, Grid(8, 4), g, window), InvalidArgument); // 3D whole, 2D window
}
