// SENSE split by coils over several devices (cuda/sense/coil_split.hpp,
// cuda/sense/coil_exchange.hpp): the split operator against the float64 SENSE normal and against
// one device's operator, on one GPU listed several times (the peer-copy exchange; NCCL takes one
// rank per GPU), the NCCL exchange's
// plumbing on one rank, and reconstruct with the split.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_support.hpp"
#include "sense/coil_exchange.hpp"
#include "sense/coil_split.hpp"
#include "recon/device_image.hpp"
#include "mri/coils.hpp"
#include "mri/reconstruct.hpp"
#include "mri_backend/sense.hpp"
#include "gpu/sampled_reference.hpp"
#include "sense/sense_cuda.hpp"
#include "gpu/sense_reference.hpp"
#include "sense/sense_toeplitz.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

using namespace mri;
using cuda::DeviceImage;
using cuda::detail::CoilSplitNormal;
using cuda::detail::ExchangeTransport;

namespace {

struct SenseInputs {
  Grid grid;
  Trajectory t;
  std::vector<float> w;
  CoilSensitivities maps;
  Image x;
};

SenseInputs sense_inputs(const Grid &grid, int coils, std::size_t m, std::uint64_t seed) {
  Trajectory t = gpu_test::random_trajectory(grid, m, seed);
  std::vector<float> w = test::random_weights(t.size(), seed + 1);
  CoilSensitivities maps(grid, coils, test::random_complex(static_cast<std::size_t>(coils * grid.voxels()), seed + 2));
  return {grid, std::move(t), std::move(w), std::move(maps), test::random_image(grid, seed + 3)};
}

// The one-device SENSE normal (the maps around the one-coil operator), what the split replaces.
Image one_device_normal(const cuda::QOperator &toeplitz, const cuda::detail::DeviceCoils &coils,
                        const DeviceImage &x) {
  const auto one_coil = [&](const DeviceImage &in, DeviceImage &out) { toeplitz.apply(in, out); };
  DeviceImage out(x.grid());
  mri::detail::SenseNormal<DeviceImage, cuda::detail::DeviceCoils, decltype(one_coil)>(coils, one_coil, x)(x, out);
  return out.to_host();
}

Image split_normal(const CoilSplitNormal &split, const DeviceImage &x) {
  DeviceImage out(x.grid());
  split.apply(x, out);
  return out.to_host();
}

bool bitwise_equal(const Image &a, const Image &b) {
  return a.values().size() == b.values().size() &&
         std::memcmp(a.values().data(), b.values().data(), a.values().size() * sizeof(cfloat)) == 0;
}

} // namespace

TEST_CASE("coil split: coil blocks are contiguous and as even as can be", "[gpu][coil-split][small]") {
  using cuda::detail::coil_blocks;
  const auto b = coil_blocks(8, 3);
  REQUIRE(b.size() == 3);
  CHECK((b[0].first == 0 && b[0].count == 3 && b[1].first == 3 && b[1].count == 3 && b[2].first == 6 &&
         b[2].count == 2));
  const auto few = coil_blocks(2, 3);
  CHECK((few[0].count == 1 && few[1].count == 1 && few[2].count == 0 && few[2].first == 2));
}

