// Every CUDA F^H D kernel policy against the CPU float64 reference (mri::detail::adjoint_sum_f64
// and forward_sum_f64), on fresh random trajectories and data: 2D and 3D, odd sizes, M not a
// multiple of any block/chunk size, the Q case (out = period.doubled()), output poisoned with
// NaN before every run. Tags: [gpu] all; [small] the quick subset the sanitizers run.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "recon/device_image.hpp"
#include "exact/fhd_backend.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/image.hpp"
#include "gpu/sampled_reference.hpp"
#include "gpu/under_sanitizer.hpp"
#include "mri_backend/direct_sums.hpp"

namespace {

using mri::cfloat;
using mri::Grid;
using mri::KernelPolicy;
using mri::Trajectory;
using mri::cuda::detail::FhdPlan;
using mri::cuda::detail::ForwardPath;
using mri::gpu_test::fresh_seed;
using mri::gpu_test::kAllPolicies;
using mri::gpu_test::random_trajectory;
using mri::gpu_test::random_values;
using mri::gpu_test::rel_l2;
using cdouble = std::complex<double>;





std::vector<cfloat> poisoned(std::size_t n) {
  return std::vector<cfloat>(n, cfloat(std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN()));
}

std::string describe(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

// Tolerance of every implemented policy: accurate trig and SfuTrig/Tuned with the phase
// reduced in turns all meet 1e-5 (docs/architecture.md, the F^H D stages).
constexpr double kTolerance = 1e-5;

struct Case {
  const char *name;
  Grid out, period;
  std::size_t m;
};

void check_all_policies(const Case &cs) {
  const std::uint64_t seed = fresh_seed();
  INFO("case " << cs.name << ": out " << describe(cs.out) << ", period " << describe(cs.period) << ", M = " << cs.m
               << ", seed " << seed);
  const Trajectory t = random_trajectory(cs.period, cs.m, seed);
  const std::vector<cfloat> c = random_values(cs.m, seed + 1);
  std::vector<cfloat> ref(static_cast<std::size_t>(cs.out.voxels()));
  mri::detail::adjoint_sum_f64(t, c, cs.out, cs.period, ref.data());

  FhdPlan plan(t, cs.out, cs.period);
  for (KernelPolicy p : kAllPolicies) {
    INFO("policy " << mri::to_string(p));
    std::vector<cfloat> result = poisoned(ref.size());
    plan.adjoint(p, c.data(), result.data());
    const double err = rel_l2(result, ref);
    std::printf("  %-10s %-16s rel L2 %.3e\n", cs.name, mri::to_string(p), err);
    CHECK(err <= kTolerance);
  }
  // A value outside the enum is refused, not run as some other kernel.
  std::vector<cfloat> result = poisoned(ref.size());
  CHECK_THROWS_AS(plan.adjoint(static_cast<KernelPolicy>(99), c.data(), result.data()), mri::InvalidArgument);
  // Every variant of the Tuned policy (the benchmark's ablation), not only the default.
  for (int v = 0; v < mri::cuda::detail::tuned_variant_count(); ++v) {
    INFO("tuned variant " << mri::cuda::detail::tuned_variant_name(v));
    std::vector<cfloat> result = poisoned(ref.size());
    plan.adjoint_tuned_variant(v, c.data(), result.data());
    const double err = rel_l2(result, ref);
    std::printf("  %-10s tuned/%-29s rel L2 %.3e\n", cs.name, mri::cuda::detail::tuned_variant_name(v), err);
    CHECK(err <= kTolerance);
  }
}

} // namespace

TEST_CASE("CUDA F^H D policies match the float64 sum: 2D odd grid", "[gpu][fhd][small]") {
  // M = 2 chunks of 1536 + 77: two constant-memory slots, a partial chunk.
  check_all_policies({"2d", Grid(37, 23), Grid(37, 23), 3149});
}

TEST_CASE("CUDA F^H D policies match the float64 sum: 3D odd grid", "[gpu][fhd][small]") {
  check_all_policies({"3d", Grid(17, 13, 11), Grid(17, 13, 11), 1601});
}

TEST_CASE("CUDA F^H D policies match the float64 sum: many chunks", "[gpu][fhd]") {
  // 6 constant chunks (slot reuse), several Tuned shared-memory tiles per split.
  check_all_policies({"3d-chunks", Grid(21, 19, 9), Grid(21, 19, 9), 4 * 1536 + 1025 + 3});
  check_all_policies({"2d-chunks", Grid(64, 48), Grid(64, 48), 5 * 1536 + 11});
}

TEST_CASE("CUDA Q (out = period.doubled()) matches the float64 sum", "[gpu][fhd]") {
  const Grid p2(29, 21);
  check_all_policies({"q-2d", p2.doubled(), p2, 2311});
  const Grid p3(13, 11, 9);
  check_all_policies({"q-3d", p3.doubled(), p3, 2053});
}

TEST_CASE("CUDA F^H D: the plan is reused across calls and device pointers work", "[gpu][fhd][small]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid g(19, 15, 7);
  const Trajectory t = random_trajectory(g, 2500, seed);
  FhdPlan plan(t, g, g);
  for (int call = 0; call < 2; ++call) {
    const std::vector<cfloat> c = random_values(t.size(), seed + 10 + call);
    std::vector<cfloat> ref(static_cast<std::size_t>(g.voxels()));
    mri::detail::adjoint_sum_f64(t, c, g, g, ref.data());
    for (KernelPolicy p : {KernelPolicy::SfuTrig, KernelPolicy::Tuned, KernelPolicy::Register,
                           KernelPolicy::SeparableGemm}) {
      INFO("call " << call << ", policy " << mri::to_string(p));
      // Device path: poison the resident image buffer, run on device pointers, fetch.
      plan.upload_samples(c.data());
      std::vector<cfloat> result = poisoned(ref.size());
      plan.upload_image(result.data());
      plan.adjoint_device(p, plan.device_samples(), plan.device_image());
      plan.synchronize();
      plan.download_image(result.data());
      const double err = rel_l2(result, ref);
      CHECK(err <= kTolerance);
      // The host path gives the same bits (every policy is deterministic).
      std::vector<cfloat> host = poisoned(ref.size());
      plan.adjoint(p, c.data(), host.data());
      CHECK(host == result);
    }
  }
}

namespace {

// Configurations of SeparableGemm the tests run: the default (budget-sized, here one chunk), a
// chunk that divides no M below, a 256 KiB budget (chunks of 64 to 256 samples), and the Gauss
// 3M products (cublasZgemm3m / Cgemm3m) with chunks of 500.
mri::cuda::detail::SeparableGemmConfig chunking(int which) {
  mri::cuda::detail::SeparableGemmConfig cfg;
  if (which == 1 || which == 3) cfg.max_chunk_samples = 500;
  if (which == 2) cfg.memory_budget_bytes = 256 * 1024;
  cfg.gauss_3m = which == 3;
  return cfg;
}
constexpr const char *kChunkingNames[] = {"default", "chunk 500", "budget 256 KiB", "3m chunk 500"};
constexpr int kChunkings = 4;

} // namespace

TEST_CASE("CUDA SeparableGemm in float64 matches a long double sum to 1e-10", "[gpu][fhd][separable][small]") {
  const Grid p3(13, 11, 9);
  const Case cases[] = {{"2d", Grid(37, 23), Grid(37, 23), 3149},
                        {"3d", Grid(17, 13, 11), Grid(17, 13, 11), 1601},
                        {"3d-split", Grid(16, 12, 10), Grid(16, 12, 10), 1000}, // y split 3 x 4
                        {"q-3d", p3.doubled(), p3, 2053}};
  for (const Case &cs : cases) {
    const std::uint64_t seed = fresh_seed();
    INFO("case " << cs.name << ": out " << describe(cs.out) << ", M = " << cs.m << ", seed " << seed);
    const Trajectory t = random_trajectory(cs.period, cs.m, seed);
    const std::vector<cdouble> c = random_values<double>(cs.m, seed + 1);
    std::vector<std::int64_t> all(static_cast<std::size_t>(cs.out.voxels()));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
    const std::vector<cdouble> ref = mri::gpu_test::adjoint_at(t, std::span<const cdouble>(c), cs.out, cs.period, all);
    const std::vector<cfloat> cf(c.begin(), c.end());
    const std::vector<cdouble> ref_f = mri::gpu_test::adjoint_at(t, std::span<const cfloat>(cf), cs.out, cs.period, all);

    FhdPlan plan(t, cs.out, cs.period);
    for (int which = 0; which < kChunkings; ++which) {
      INFO("chunking " << kChunkingNames[which]);
      plan.set_separable_config(chunking(which));
      const auto shape = plan.separable_shape();
      CHECK(static_cast<std::int64_t>(shape.rows) * shape.cols == cs.out.voxels());
      std::vector<cdouble> result(all.size(), cdouble(NAN, NAN));
      plan.adjoint_f64(c.data(), result.data());
      const double err = mri::gpu_test::sampled_rel_l2(std::span<const cdouble>(result), all, ref);
      // The cfloat API: same sum in double, rounded to float at the end.
      std::vector<cfloat> rf = poisoned(all.size());
      plan.adjoint(KernelPolicy::SeparableGemm, cf.data(), rf.data());
      const double err_f = mri::gpu_test::sampled_rel_l2(std::span<const cfloat>(rf), all, ref_f);
      std::printf("  %-9s %-14s rows %5d cols %5d chunk %5zu x %3zu  f64 rel L2 %.3e  cfloat %.3e\n", cs.name,
                  kChunkingNames[which], shape.rows, shape.cols, shape.chunk_samples, shape.chunks, err, err_f);
      CHECK(err <= 1e-10);
      CHECK(err_f <= 1e-6);
    }
  }
}

// Issue 11's coil-batched exact F^H D: C coefficient vectors at once (SeparableGemm: the coils
// as more GEMM columns, each phase evaluated once, 8 or 4 coils per GEMM by the grid's size)
// against each coil's float64 sum. Tolerance:
// SeparableGemm sums in double and rounds once to float (<= 1e-6, as its cfloat API above);
// the other policies run coil by coil and keep their 1e-5. Outputs poisoned with NaN first.
TEST_CASE("CUDA F^H D for several coils at once matches each coil's float64 sum", "[gpu][fhd][sense][small]") {
  const Grid p3(13, 11, 9);
  const Case cases[] = {{"2d", Grid(37, 23), Grid(37, 23), 3149},
                        {"3d-split", Grid(16, 12, 10), Grid(16, 12, 10), 1000},
                        {"q-3d", p3.doubled(), p3, 2053},
                        {"3d-4-per-gemm", Grid(66, 33, 32), Grid(66, 33, 32), 300}}; // > 2^16 voxels
  for (const Case &cs : cases) {
    const std::uint64_t seed = fresh_seed();
    const auto n = static_cast<std::size_t>(cs.out.voxels());
    const Trajectory t = random_trajectory(cs.period, cs.m, seed);
    FhdPlan plan(t, cs.out, cs.period);
    for (int coils : {1, 3, 11}) { // 11: GEMMs of 8 + 3 coils (4 + 4 + 3 on the large grid)
      INFO("case " << cs.name << ", " << coils << " coils, seed " << seed);
      const std::vector<cfloat> c = random_values(coils * cs.m, seed + coils);
      std::vector<cfloat> ref(coils * n);
      for (int v = 0; v < coils; ++v)
        mri::detail::adjoint_sum_f64(t, std::span<const cfloat>(c).subspan(v * cs.m, cs.m), cs.out, cs.period,
                                     ref.data() + v * n);
      mri::cuda::DeviceImage d_c(Grid(static_cast<std::int64_t>(c.size()), 1));
      mri::cuda::DeviceImage d_out(Grid(static_cast<std::int64_t>(ref.size()), 1));
      d_c.upload(c.data());
      for (int which = 0; which < kChunkings; ++which)
        for (KernelPolicy p : {KernelPolicy::SeparableGemm, KernelPolicy::Tuned}) {
          if (p == KernelPolicy::Tuned && which > 0) continue; // the chunkings are SeparableGemm's
          INFO("policy " << mri::to_string(p) << ", chunking " << kChunkingNames[which]);
          plan.set_separable_config(chunking(which));
          std::vector<cfloat> result = poisoned(ref.size());
          d_out.upload(result.data());
          plan.adjoint_coils_device(p, d_c.data(), coils, d_out.data());
          plan.synchronize();
          d_out.download(result.data());
          for (int v = 0; v < coils; ++v) {
            const std::vector<cfloat> got(result.begin() + v * n, result.begin() + (v + 1) * n);
            const std::vector<cfloat> want(ref.begin() + v * n, ref.begin() + (v + 1) * n);
            const double err = rel_l2(got, want);
            INFO("coil " << v << ": rel L2 " << err);
            CHECK(err <= (p == KernelPolicy::SeparableGemm ? 1e-6 : kTolerance));
          }
        }
    }
    CHECK_THROWS_AS(plan.adjoint_coils_device(KernelPolicy::SeparableGemm, nullptr, 0, nullptr), mri::InvalidArgument);
  }
}

TEST_CASE("CUDA forward paths match forward_sum_f64; forward_f64 a long double sum", "[gpu][fhd][small]") {
  for (const Grid &g : {Grid(33, 27), Grid(15, 13, 9), Grid(16, 12, 10)}) {
    const std::uint64_t seed = fresh_seed();
    INFO("grid " << describe(g) << ", seed " << seed);
    const Trajectory t = random_trajectory(g, 1537, seed);
    mri::Image img(g, random_values(static_cast<std::size_t>(g.voxels()), seed + 1));
    std::vector<cfloat> ref(t.size());
    mri::detail::forward_sum_f64(t, img, ref.data());
    const std::vector<cdouble> img64 = random_values<double>(static_cast<std::size_t>(g.voxels()), seed + 2);
    std::vector<std::int64_t> all(t.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
    const std::vector<cdouble> ref64 = mri::gpu_test::forward_at(t, std::span<const cdouble>(img64), g, all);
    FhdPlan plan(t, g, g);
    for (int which = 0; which < kChunkings; ++which) {
      INFO("chunking " << kChunkingNames[which]);
      plan.set_separable_config(chunking(which));
      for (ForwardPath path : {ForwardPath::Reference, ForwardPath::GemmFloat, ForwardPath::GemmDouble}) {
        INFO("path " << mri::cuda::detail::to_string(path));
        std::vector<cfloat> result = poisoned(t.size());
        plan.forward(path, img.data(), result.data());
        const double err = rel_l2(result, ref);
        std::printf("  %-8s %-14s %-20s rel L2 %.3e\n", describe(g).c_str(), kChunkingNames[which],
                    mri::cuda::detail::to_string(path), err);
        CHECK(err <= kTolerance);
      }
      std::vector<cdouble> r64(t.size(), cdouble(NAN, NAN));
      plan.forward_f64(img64.data(), r64.data());
      const double err64 = mri::gpu_test::sampled_rel_l2(std::span<const cdouble>(r64), all, ref64);
      std::printf("  %-8s %-14s forward_f64          rel L2 %.3e (long double)\n", describe(g).c_str(),
                  kChunkingNames[which], err64);
      CHECK(err64 <= 1e-10);
    }
    // The two-argument forward is the reference kernel, bit for bit.
    std::vector<cfloat> a = poisoned(t.size()), b = poisoned(t.size());
    plan.forward(img.data(), a.data());
    plan.forward(ForwardPath::Reference, img.data(), b.data());
    CHECK(a == b);
  }
}

// Large M: the float32 running sum, not the trig, dominates the error unless the policy sums in
// blocks. Checked on sampled voxels against a double sum computed here (the full float64
// reference would take minutes). Gather accumulates in global memory every sample (Stone et al.'s
// form; the F^H D stages, docs/architecture.md): its figure is printed, not checked. ScatterAtomic is too slow at this size.
TEST_CASE("CUDA F^H D at M = 2^20 keeps rel L2 <= 1e-5 (blocked sums)", "[gpu][fhd][large]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  // Tuned: 2 passes of 4096-sample blocks over the splits. Under a sanitizer (under_sanitizer.hpp)
  // the same 2^20 samples against a 9x7x5 grid: every block and pass of the sum, 100x fewer voxels.
  const Grid g = mri::gpu_test::under_sanitizer() ? Grid(9, 7, 5) : Grid(33, 31, 29);
  std::printf("  M=2^20+123 against %lldx%lldx%lld voxels\n", static_cast<long long>(g.nx()),
              static_cast<long long>(g.ny()), static_cast<long long>(g.nz()));
  const std::size_t m = (std::size_t{1} << 20) + 123;
  const Trajectory t = random_trajectory(g, m, seed);
  const std::vector<cfloat> c = random_values(m, seed + 1);

  const std::vector<std::int64_t> voxels = mri::gpu_test::random_indices(g.voxels(), 48, seed + 2);
  const std::vector<cdouble> ref = mri::gpu_test::adjoint_at(t, std::span<const cfloat>(c), g, g, voxels);

  FhdPlan plan(t, g, g);
  const auto all_finite = [](const std::vector<cfloat> &v) {
    return std::all_of(v.begin(), v.end(), [](cfloat r) { return std::isfinite(r.real()) && std::isfinite(r.imag()); });
  };
  for (KernelPolicy p : {KernelPolicy::Gather, KernelPolicy::Register, KernelPolicy::ConstantChunked,
                         KernelPolicy::SfuTrig, KernelPolicy::Tuned, KernelPolicy::SeparableGemm}) {
    INFO("policy " << mri::to_string(p));
    std::vector<cfloat> result = poisoned(static_cast<std::size_t>(g.voxels()));
    plan.adjoint(p, c.data(), result.data());
    const double err = mri::gpu_test::sampled_rel_l2(std::span<const cfloat>(result), voxels, ref);
    std::printf("  M=2^20+123 %-16s rel L2 %.3e (48 sampled voxels)\n", mri::to_string(p), err);
    CHECK(all_finite(result));
    if (p != KernelPolicy::Gather) CHECK(err <= kTolerance);
  }
  for (int v = 0; v < mri::cuda::detail::tuned_variant_count(); ++v) {
    INFO("tuned variant " << mri::cuda::detail::tuned_variant_name(v));
    std::vector<cfloat> result = poisoned(static_cast<std::size_t>(g.voxels()));
    plan.adjoint_tuned_variant(v, c.data(), result.data());
    const double err = mri::gpu_test::sampled_rel_l2(std::span<const cfloat>(result), voxels, ref);
    std::printf("  M=2^20+123 tuned/%-29s rel L2 %.3e (48 sampled voxels)\n", mri::cuda::detail::tuned_variant_name(v), err);
    CHECK(all_finite(result));
    CHECK(err <= kTolerance);
  }
  // Float64 end to end (SeparableGemm streams 2^20 samples in chunks of 16384): 1e-10.
  {
    const std::vector<cdouble> c64(c.begin(), c.end());
    std::vector<cdouble> result(static_cast<std::size_t>(g.voxels()), cdouble(NAN, NAN));
    plan.adjoint_f64(c64.data(), result.data());
    const double err = mri::gpu_test::sampled_rel_l2(std::span<const cdouble>(result), voxels, ref);
    std::printf("  M=2^20+123 adjoint_f64 (%zu chunks) rel L2 %.3e (48 sampled voxels, long double)\n",
                plan.separable_shape().chunks, err);
    CHECK(err <= 1e-10);
  }
  // The fast forward paths over 2^20 samples, at 48 sampled samples.
  {
    const std::vector<cfloat> img = random_values(static_cast<std::size_t>(g.voxels()), seed + 3);
    const std::vector<std::int64_t> samples = mri::gpu_test::random_indices(static_cast<std::int64_t>(m), 48, seed + 4);
    const std::vector<cdouble> fref = mri::gpu_test::forward_at(t, std::span<const cfloat>(img), g, samples);
    for (ForwardPath path : {ForwardPath::GemmFloat, ForwardPath::GemmDouble}) {
      std::vector<cfloat> result = poisoned(m);
      plan.forward(path, img.data(), result.data());
      const double err = mri::gpu_test::sampled_rel_l2(std::span<const cfloat>(result), samples, fref);
      std::printf("  M=2^20+123 %-20s rel L2 %.3e (48 sampled samples)\n", mri::cuda::detail::to_string(path), err);
      CHECK(all_finite(result));
      CHECK(err <= kTolerance);
    }
  }
  std::vector<cfloat> sink(static_cast<std::size_t>(g.voxels()));
  CHECK_THROWS_AS(plan.adjoint_tuned_variant(mri::cuda::detail::tuned_variant_count(), c.data(), sink.data()),
                  mri::InvalidArgument);
}

TEST_CASE("CUDA plan rejects bad input like the CPU operators", "[gpu][fhd][small][bad-input]") {
  const Grid g(16, 16);
  CHECK_THROWS_AS(FhdPlan(Trajectory(2, {}), g, g), mri::InvalidArgument);
  CHECK_THROWS_AS(FhdPlan(Trajectory(2, {{9.f, 0.f, 0.f}}), g, g), mri::InvalidArgument); // k outside [-8, 8)
  CHECK_THROWS_AS(FhdPlan(Trajectory(3, {{0.f, 0.f, 0.f}}), g, g), mri::InvalidArgument); // dims differ
  CHECK_THROWS_AS(FhdPlan(Trajectory(2, {{0.f, 0.f, 0.f}}), Grid(8, 8, 8), g), mri::InvalidArgument);
  // Float64 runs only SeparableGemm: a float32 policy is refused, naming the one that runs.
  CHECK(mri::cuda::detail::resolve_policy(KernelPolicy::Auto, mri::Precision::Float64) == KernelPolicy::SeparableGemm);
  try {
    mri::cuda::detail::resolve_policy(KernelPolicy::Tuned, mri::Precision::Float64);
    FAIL("float64 with the tuned policy should throw Unsupported");
  } catch (const mri::Unsupported &e) {
    CHECK(std::string(e.what()).find("separable-gemm") != std::string::npos);
  }
  // A single sample, a chunk of one: every path still writes every output.
  FhdPlan plan(Trajectory(2, {{1.f, 2.f, 0.f}}), g, g);
  std::vector<cfloat> c(1, cfloat(1, 0)), out = poisoned(static_cast<std::size_t>(g.voxels()));
  plan.adjoint(KernelPolicy::SeparableGemm, c.data(), out.data());
  // Voxel 0 sits at (-8, -8): phase 2 pi (1 * -8 + 2 * -8) / 16 = -3 pi.
  CHECK(std::abs(out[0] - cfloat(-1, 0)) < 1e-5f);
}
