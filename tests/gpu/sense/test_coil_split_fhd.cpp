// SENSE's F^H D by the NUFFT split by coils over several devices (cuda/sense/coil_split_fhd.hpp), on
// one GPU listed several times (the peer-copy exchange; NCCL takes one rank per GPU): against one
// device's F^H D, against the float64 sums, in reconstruct with method = Nufft, and bad input.
//
// The tolerance against one device. Each coil's adjoint NUFFT is the same on every lane (the same
// plan or an identical one, Gridding::Gather: fixed order, bitwise), and so is each coil's map
// product t_c = conj(S_c) .* F^H y_c; only the float sum over the coils is regrouped (each entry's
// partial sum, then the partials added in entry order). A float sum of C terms, in any order, is
// within (C - 1) u sum_c |t_c| of the exact sum (u = 2^-24), and the product's own two roundings
// add 2 u |t_c|: so one device's and the split's images are each within B = 2 (C + 1) u ||sum_c
// |t_c| ||_2 of the exact (double) sum of the same t_c (modulus: sqrt 2 < 2), and within 2 B of
// each other. The tests check exactly that, against a double sum of the plan's own per-coil images
// (B / ||rhs|| is about 5e-7 .. 4e-6 here; the measured differences are printed, ~1e-7).
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_support.hpp"
#include "sense/coil_split.hpp"
#include "sense/coil_split_fhd.hpp"
#include "recon/device_image.hpp"
#include "nufft/gridding_cuda.hpp"
#include "mri/coils.hpp"
#include "mri/reconstruct.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/direct_sums.hpp"
#include "gpu/sampled_reference.hpp"
#include "gpu/sense_reference.hpp"
#include "sense/sense_cuda.hpp"
#include "sense/sense_toeplitz.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

using namespace mri;
using cuda::DeviceImage;
using cuda::detail::CoilLanes;
using cuda::detail::CoilSplitFhd;
using cuda::detail::ExchangeTransport;
using cdouble = std::complex<double>;

