// FhdPlan's chunked layout: with a memory budget forced small, the plan keeps kChunkQuantum-
// sized chunks of the samples on the device and streams the host entry points (adjoint,
// adjoint_f64, forward, forward_f64) through them. Every policy and forward path must give the
// resident plan's result to float rounding and the float64 reference to the usual 1e-5; a
// budget that holds nothing throws Unsupported naming the bytes; the device-pointer entry
// points refuse a chunked plan. Outputs are poisoned with NaN before every run.
// Tags: [gpu] all; [small] the quick subset the sanitizers run.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "catch.hpp"
#include "exact/fhd_backend.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/image.hpp"
#include "gpu/sampled_reference.hpp"
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

constexpr ForwardPath kPaths[] = {ForwardPath::Reference, ForwardPath::GemmFloat, ForwardPath::GemmDouble};

// Against the float64 reference: the bar every policy meets.
constexpr double kTolerance = 1e-5;
// Chunked against resident: the same per-sample arithmetic, summed in a different grouping (chunks
// are multiples of Register's 1024-sample blocks and the constant policies' 1536-sample launches;
// Tuned's blocks are 64 samples at these grid sizes; partial images are added in double).
// ScatterAtomic and Gather keep one float running sum over all M samples (the form of the F^H D
// stages, Stone et al. 2008; ScatterAtomic's order is not even deterministic): their resident
// result carries ~1.7e-8 sqrt(M) of rounding (Gather at M = 2^20: 1.8e-5 .. 2.3e-5), 2.4e-6 at
// M = 20011, so they are held to max(1e-5, 1e-7 sqrt(M)).
double chunk_tolerance(KernelPolicy p, std::size_t m) {
  if (p == KernelPolicy::ScatterAtomic || p == KernelPolicy::Gather)
    return std::max(1e-5, 1e-7 * std::sqrt(static_cast<double>(m)));
  return 1e-6;
}




template <class C> std::vector<C> poisoned(std::size_t n) {
  using Real = typename C::value_type;
  return std::vector<C>(n, C(std::numeric_limits<Real>::quiet_NaN(), std::numeric_limits<Real>::quiet_NaN()));
}

