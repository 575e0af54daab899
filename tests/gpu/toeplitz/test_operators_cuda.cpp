// The public operators and reconstruct() on backend = Cuda against the CPU float64 reference:
// what a user of FourierOperator / FhDOperator / QOperator gets from each kernel policy.
#include <random>

#include "catch.hpp"
#include "test_support.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/metrics.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri/toeplitz.hpp"

using namespace mri;

namespace {

using gpu_test::fresh_seed; // MRI_GPU_TEST_SEED replays a failure

const OperatorOptions kReference{Backend::Cpu, Precision::Float64, KernelPolicy::Auto};

} // namespace

TEST_CASE("cuda operators: F^H, F and Q match the float64 reference for every policy", "[gpu][operators][small]") {
  const Grid grid = GENERATE(Grid(37, 30), Grid(11, 9, 7));
  const KernelPolicy policy = GENERATE(KernelPolicy::Auto, KernelPolicy::ScatterAtomic, KernelPolicy::Gather,
                                       KernelPolicy::Register, KernelPolicy::ConstantChunked,
                                       KernelPolicy::SfuTrig, KernelPolicy::Tuned, KernelPolicy::SeparableGemm);
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", policy " << to_string(policy)
               << ", seed " << seed);
  const auto t = traj::uniform_random(grid, 3001, seed);
  const auto y = test::random_complex(t.size(), seed + 1);
  const Image x = test::random_image(grid, seed + 2);

  const FourierOperator gpu(t, grid, {Backend::Cuda, Precision::Float32, policy});
  const FourierOperator ref(t, grid, kReference);
  CHECK(gpu.options().backend == Backend::Cuda);
  // 1e-5: float32 accumulation over M = 3001 terms with accurate or turn-reduced trig
  // (the tolerance every policy is held to).
  CHECK(test::relative_error(mri::adjoint(gpu, y), mri::adjoint(ref, y)) < 1e-5);
  const auto fx = mri::forward(gpu, x), fx_ref = mri::forward(ref, x);
  CHECK(test::relative_error(std::span<const cfloat>(fx), std::span<const cfloat>(fx_ref)) < 1e-5);

  const std::vector<float> w = test::random_weights(t.size(), seed + 3);
  const QOperator q_gpu(t, w, grid, {Backend::Cuda, Precision::Float32, policy});
  const QOperator q_ref(t, w, grid, kReference);
  CHECK(test::relative_error(q_gpu.q(), q_ref.q()) < 1e-5);
}

TEST_CASE("cuda operators: float64 on the GPU runs separable-gemm (ZGEMM in double)", "[gpu][operators]") {
  const Grid grid = GENERATE(Grid(16, 12), Grid(9, 8, 7));
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", seed " << seed);
  const auto t = traj::uniform_random(grid, 777, seed);
  const auto y = test::random_complex(t.size(), seed + 1);
  const Image x = test::random_image(grid, seed + 2);
  const OperatorOptions gpu64{Backend::Cuda, Precision::Float64, KernelPolicy::Auto};
  const FourierOperator gpu(t, grid, gpu64);
  const FourierOperator ref(t, grid, kReference);
  CHECK(gpu.options().backend == Backend::Cuda);
  CHECK(gpu.options().policy == KernelPolicy::SeparableGemm);
  // Both compute in double and round to float at the end: only that rounding differs.
  CHECK(test::relative_error(mri::adjoint(gpu, y), mri::adjoint(ref, y)) < 1e-6);
  const auto fx = mri::forward(gpu, x), fx_ref = mri::forward(ref, x);
  CHECK(test::relative_error(std::span<const cfloat>(fx), std::span<const cfloat>(fx_ref)) < 1e-6);
  const QOperator q_gpu(t, {}, grid, gpu64);
  const QOperator q_ref(t, {}, grid, kReference);
  CHECK(test::relative_error(q_gpu.q(), q_ref.q()) < 1e-6);
  // A float32 policy cannot serve float64: refused, not faked.
  CHECK_THROWS_AS(FourierOperator(t, grid, {Backend::Cuda, Precision::Float64, KernelPolicy::Tuned}), Unsupported);
  CHECK_THROWS_AS(QOperator(t, {}, grid, {Backend::Cuda, Precision::Float64, KernelPolicy::SfuTrig}), Unsupported);
  CHECK(FourierOperator(t, grid, {Backend::Auto, Precision::Float64}).options().backend == Backend::Cuda);
  CHECK(FourierOperator(t, grid, {Backend::Auto, Precision::Float32}).options().backend == Backend::Cuda);
}