TEST_CASE("coil split: the split normal equals the float64 SENSE normal and one device's, 2D and 3D",
          "[gpu][coil-split][small]") {
  // 2D and small 3D: the coil-batched operator per entry; 64^3 (its Toeplitz grid takes the
  // pruned transforms): the maps around the one-coil operator.
  struct Case {
    Grid grid;
    int coils;
    std::size_t m;
    std::vector<int> devices;
    bool reference; // the float64 sum is affordable
  };
  for (const Case &c : {Case{Grid(24, 20), 5, 700, {0, 0}, true}, Case{Grid(24, 20), 7, 700, {0, 0, 0}, true},
                        Case{Grid(10, 8, 6), 4, 500, {0, 0}, true}, Case{Grid(64, 64, 64), 3, 4000, {0, 0}, false}}) {
    const std::uint64_t seed = gpu_test::fresh_seed();
    INFO(c.grid.nx() << "x" << c.grid.ny() << "x" << c.grid.nz() << ", " << c.coils << " coils on "
                     << c.devices.size() << " entries, seed " << seed << " (MRI_GPU_TEST_SEED replays it)");
    const SenseInputs in = sense_inputs(c.grid, c.coils, c.m, seed);
    const double lambda = 0.7;
    const cuda::QOperator toeplitz(in.t, in.w, c.grid);
    const cuda::detail::DeviceCoils coils(in.maps, Regularizer::FiniteDifference, lambda, toeplitz.stream());
    const DeviceImage x(in.x, toeplitz.stream());
    const Image one = one_device_normal(toeplitz, coils, x);

    const CoilSplitNormal split(coils, toeplitz, c.devices);
    INFO(split.describe());
    CHECK(split.describe().find("exchange: peer copies (one device: no collective)") != std::string::npos);
    const Image got = split_normal(split, x);
    // The coils' sum regrouped by entry: float rounding of the one device's sum (~1e-7 relative).
    const double vs_one = test::relative_error(got, one);
    std::printf("  coil split %ldx%ldx%ld, %d coils x%zu: vs one device %.2e\n", static_cast<long>(c.grid.nx()),
                static_cast<long>(c.grid.ny()), static_cast<long>(c.grid.nz()), c.coils, c.devices.size(), vs_one);
    CHECK(vs_one < 1e-6);
    if (c.reference) // Q an exact float32 sum, float32 FFTs: ~1e-6 relative (test_sense_toeplitz_cuda.cpp)
      CHECK(test::relative_error(got.values(),
                                 gpu_test::sense_normal_f64(in.t, in.w, in.maps, in.x, Regularizer::FiniteDifference,
                                                            lambda)) < 1e-5);
    // Applied again: the same bits (a fixed order on the first device).
    CHECK(bitwise_equal(split_normal(split, x), got));
    const CoilSplitNormal::Times times = split.times();
    CHECK(times.applications == 2);
    REQUIRE(times.device_seconds.size() == c.devices.size());
    for (const double s : times.device_seconds) CHECK(s > 0);
    CHECK(times.exchange_seconds > 0);
  }
}

TEST_CASE("coil split: more entries than coils leave the last ones out", "[gpu][coil-split][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  const SenseInputs in = sense_inputs(Grid(20, 18), 2, 400, seed);
  const cuda::QOperator toeplitz(in.t, in.w, in.grid);
  const cuda::detail::DeviceCoils coils(in.maps, Regularizer::Tikhonov, 0.3, toeplitz.stream());
  const DeviceImage x(in.x, toeplitz.stream());
  const CoilSplitNormal split(coils, toeplitz, {0, 0, 0, 0});
  CHECK(split.describe().rfind("coils 0 on device 0, 1 on device 0, none on the other entries", 0) == 0);
  CHECK(test::relative_error(split_normal(split, x), one_device_normal(toeplitz, coils, x)) < 1e-6);
  const auto times = split.times();
  REQUIRE(times.device_seconds.size() == 4);
  CHECK(times.device_seconds[2] == 0);
  CHECK(times.device_seconds[3] == 0);
}

TEST_CASE("coil split: bad arguments and a transport that cannot run are refused",
          "[gpu][coil-split][small][bad-input]") {
  const SenseInputs in = sense_inputs(Grid(12, 12), 2, 100, 5);
  const cuda::QOperator toeplitz(in.t, in.w, in.grid);
  const cuda::detail::DeviceCoils coils(in.maps, Regularizer::None, 0, toeplitz.stream());
  CHECK_THROWS_WITH(CoilSplitNormal(coils, toeplitz, {0}), test::contains("devices.size() = 1: must be at least 2"));
  const cuda::detail::DeviceCoils other(CoilSensitivities(Grid(12, 10), 2, test::random_complex(240, 6)),
                                        Regularizer::None, 0, toeplitz.stream());
  CHECK_THROWS_AS(CoilSplitNormal(other, toeplitz, {0, 0}), InvalidArgument);
  CHECK_THROWS_WITH(CoilSplitNormal(coils, toeplitz, {0, 0}, ExchangeTransport::Nccl),
                    test::contains("the coil exchange by NCCL: device 0 listed twice"));
  CHECK_THROWS_WITH(cuda::detail::DeviceCoils(coils, 1, 2, Regularizer::None, 0, toeplitz.stream()),
                    test::contains("count = 2: from coil 1: must be at least 1 and end within the 2 coils"));
}