std::string describe(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

struct Case {
  const char *name;
  Grid out, period;
  std::size_t m;
  std::size_t chunk; // forced chunk size (a multiple of FhdPlan::kChunkQuantum)
};

// A plan with chunks of exactly cs.chunk samples (the budget the layout rule needs for them).
FhdPlan chunked_plan(const Trajectory &t, const Case &cs) {
  FhdPlan::Options options;
  options.memory_budget_bytes = FhdPlan::chunked_bytes(cs.out, cs.chunk);
  FhdPlan plan(t, cs.out, cs.period, options);
  REQUIRE(plan.chunked());
  REQUIRE(plan.chunk_samples() == cs.chunk);
  REQUIRE(plan.chunks() == (cs.m + cs.chunk - 1) / cs.chunk);
  return plan;
}

void check_streaming(const Case &cs, bool with_forward) {
  const std::uint64_t seed = fresh_seed();
  INFO("case " << cs.name << ": out " << describe(cs.out) << ", period " << describe(cs.period) << ", M = " << cs.m
               << ", chunk " << cs.chunk << ", seed " << seed);
  const Trajectory t = random_trajectory(cs.period, cs.m, seed);
  const std::size_t voxels = static_cast<std::size_t>(cs.out.voxels());

  FhdPlan whole(t, cs.out, cs.period); // default budget: everything fits
  REQUIRE_FALSE(whole.chunked());
  REQUIRE(whole.chunks() == 1);
  FhdPlan part = chunked_plan(t, cs);
  REQUIRE(part.chunks() >= 5);
  std::printf("  %-9s M %zu in %zu chunks of %zu (budget %zu bytes)\n", cs.name, cs.m, part.chunks(),
              part.chunk_samples(), part.memory_budget_bytes());

  // Two calls with fresh coefficients: the slots and the accumulator are reused.
  for (int call = 0; call < 2; ++call) {
    const std::vector<cfloat> c = random_values(cs.m, seed + 1 + call);
    std::vector<cfloat> ref(voxels);
    mri::detail::adjoint_sum_f64(t, c, cs.out, cs.period, ref.data());
    for (KernelPolicy p : kAllPolicies) {
      INFO("call " << call << ", policy " << mri::to_string(p));
      std::vector<cfloat> a = poisoned<cfloat>(voxels), b = poisoned<cfloat>(voxels);
      whole.adjoint(p, c.data(), a.data());
      part.adjoint(p, c.data(), b.data());
      const double vs_whole = rel_l2(b, a), vs_ref = rel_l2(b, ref);
      std::printf("  %-9s call %d %-16s chunked vs resident %.3e, vs float64 %.3e\n", cs.name, call, mri::to_string(p),
                  vs_whole, vs_ref);
      CHECK(vs_whole <= chunk_tolerance(p, cs.m));
      CHECK(vs_ref <= kTolerance);
    }
  }

  // Float64 end to end: both sum in double (the chunked plan also across its chunks).
  {
    const std::vector<cdouble> c = random_values<double>(cs.m, seed + 5);
    std::vector<cdouble> a = poisoned<cdouble>(voxels), b = poisoned<cdouble>(voxels);
    whole.adjoint_f64(c.data(), a.data());
    part.adjoint_f64(c.data(), b.data());
    const std::vector<std::int64_t> at = mri::gpu_test::random_indices(cs.out.voxels(), 24, seed + 6);
    const std::vector<cdouble> ref = mri::gpu_test::adjoint_at(t, std::span<const cdouble>(c), cs.out, cs.period, at);
    const double vs_whole = rel_l2(b, a);
    const double vs_ref = mri::gpu_test::sampled_rel_l2(std::span<const cdouble>(b), at, ref);
    std::printf("  %-9s adjoint_f64 (%zu GEMMs) chunked vs resident %.3e, vs long double %.3e\n", cs.name,
                part.separable_shape().chunks, vs_whole, vs_ref);
    CHECK(vs_whole <= 1e-12);
    CHECK(vs_ref <= 1e-10);
  }

  if (!with_forward) return;
  // Forward: out == period here (forward_sum_f64's grid).
  const mri::Image img(cs.out, random_values(voxels, seed + 7));
  std::vector<cfloat> fref(cs.m);
  mri::detail::forward_sum_f64(t, img, fref.data());
  for (ForwardPath path : kPaths) {
    INFO("forward path " << mri::cuda::detail::to_string(path));
    std::vector<cfloat> a = poisoned<cfloat>(cs.m), b = poisoned<cfloat>(cs.m);
    whole.forward(path, img.data(), a.data());
    part.forward(path, img.data(), b.data());
    const double vs_whole = rel_l2(b, a), vs_ref = rel_l2(b, fref);
    std::printf("  %-9s %-20s chunked vs resident %.3e, vs float64 %.3e\n", cs.name,
                mri::cuda::detail::to_string(path), vs_whole, vs_ref);
    if (path == ForwardPath::Reference) CHECK(b == a); // thread per sample: the same bits
    CHECK(vs_whole <= 1e-6);
    CHECK(vs_ref <= kTolerance);
  }
  {
    const std::vector<cdouble> img64 = random_values<double>(voxels, seed + 8);
    std::vector<cdouble> a = poisoned<cdouble>(cs.m), b = poisoned<cdouble>(cs.m);
    whole.forward_f64(img64.data(), a.data());
    part.forward_f64(img64.data(), b.data());
    const std::vector<std::int64_t> at = mri::gpu_test::random_indices(static_cast<std::int64_t>(cs.m), 24, seed + 9);
    const std::vector<cdouble> ref = mri::gpu_test::forward_at(t, std::span<const cdouble>(img64), cs.out, at);
    const double vs_whole = rel_l2(b, a);
    const double vs_ref = mri::gpu_test::sampled_rel_l2(std::span<const cdouble>(b), at, ref);
    std::printf("  %-9s forward_f64 chunked vs resident %.3e, vs long double %.3e\n", cs.name, vs_whole, vs_ref);
    CHECK(vs_whole <= 1e-12);
    CHECK(vs_ref <= 1e-10);
  }
}

} // namespace