namespace {

constexpr double kUnit = 0x1p-24; // float's unit roundoff

std::string extents(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

// A SENSE F^H D problem: coil-major samples (the weighted samples reconstruct grids), maps.
struct FhdProblem {
  Grid grid;
  Trajectory t;
  int coils;
  std::vector<cfloat> y; // coils x M
  CoilSensitivities maps;
};

FhdProblem fhd_problem(const Grid &grid, int coils, std::size_t m, std::uint64_t seed) {
  Trajectory t = gpu_test::random_trajectory(grid, m, seed);
  std::vector<cfloat> y = test::random_complex(static_cast<std::size_t>(coils) * m, seed + 1);
  CoilSensitivities maps(grid, coils, test::random_complex(static_cast<std::size_t>(coils * grid.voxels()), seed + 2));
  return {grid, std::move(t), coils, std::move(y), std::move(maps)};
}

NufftOptions nufft_options(const Grid &grid, double tolerance, Gridding g) {
  return mri::detail::validated_nufft_options(gpu_test::cuda_nufft(tolerance, g), grid.dims());
}

// What reconstruct holds on the first device before F^H D: the maps, the trajectory's points
// and the adjoint NUFFT plan made from them.
struct FirstDevice {
  cuda::detail::DeviceCoils coils;
  cuda::detail::DevicePoints points;
  std::shared_ptr<cuda::detail::NufftDevicePlan> plan;
  FirstDevice(const FhdProblem &p, const NufftOptions &o, cuda::StreamHandle stream)
      : coils(p.maps, Regularizer::None, 0, stream), points(p.t),
        plan(cuda::detail::make_device_nufft_plan(points.data(), points.size(), p.grid, o, {1.0f, 1.0f, 1.0f})) {}
};

struct SplitRun {
  Image rhs;
  std::vector<double> seconds;
  std::string note;
};

// The F^H D split over `devices` (one entry: one device's order, as reconstruct's rhs_by_nufft:
// the same combine_coil_adjoints over the same plan, blocks of kCoilBlock coils).
SplitRun split_fhd(const FhdProblem &p, const FirstDevice &first, const NufftOptions &o, const std::vector<int> &devices,
                   Gridding g, int applications = 1) {
  const cuda::StreamHandle stream = cuda::default_stream();
  // One entry: no exchange to make (peer copies of one side do nothing; NCCL would make a
  // communicator of one rank).
  const ExchangeTransport transport = devices.size() == 1 ? ExchangeTransport::Peer : ExchangeTransport::Auto;
  const auto lanes = std::make_shared<const CoilLanes>(p.coils, devices, stream, p.grid, transport);
  const CoilSplitFhd split(lanes, first.coils, first.plan, first.points, p.grid, o);
  SplitRun r{Image(p.grid), std::vector<double>(devices.size(), 0.0), split.describe()};
  for (int i = 0; i < applications; ++i) {
    DeviceImage rhs(p.grid, stream);
    split.apply(p.y.data(), g, rhs, r.seconds);
    const Image got = rhs.to_host();
    if (i > 0) CHECK(std::memcmp(got.data(), r.rhs.data(), got.size() * sizeof(cfloat)) == 0); // the same bits
    r.rhs = got;
  }
  return r;
}

// The exact (double) sum of the plan's own per-coil images with the maps, and B (header comment).
struct CoilSumReference {
  std::vector<cdouble> sum;
  double bound = 0; // B, absolute (L2)
};

CoilSumReference coil_sum_reference(const FhdProblem &p, cuda::detail::NufftDevicePlan &plan, Gridding g) {
  const std::size_t n = static_cast<std::size_t>(p.grid.voxels()), m = p.t.size();
  std::vector<cdouble> sum(n);
  std::vector<double> magnitude(n);
  Image image(p.grid);
  for (int c = 0; c < p.coils; ++c) {
    plan.adjoint(p.y.data() + c * m, image.data(), g);
    const auto s = p.maps.map(c);
    for (std::size_t v = 0; v < n; ++v) {
      sum[v] += std::conj(cdouble(s[v])) * cdouble(image[v]);
      magnitude[v] += std::abs(cdouble(s[v])) * std::abs(cdouble(image[v]));
    }
  }
  double l2 = 0;
  for (const double a : magnitude) l2 += a * a;
  return {std::move(sum), 2.0 * (p.coils + 1) * kUnit * std::sqrt(l2)};
}

// The F^H D in float64 (the exact adjoint sums, no NUFFT): sum_c conj(S_c) .* F^H y_c.
std::vector<cdouble> exact_fhd_f64(const FhdProblem &p) {
  const std::size_t n = static_cast<std::size_t>(p.grid.voxels()), m = p.t.size();
  std::vector<cdouble> out(n);
  std::vector<cfloat> image(n);
  for (int c = 0; c < p.coils; ++c) {
    mri::detail::adjoint_sum_f64(p.t, std::span<const cfloat>(p.y).subspan(c * m, m), p.grid, p.grid, image.data());
    const auto s = p.maps.map(c);
    for (std::size_t v = 0; v < n; ++v) out[v] += std::conj(cdouble(s[v])) * cdouble(image[v]);
  }
  return out;
}

double l2_distance(const Image &a, const std::vector<cdouble> &b) {
  double d = 0;
  for (std::size_t v = 0; v < b.size(); ++v) d += std::norm(cdouble(a[v]) - b[v]);
  return std::sqrt(d);
}

double l2_norm(const std::vector<cdouble> &b) {
  double d = 0;
  for (const cdouble &x : b) d += std::norm(x);
  return std::sqrt(d);
}

} // namespace

TEST_CASE("coil split F^H D: the split NUFFT F^H D equals one device's to the rounding of the regrouped coil sum",
          "[gpu][coil-split][fhd-split][small]") {
  struct Case {
    Grid grid;
    int coils;
    std::size_t m;
    std::vector<int> devices;
    bool f64; // the float64 sum is affordable
  };
  // Coil counts not divisible by the entries; 9 coils on 2 entries (5 + 4) and 10 on 3 (4, 3, 3)
  // give lanes of more than one gridding pass (NufftDevicePlan::kCoilBlock = 4).
  const Case cases[] = {
      {Grid(32, 28), 5, 1500, {0, 0}, true},            // 3 + 2
      {Grid(32, 28), 5, 1500, {0, 0, 0}, true},         // 2 + 2 + 1
      {Grid(48, 40), 9, 4000, {0, 0}, true},            // 5 + 4
      {Grid(12, 10, 8), 7, 2000, {0, 0}, true},         // 4 + 3
      {Grid(12, 10, 8), 7, 2000, {0, 0, 0}, true},      // 3 + 2 + 2
      {Grid(48, 40, 32), 10, 30000, {0, 0, 0}, false}, // 4 + 3 + 3
  };
  const double tolerance = 1e-4; // the NUFFT's, for the float64 comparison
  for (const Case &c : cases) {
    const std::uint64_t seed = gpu_test::fresh_seed();
    INFO(extents(c.grid) << ", " << c.coils << " coils on " << c.devices.size() << " entries, seed " << seed
                         << " (MRI_GPU_TEST_SEED replays it)");
    const FhdProblem p = fhd_problem(c.grid, c.coils, c.m, seed);
    const NufftOptions o = nufft_options(c.grid, tolerance, Gridding::Gather);
    const FirstDevice first(p, o, cuda::default_stream());
    const SplitRun one = split_fhd(p, first, o, {0}, Gridding::Gather);
    const SplitRun split = split_fhd(p, first, o, c.devices, Gridding::Gather, 2); // applied twice: the same bits
    INFO(split.note);
    CHECK(split.note.find("exchange: peer copies (one device: no collective)") != std::string::npos);

    const CoilSumReference ref = coil_sum_reference(p, *first.plan, Gridding::Gather);
    const double norm = l2_norm(ref.sum);
    const double one_err = l2_distance(one.rhs, ref.sum), split_err = l2_distance(split.rhs, ref.sum);
    const double vs_one = test::relative_error(split.rhs, one.rhs);
    std::printf("  coil split F^H D %s, %d coils x%zu: vs one device %.2e, vs the double coil sum %.2e "
                "(one device %.2e; bound %.2e)\n",
                extents(c.grid).c_str(), c.coils, c.devices.size(), vs_one, split_err / norm, one_err / norm,
                ref.bound / norm);
    CHECK(one_err <= ref.bound);
    CHECK(split_err <= ref.bound);
    CHECK(vs_one * norm <= 2 * ref.bound);
    if (c.f64) { // the NUFFT at its tolerance against the exact sums (one device's error, regrouped)
      const std::vector<cdouble> exact = exact_fhd_f64(p);
      const double e = test::relative_error(std::span<const cfloat>(split.rhs.values()), exact);
      std::printf("    vs the float64 F^H D: %.2e (tolerance %.0e)\n", e, tolerance);
      CHECK(e <= 2 * tolerance);
    }
    // Every entry had coils: each lane's seconds counted, twice applied.
    for (const double s : split.seconds) CHECK(s > 0);
  }
}

TEST_CASE("coil split F^H D: scatter gridding (atomics) agrees with one device within its own run-to-run spread",
          "[gpu][coil-split][fhd-split][small]") {
  for (const Grid grid : {Grid(40, 36), Grid(14, 12, 10)}) {
    const std::uint64_t seed = gpu_test::fresh_seed();
    INFO(extents(grid) << ", seed " << seed);
    const FhdProblem p = fhd_problem(grid, 5, 3000, seed);
    const NufftOptions o = nufft_options(grid, 1e-3, Gridding::Scatter);
    const FirstDevice first(p, o, cuda::default_stream());
    const SplitRun one = split_fhd(p, first, o, {0}, Gridding::Scatter);
    const SplitRun split = split_fhd(p, first, o, {0, 0, 0}, Gridding::Scatter);
    // Atomic adds: each coil's image varies in the last bits run to run (2e-6 relative at most,
    // tests/gpu/nufft/test_gridding.cpp); the regrouping adds ~1e-7.
    const double err = test::relative_error(split.rhs, one.rhs);
    std::printf("  coil split F^H D scatter %s: vs one device %.2e\n", extents(grid).c_str(), err);
    CHECK(err <= 1e-5);
  }
}

TEST_CASE("coil split F^H D: more entries than coils leave the last ones out", "[gpu][coil-split][fhd-split][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  const FhdProblem p = fhd_problem(Grid(24, 20), 2, 800, seed);
  const NufftOptions o = nufft_options(p.grid, 1e-3, Gridding::Gather);
  const FirstDevice first(p, o, cuda::default_stream());
  const SplitRun one = split_fhd(p, first, o, {0}, Gridding::Gather);
  const SplitRun split = split_fhd(p, first, o, {0, 0, 0, 0}, Gridding::Gather);
  INFO(split.note);
  CHECK(split.note.rfind("coils 0 on device 0, 1 on device 0, none on the other entries", 0) == 0);
  const CoilSumReference ref = coil_sum_reference(p, *first.plan, Gridding::Gather);
  CHECK(test::relative_error(split.rhs, one.rhs) * l2_norm(ref.sum) <= 2 * ref.bound);
  REQUIRE(split.seconds.size() == 4);
  CHECK(split.seconds[0] > 0);
  CHECK(split.seconds[1] > 0);
  CHECK(split.seconds[2] == 0);
  CHECK(split.seconds[3] == 0);
}

TEST_CASE("coil split F^H D: bad arguments are refused", "[gpu][coil-split][fhd-split][small][bad-input]") {
  const FhdProblem p = fhd_problem(Grid(16, 12), 3, 300, 21);
  const NufftOptions o = nufft_options(p.grid, 1e-3, Gridding::Gather);
  const cuda::StreamHandle stream = cuda::default_stream();
  const FirstDevice first(p, o, stream);
  CHECK_THROWS_WITH(CoilLanes(3, {}, stream, p.grid), test::contains("devices.size() = 0: must be at least 1"));
  CHECK_THROWS_WITH(CoilLanes(0, {0, 0}, stream, p.grid), test::contains("coils = 0: must be at least 1"));
  CHECK_THROWS_WITH(CoilLanes(3, {0, 0}, stream, p.grid, ExchangeTransport::Nccl),
                    test::contains("the coil exchange by NCCL: device 0 listed twice"));

  const auto lanes = std::make_shared<const CoilLanes>(3, std::vector<int>{0, 0}, stream, p.grid);
  CHECK_THROWS_WITH(CoilSplitFhd(lanes, first.coils, nullptr, first.points, p.grid, o),
                    test::contains("must be the first device's NUFFT plan"));
  const auto four = std::make_shared<const CoilLanes>(4, std::vector<int>{0, 0}, stream, p.grid);
  CHECK_THROWS_WITH(CoilSplitFhd(four, first.coils, first.plan, first.points, p.grid, o),
                    test::contains("lanes->coils() = 4: must be coils.count(), 3"));
  const Grid other(16, 10);
  const auto other_lanes = std::make_shared<const CoilLanes>(3, std::vector<int>{0, 0}, stream, other);
  CHECK_THROWS_AS(CoilSplitFhd(other_lanes, first.coils, first.plan, first.points, p.grid, o), InvalidArgument);
  const cuda::detail::DeviceCoils other_maps(CoilSensitivities(other, 3, test::random_complex(3 * 160, 22)),
                                             Regularizer::None, 0, stream);
  CHECK_THROWS_AS(CoilSplitFhd(lanes, other_maps, first.plan, first.points, p.grid, o), InvalidArgument);

  const CoilSplitFhd split(lanes, first.coils, first.plan, first.points, p.grid, o);
  std::vector<double> one_second(1), two_seconds(2);
  DeviceImage rhs(p.grid, stream);
  CHECK_THROWS_WITH(split.apply(p.y.data(), Gridding::Gather, rhs, one_second),
                    test::contains("seconds.size() = 1: must be one per entry of the devices, 2"));
  DeviceImage wrong_grid(other, stream);
  CHECK_THROWS_WITH(split.apply(p.y.data(), Gridding::Gather, wrong_grid, two_seconds),
                    test::contains("must be of the lanes' grid, on lane 0's stream"));
  DeviceImage wrong_stream(p.grid, lanes->lanes().back().stream); // lane 1's
  CHECK_THROWS_WITH(split.apply(p.y.data(), Gridding::Gather, wrong_stream, two_seconds),
                    test::contains("must be of the lanes' grid, on lane 0's stream"));

  // The CG's split on lanes made for another stream than its Toeplitz operator's.
  std::vector<float> w(p.t.size(), 1.0f);
  const cuda::QOperator toeplitz(p.t, w, p.grid);
  const cuda::detail::DeviceCoils coils(p.maps, Regularizer::None, 0, toeplitz.stream());
  const cuda::StreamHandle elsewhere = lanes->lanes().back().stream; // lane 1's: not the CG's
  REQUIRE(elsewhere != toeplitz.stream());
  const auto other_stream = std::make_shared<const CoilLanes>(3, std::vector<int>{0, 0}, elsewhere, p.grid);
  CHECK_THROWS_WITH(cuda::detail::CoilSplitNormal(other_stream, coils, toeplitz),
                    test::contains("must be the Toeplitz operator's (the CG's)"));
  const auto one_entry = std::make_shared<const CoilLanes>(3, std::vector<int>{0}, toeplitz.stream(), p.grid);
  CHECK_THROWS_WITH(cuda::detail::CoilSplitNormal(one_entry, coils, toeplitz),
                    test::contains("devices.size() = 1: must be at least 2"));

  // reconstruct: an ordinal this process does not see, with the NUFFT and maps.
  const KSpaceData data(p.t, p.y, {}, p.coils);
  ReconOptions r;
  r.backend = Backend::Cuda;
  r.method = Method::Nufft;
  r.coils.sensitivities = std::make_shared<const CoilSensitivities>(p.maps);
  r.gpu.devices = {0, 4096};
  CHECK_THROWS_WITH(reconstruct(data, p.grid, r), test::contains("options.gpu.devices[1] = 4096: is not a CUDA device"));
}

TEST_CASE("coil split F^H D: reconstruct with method = Nufft on {0, 0} and {0, 0, 0} equals {0}, 2D and 3D",
          "[gpu][coil-split][fhd-split]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  for (const Grid grid : {Grid(40, 36), Grid(16, 16, 12)}) {
    auto [data, o] = gpu_test::sense_recon(grid, 5, seed);
    o.method = Method::Nufft;
    for (const Normal normal : {Normal::Toeplitz, Normal::Direct}) {
      o.solver.normal = normal;
      o.gpu.devices = {0};
      const ReconResult one = reconstruct(data, grid, o);
      CHECK(one.report.device_note.empty());
      REQUIRE(one.report.device_seconds.size() == 1);
      CHECK(one.report.device_seconds.front().fhd_seconds > 0);
      for (const std::size_t entries : {2u, 3u}) {
        o.gpu.devices.assign(entries, 0);
        const ReconResult many = reconstruct(data, grid, o);
        INFO(extents(grid) << ", normal " << to_string(normal) << ", " << entries
                           << " entries, note: " << many.report.device_note);
        const std::string fhd = entries == 2 ? "F^H D: the NUFFT, coils 0-2 on device 0, 3-4 on device 0 (exchange: "
                                             : "F^H D: the NUFFT, coils 0-1 on device 0, 2-3 on device 0, 4 on device 0 "
                                               "(exchange: ";
        CHECK(many.report.device_note.rfind(fhd, 0) == 0); // the first clause: F^H D
        CHECK(many.report.device_note.find("F^H D: the NUFFT, not split") == std::string::npos);
        if (normal == Normal::Toeplitz) { // Q unsplit; the CG's split on the same lanes
          CHECK(many.report.device_note.find("Q: the NUFFT, not split: on device 0") != std::string::npos);
          CHECK(many.report.device_note.find("CG: coils 0-") != std::string::npos);
        } else {
          CHECK(many.report.device_note.find("normal = direct") != std::string::npos);
        }
        REQUIRE(many.report.device_seconds.size() == entries);
        for (const DevicePhaseSeconds &d : many.report.device_seconds) {
          CHECK(d.device == 0);
          CHECK(d.fhd_seconds > 0);
        }
        CHECK(many.report.fhd_seconds > 0);
        CHECK(many.report.iterations == one.report.iterations);
        // The coil sums regrouped (F^H D, and with Toeplitz the CG's normal): float rounding,
        // grown by 6 CG iterations (as the CG's split, test_coil_split.cpp).
        const double err = test::relative_error(many.image, one.image);
        std::printf("  coil split F^H D recon %s %s x%zu: rel %.2e\n", grid.dims() == 3 ? "3D" : "2D",
                    to_string(normal), entries, err);
        CHECK(err <= 1e-4);
      }
    }
  }
}