TEST_CASE("cuda reconstruct: SFU trig and tuned lose at most 0.1 dB against float64", "[gpu][reconstruct]") {
  // Stone et al. (2008): double 27.6 dB, hardware trig 27.5 dB. Spiral phantom with analytic
  // k-space.
  const Grid grid(64, 64);
  const auto phantom = Phantom::shepp_logan_2d();
  auto t = traj::spiral(grid, 8, 1024);
  auto s = phantom.kspace(t, grid);
  add_noise(s, 50.0, 7);
  const KSpaceData data(std::move(t), std::move(s));
  const Image truth = phantom.rasterize(grid);
  ReconOptions o;
  o.method = Method::Exact;
  o.solver.iterations = 15;
  o.backend = Backend::Cpu;
  o.precision = Precision::Float64;
  const double reference = psnr(reconstruct(data, grid, o).image, truth);
  o.backend = Backend::Cuda;
  o.precision = Precision::Float32;
  for (KernelPolicy p : {KernelPolicy::SfuTrig, KernelPolicy::Tuned, KernelPolicy::Gather}) {
    o.gpu.policy = p;
    const ReconResult r = reconstruct(data, grid, o);
    const double db = psnr(r.image, truth);
    INFO(to_string(p) << ": " << db << " dB vs float64 " << reference << " dB");
    CHECK(r.report.backend == Backend::Cuda);
    CHECK(std::abs(db - reference) <= 0.1);
  }
}

TEST_CASE("cuda operators: samples on and beyond the grid's edge are their periodic images", "[gpu][operators][edge][small]") {
  // The CPU float64 operator on the same trajectory is the reference ([edge] tests prove it
  // equals the definition with the k as given); the GPU must agree at every policy's 1e-5.
  for (const Grid grid : {Grid(24, 20), Grid(9, 8, 7)}) {
    const std::uint64_t seed = fresh_seed();
    INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", seed " << seed);
    const Trajectory t = test::beyond_edge_trajectory(grid, 2000, seed);
    REQUIRE(t.check_range(grid) > 1000);
    const auto y = test::random_complex(t.size(), seed + 1);
    const Image x = test::random_image(grid, seed + 2);
    const FourierOperator ref(t, grid, kReference);
    const Image ref_adjoint = mri::adjoint(ref, y);
    for (const KernelPolicy policy : {KernelPolicy::Auto, KernelPolicy::Gather, KernelPolicy::SeparableGemm}) {
      INFO("policy " << to_string(policy));
      const FourierOperator gpu(t, grid, {Backend::Cuda, Precision::Float32, policy});
      CHECK(test::relative_error(mri::adjoint(gpu, y), ref_adjoint) < 1e-5);
    }
    const auto fx = mri::forward(FourierOperator(t, grid, {Backend::Cuda}), x), fx_ref = mri::forward(ref, x);
    CHECK(test::relative_error(std::span<const cfloat>(fx), std::span<const cfloat>(fx_ref)) < 1e-5);
    NufftOptions o;
    o.backend = Backend::Cuda;
    o.tolerance = 1e-4;
    const auto nx = mri::forward(NufftOperator(t, grid, o), x);
    CHECK(test::relative_error(std::span<const cfloat>(nx), std::span<const cfloat>(fx_ref)) < 1e-4);
    CHECK(test::relative_error(QOperator(t, {}, grid, {Backend::Cuda}).q(), QOperator(t, {}, grid, kReference).q()) <
          1e-5);
    // reconstruct on the device: the same image as the CPU's within float rounding, and the count.
    const KSpaceData data(t, fx_ref);
    ReconOptions ro;
    ro.method = Method::Exact;
    ro.solver.iterations = 5;
    ro.backend = Backend::Cuda;
    const ReconResult gpu_r = reconstruct(data, grid, ro);
    ro.backend = Backend::Cpu;
    const ReconResult cpu_r = reconstruct(data, grid, ro);
    CHECK(gpu_r.report.wrapped_samples == t.check_range(grid));
    CHECK(test::relative_error(gpu_r.image, cpu_r.image) < 1e-3);
  }
}