TEST_CASE("CUDA FhdPlan streams chunks: 2D, every policy and forward path match the resident plan",
          "[gpu][fhd][streaming][small]") {
  // 20011 = 6 x 3072 + 1579: 7 chunks, the last one partial.
  check_streaming({"2d", Grid(23, 17), Grid(23, 17), 20011, FhdPlan::kChunkQuantum}, true);
}

TEST_CASE("CUDA FhdPlan streams chunks: 3D and Q grids", "[gpu][fhd][streaming]") {
  check_streaming({"3d", Grid(21, 19, 9), Grid(21, 19, 9), 20011, FhdPlan::kChunkQuantum}, true);
  const Grid p(13, 11, 9);
  check_streaming({"q-3d", p.doubled(), p, 20011, FhdPlan::kChunkQuantum}, false);
  // Larger chunks: 100003 = 4 x 24576 + 1699 (5 chunks).
  check_streaming({"3d-big", Grid(17, 15, 13), Grid(17, 15, 13), 100003, 8 * FhdPlan::kChunkQuantum}, true);
}

TEST_CASE("CUDA FhdPlan streaming: SeparableGemm's own chunks inside the plan's", "[gpu][fhd][streaming][small]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Case cs{"3d", Grid(16, 12, 10), Grid(16, 12, 10), 15013, FhdPlan::kChunkQuantum};
  const Trajectory t = random_trajectory(cs.period, cs.m, seed);
  FhdPlan whole(t, cs.out, cs.period);
  FhdPlan part = chunked_plan(t, cs);
  const std::vector<cfloat> c = random_values(cs.m, seed + 1);
  const std::vector<cfloat> img = random_values(static_cast<std::size_t>(cs.out.voxels()), seed + 2);
  for (std::size_t max_chunk : {std::size_t{0}, std::size_t{500}, std::size_t{5000}}) {
    INFO("SeparableGemm max_chunk_samples " << max_chunk);
    mri::cuda::detail::SeparableGemmConfig cfg;
    cfg.max_chunk_samples = max_chunk;
    whole.set_separable_config(cfg);
    part.set_separable_config(cfg);
    const auto shape = part.separable_shape();
    std::vector<cfloat> a = poisoned<cfloat>(static_cast<std::size_t>(cs.out.voxels())), b = a;
    whole.adjoint(KernelPolicy::SeparableGemm, c.data(), a.data());
    part.adjoint(KernelPolicy::SeparableGemm, c.data(), b.data());
    const double err = rel_l2(b, a);
    std::vector<cfloat> fa = poisoned<cfloat>(cs.m), fb = fa;
    whole.forward(ForwardPath::GemmFloat, img.data(), fa.data());
    part.forward(ForwardPath::GemmFloat, img.data(), fb.data());
    const double ferr = rel_l2(fb, fa);
    std::printf("  gemm chunk %5zu x %3zu GEMMs in %zu plan chunks: adjoint %.3e, forward %.3e vs resident\n",
                shape.chunk_samples, shape.chunks, part.chunks(), err, ferr);
    CHECK(shape.chunk_samples <= part.chunk_samples());
    CHECK(err <= 1e-6);
    CHECK(ferr <= 1e-6);
  }
}