TEST_CASE("coil split: one device never initialises NCCL unless asked", "[gpu][coil-split][small]") {
  const Grid grid(16, 16);
  DeviceImage x(test::random_image(grid, 13));
  const std::vector<cuda::detail::ExchangeSide> one{{0, x.stream()}};
  const auto exchange = cuda::detail::make_coil_exchange(one, grid); // Auto
  CHECK(exchange->name() == "peer copies (one device: no collective)");
  const Image before = x.to_host();
  exchange->broadcast(x, {nullptr});
  DeviceImage out(test::random_image(grid, 14), x.stream());
  const Image out_before = out.to_host();
  exchange->reduce(out, {nullptr});
  CHECK(bitwise_equal(x.to_host(), before));
  CHECK(bitwise_equal(out.to_host(), out_before)); // one part: the sum is the root's own
}

// Hidden from the whole suite (ctest runs it as its own entry, gpu-nccl): NCCL's initialisation
// makes CUDA API calls that compute-sanitizer reports as errors inside NCCL (kernel images for
// other architectures), so the whole-suite memcheck runs without it.
TEST_CASE("coil split: the NCCL exchange on one rank", "[gpu][coil-split][small][.][nccl]") {
  // One GPU holds one NCCL rank: this runs the library's loading, the non-blocking communicator,
  // both collectives and their deadline waits; two ranks need two GPUs (docs/scaling.md).
  const Grid grid(16, 16);
  DeviceImage x(test::random_image(grid, 11));
  const std::vector<cuda::detail::ExchangeSide> one{{0, x.stream()}};
  std::unique_ptr<cuda::detail::CoilExchange> exchange;
  try {
    exchange = cuda::detail::make_coil_exchange(one, grid, ExchangeTransport::Nccl);
  } catch (const Unsupported &e) {
    WARN("NCCL is not usable here, not run: " << e.what());
    return;
  }
  INFO(exchange->name());
  CHECK(exchange->name().rfind("nccl 2.", 0) == 0);
  const Image before = x.to_host();
  exchange->broadcast(x, {nullptr});
  DeviceImage out(test::random_image(grid, 12), x.stream());
  const Image out_before = out.to_host();
  exchange->reduce(out, {nullptr});
  CHECK(bitwise_equal(x.to_host(), before)); // the root's broadcast leaves its image
  CHECK(bitwise_equal(out.to_host(), out_before)); // one rank: the sum is its own part
}

TEST_CASE("coil split: reconstruct on {0, 0} splits SENSE's CG by coils and reports it", "[gpu][coil-split]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  for (const Grid grid : {Grid(40, 36), Grid(16, 16, 12)}) {
    auto [data, o] = gpu_test::sense_recon(grid, 4, seed);
    for (const Method method : {Method::Exact, Method::Nufft}) {
      o.method = method;
      o.gpu.devices = {0};
      const ReconResult one = reconstruct(data, grid, o);
      o.gpu.devices = {0, 0};
      const ReconResult two = reconstruct(data, grid, o);
      INFO(to_string(method) << ", note: " << two.report.device_note);
      CHECK(two.report.device_note.find("CG: coils 0-1 on device 0, 2-3 on device 0 (exchange: peer copies") !=
            std::string::npos);
      REQUIRE(two.report.device_seconds.size() == 2);
      for (const DevicePhaseSeconds &d : two.report.device_seconds) CHECK(d.cg_seconds > 0);
      CHECK(two.report.exchange_seconds > 0);
      CHECK(one.report.exchange_seconds == 0);
      CHECK(one.report.device_seconds.front().cg_seconds == 0);
      CHECK(two.report.iterations == one.report.iterations);
      // The coil sums regrouped: float rounding, grown by 6 CG iterations.
      const double err = test::relative_error(two.image, one.image);
      std::printf("  coil split recon %s %s: rel %.2e\n", grid.dims() == 3 ? "3D" : "2D", to_string(method), err);
      CHECK(err <= 1e-4);
    }
  }
}