TEST_CASE("CUDA FhdPlan layout rule: resident when it fits, Unsupported when nothing fits",
          "[gpu][fhd][streaming][small][bad-input]") {
  const Grid g(24, 20);
  const std::size_t m = 10007;
  const Trajectory t = random_trajectory(g, m, fresh_seed());

  // The rule's boundary: exactly the resident bytes keep today's layout, one byte less streams.
  {
    FhdPlan::Options o;
    o.memory_budget_bytes = FhdPlan::resident_bytes(g, m);
    FhdPlan fits(t, g, g, o);
    CHECK_FALSE(fits.chunked());
    CHECK(fits.chunk_samples() == m);
    CHECK(fits.device_samples() != nullptr);
    o.memory_budget_bytes -= 1;
    FhdPlan streams(t, g, g, o);
    CHECK(streams.chunked());
    CHECK(streams.chunk_samples() % FhdPlan::kChunkQuantum == 0);
    CHECK(streams.chunk_samples() < m);
  }

  // Too small for even one chunk: Unsupported naming the bytes needed and the free memory.
  const std::size_t needed = FhdPlan::chunked_bytes(g, FhdPlan::kChunkQuantum);
  for (std::size_t budget : {std::size_t{1000}, needed - 1}) {
    INFO("budget " << budget);
    FhdPlan::Options o;
    o.memory_budget_bytes = budget;
    try {
      FhdPlan plan(t, g, g, o);
      FAIL("a budget of " << budget << " bytes should throw Unsupported");
    } catch (const mri::Unsupported &e) {
      const std::string what = e.what();
      std::printf("  budget %zu: %s\n", budget, what.c_str());
      CHECK(what.find(std::to_string(needed)) != std::string::npos);
      CHECK(what.find(std::to_string(budget)) != std::string::npos);
      CHECK(what.find("free") != std::string::npos);
    }
  }
  // M no larger than a chunk: the resident plan is the smallest; its bytes are named.
  {
    const Trajectory few = random_trajectory(g, 100, fresh_seed());
    FhdPlan::Options o;
    o.memory_budget_bytes = FhdPlan::resident_bytes(g, 100) - 1;
    try {
      FhdPlan plan(few, g, g, o);
      FAIL("should throw Unsupported");
    } catch (const mri::Unsupported &e) {
      CHECK(std::string(e.what()).find(std::to_string(FhdPlan::resident_bytes(g, 100))) != std::string::npos);
    }
  }

  // A chunked plan: the device-pointer entry points and the M-sample buffer are refused; the
  // image buffer and the host entry points work.
  FhdPlan::Options o;
  o.memory_budget_bytes = needed;
  FhdPlan plan(t, g, g, o);
  REQUIRE(plan.chunked());
  REQUIRE(plan.chunks() == (m + FhdPlan::kChunkQuantum - 1) / FhdPlan::kChunkQuantum);
  const std::vector<cfloat> c = random_values(m, 7);
  std::vector<cfloat> out = poisoned<cfloat>(static_cast<std::size_t>(g.voxels()));
  cfloat *image = plan.device_image();
  CHECK(image != nullptr);
  CHECK_THROWS_AS(plan.device_samples(), mri::Unsupported);
  CHECK_THROWS_AS(plan.upload_samples(c.data()), mri::Unsupported);
  CHECK_THROWS_AS(plan.download_samples(out.data()), mri::Unsupported);
  CHECK_THROWS_AS(plan.adjoint_device(KernelPolicy::Tuned, image, image), mri::Unsupported);
  CHECK_THROWS_AS(plan.forward_device(ForwardPath::GemmFloat, image, image), mri::Unsupported);
  CHECK_THROWS_AS(plan.adjoint_f64_device(nullptr, nullptr), mri::Unsupported);
  CHECK_THROWS_AS(plan.forward_f64_device(nullptr, nullptr), mri::Unsupported);
  CHECK_THROWS_AS(plan.time_adjoint_ms(KernelPolicy::Tuned), mri::Unsupported);
  CHECK_THROWS_AS(plan.time_forward_ms(), mri::Unsupported);
  CHECK_THROWS_AS(plan.adjoint_tuned_variant(0, c.data(), out.data()), mri::Unsupported);
  try {
    plan.adjoint_device(KernelPolicy::Tuned, image, image);
  } catch (const mri::Unsupported &e) {
    CHECK(std::string(e.what()).find("adjoint_device") != std::string::npos);
  }
  plan.adjoint(KernelPolicy::Tuned, c.data(), out.data());
  std::vector<cfloat> ref(static_cast<std::size_t>(g.voxels()));
  mri::detail::adjoint_sum_f64(t, c, g, g, ref.data());
  CHECK(rel_l2(out, ref) <= kTolerance);
}
