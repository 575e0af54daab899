// Locally low rank on device frames (LowRankOps<DeviceImage>, cuda/sparse/llr_cuda.hpp) against
// the host's block SVD (locally_low_rank_shrink / locally_low_rank_norm, Eigen's JacobiSVD in
// double) on fresh random frames: odd extents, blocks that do not divide them (partial blocks at
// the wrapped border), 2D and 3D, 1 to 32 frames; threshold zero and beyond every singular value;
// FrameTermOps on device frames drawing the host's shifts; bad input.
//
// Tolerance, in relative Frobenius terms over all frames: both sides read the same float32 frames
// and round the result to float32 once. The device forms each block's Gram B^H B from exact
// products in double and diagonalises it in double (cusolverDnZheevjBatched), so squaring the
// condition number costs eps_64 kappa^2 ~ 1e-16 x 1e2..1e4 for these Gaussian blocks: far below
// float rounding. The shrink map B -> B V diag(max(s - t, 0)/s) V^H is continuous in B, so the
// two sides differ by the output rounding (~6e-8 per sample) times a small factor: 1e-5 leaves
// 100x margin and still separates a wrong block, shift or threshold, which moves O(1) of the
// result (checked: each case's shrink moves the frames by 5% to 95% of their norm). The
// nuclear norms are sums of double square roots of the Gram's eigenvalues: 1e-8 relative.
// Tags: [gpu][sparse][llr]; [small] the quick subset compute-sanitizer runs.
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/dynamic.hpp"
#include "mri/error.hpp"
#include "mri/frame_terms.hpp"
#include "mri/phantom.hpp"
#include "mri/sparse.hpp"
#include "mri_backend/low_rank_device_bytes.hpp"
#include "recon/device_image.hpp"
#include "sparse/llr_cuda.hpp"
#include "sparse/sparse_ops_cuda.hpp"
#include "test_support.hpp"

using namespace mri;
using cuda::DeviceImage;

namespace {

using gpu_test::fresh_seed; // MRI_GPU_TEST_SEED replays a failure (the seed is in the INFO output)

constexpr double kShrinkTolerance = 1e-5; // see the file comment
constexpr double kNormTolerance = 1e-8;

std::vector<Image> random_frames(const Grid &grid, std::size_t frames, std::uint64_t seed) {
  std::vector<Image> out;
  for (std::size_t f = 0; f < frames; ++f) out.push_back(test::random_image(grid, seed + f));
  return out;
}

std::vector<DeviceImage> upload(const std::vector<Image> &frames) {
  std::vector<DeviceImage> out;
  for (const Image &f : frames) out.emplace_back(f);
  return out;
}

std::vector<cfloat> flatten(const std::vector<Image> &frames) {
  std::vector<cfloat> all;
  for (const Image &f : frames) all.insert(all.end(), f.values().begin(), f.values().end());
  return all;
}
std::vector<cfloat> flatten(const std::vector<DeviceImage> &frames) {
  std::vector<Image> host;
  for (const DeviceImage &f : frames) host.push_back(f.to_host());
  return flatten(host);
}

double host_shrink(std::vector<Image> &frames, const Grid &grid, unsigned axes, int block,
                   const std::array<std::int64_t, 3> &shift, double t) {
  std::vector<cfloat *> pointers;
  for (Image &f : frames) pointers.push_back(f.data());
  return locally_low_rank_shrink(pointers, grid, axes, block, shift, t);
}

// A threshold inside a full block's singular values: a Gaussian b x F block with entries of
// variance 2 has them near sqrt(2) (sqrt(b) +- sqrt(F)); half the middle one shrinks them all and
// zeroes the smallest (and more of the border blocks', which hold fewer voxels).
double threshold_within_spectrum(const Grid &grid, unsigned axes, int block, std::size_t frames) {
  double voxels = 1;
  const unsigned resolved = resolve_axes(grid, axes);
  for (int a = 0; a < 3; ++a) voxels *= (resolved >> a & 1u) != 0 ? block : grid.extent(a);
  return 0.5 * std::sqrt(2.0 * std::max(voxels, static_cast<double>(frames)));
}

std::string describe(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

void check_against_host(const Grid &grid, unsigned axes, int block, std::size_t frames) {
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  std::array<std::int64_t, 3> shift{};
  for (int a = 0; a < 3; ++a) shift[a] = std::uniform_int_distribution<std::int64_t>(0, block - 1)(rng);
  const double t = threshold_within_spectrum(grid, axes, block, frames);
  INFO("grid " << describe(grid) << ", axes " << axes << ", block " << block << ", frames " << frames << ", shift "
               << shift[0] << "," << shift[1] << "," << shift[2] << ", t " << t << ", seed " << seed);
  const std::vector<Image> input = random_frames(grid, frames, seed);
  std::vector<Image> host = input;
  const double host_norm = host_shrink(host, grid, axes, block, shift, t);
  std::vector<DeviceImage> device = upload(input);
  LowRankOps<DeviceImage> ops(grid, axes, block, frames);
  const double device_norm = ops.norm(device, shift);
  CHECK(std::abs(device_norm - host_norm) <= kNormTolerance * host_norm);
  ops.shrink(device, shift, t);
  const std::vector<cfloat> in = flatten(input), want = flatten(host), got = flatten(device);
  // The case exercises the shrink: it moves the frames and keeps part of them.
  CHECK(test::relative_error(want, in) > 0.05);
  CHECK(test::relative_error(want, in) < 0.95);
  CHECK(test::relative_error(got, want) < kShrinkTolerance);
}

} // namespace

TEST_CASE("gpu llr: the shrink and the nuclear norms match the host's block SVD", "[gpu][sparse][llr][small]") {
  SECTION("2D odd extents, block 4 of 13x11, 5 frames") { check_against_host(Grid(13, 11), 0, 4, 5); }
  SECTION("3D odd extents, block 3 of 9x7x5, 4 frames") { check_against_host(Grid(9, 7, 5), 0, 3, 4); }
  SECTION("3D blocks over x and y only (z spans each block), 6 frames") {
    check_against_host(Grid(10, 9, 3), 0b011u, 4, 6);
  }
  SECTION("one frame (a block's vector soft-thresholded)") { check_against_host(Grid(10, 9), 0, 4, 1); }
  SECTION("32 frames, blocks of 25 voxels and borders of 5: rank deficient") {
    check_against_host(Grid(16, 15), 0, 5, 32);
  }
}

TEST_CASE("gpu llr: the memory estimate bounds the plan's device bytes", "[gpu][sparse][llr][small]") {
  // low_rank_device_bytes counts cuSOLVER's batched Jacobi workspace as one more chunk of Gram
  // matrices, a bound only the device can confirm (the workspace size is cuSOLVER's): the plan's
  // real bytes must not exceed the estimate, and the estimate must stay within 2x of them (it is
  // what the reconstruction's memory check asks for).
  struct Case {
    Grid grid;
    unsigned axes;
    int block, frames;
  };
  for (const Case &c : {Case{Grid(16, 15), 0b011u, 5, 32}, Case{Grid(13, 11), 0b011u, 4, 2},
                        Case{Grid(64, 64, 32), 0b111u, 8, 8}, Case{Grid(256, 256, 64), 0b111u, 8, 32}}) {
    INFO(c.grid.extent(0) << "x" << c.grid.extent(1) << "x" << c.grid.extent(2) << ", " << c.frames << " frames");
    const LowRankOps<DeviceImage> ops(c.grid, c.axes, c.block, static_cast<std::size_t>(c.frames));
    const std::size_t estimate = detail::low_rank_device_bytes(c.grid, c.axes, c.block, c.frames);
    CHECK(ops.device_bytes() <= estimate);
    CHECK(estimate <= 2 * ops.device_bytes());
  }
}

TEST_CASE("gpu llr: threshold zero is the identity, beyond every singular value zero", "[gpu][sparse][llr][small]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid grid(11, 9);
  const std::vector<Image> input = random_frames(grid, 7, seed);
  LowRankOps<DeviceImage> ops(grid, 0, 3, 7);
  std::vector<DeviceImage> device = upload(input);
  ops.shrink(device, {1, 2, 0}, 0.0);
  CHECK(flatten(device) == flatten(input)); // M = I exactly (llr_cuda.cu)
  // Above the largest singular value of any block (<= its Frobenius norm <= the whole norm): M = 0.
  const std::vector<cfloat> in = flatten(input);
  double total = 0;
  for (const cfloat &v : in) total += std::norm(cdouble(v));
  ops.shrink(device, {2, 0, 0}, 1.01 * std::sqrt(total));
  for (const cfloat &v : flatten(device)) REQUIRE(v == cfloat(0, 0));
}

TEST_CASE("gpu llr: FrameTermOps on device frames draws the host's shifts", "[gpu][sparse][llr][frames]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Grid grid(15, 13);
  const std::size_t frames = 6;
  SparseTerm llr;
  llr.penalty = SparsePenalty::LocallyLowRank;
  llr.lambda = 1.0;
  llr.block = 4;
  FrameStack<Image> host{random_frames(grid, frames, seed)};
  FrameStack<DeviceImage> device{upload(host.frames)};
  FrameTermOps<Image> host_term(llr, grid, host, true, seed);
  FrameTermOps<DeviceImage> device_term(llr, grid, device, true, seed);
  // A quarter of a threshold within the spectrum: three shrinks leave the frames far from zero
  // (at the full threshold the third leaves none, and the relative error of zeros is 0/0).
  const double t = 0.25 * threshold_within_spectrum(grid, 0, 4, frames);
  for (int call = 0; call < 3; ++call) { // each call a new random block grid, the same on both
    INFO("call " << call);
    host_term.prox(t, host);
    device_term.prox(t, device);
    CHECK(test::relative_error(flatten(device.frames), flatten(host.frames)) < kShrinkTolerance);
  }
  FrameStack<Image> host_range = host_term.make_range(host);
  FrameStack<DeviceImage> device_range = device_term.make_range(device);
  const double want = host_term.value(host, host_range);
  CHECK(want > 0);
  CHECK(std::abs(device_term.value(device, device_range) - want) <= kNormTolerance * want);
  // Frames of zeros (every block's Gram 0): they stay exactly zero, their norm is 0, no NaN.
  FrameStack<DeviceImage> zeros{upload(std::vector<Image>(frames, Image(grid)))};
  device_term.prox(t, zeros);
  for (const cfloat &v : flatten(zeros.frames)) REQUIRE(v == cfloat(0, 0));
  FrameStack<DeviceImage> zero_range = device_term.make_range(zeros);
  CHECK(device_term.value(zeros, zero_range) == 0);
}

TEST_CASE("gpu llr: bad input is refused naming it", "[gpu][sparse][llr][bad-input]") {
  const Grid grid(12, 10);
  try {
    LowRankOps<DeviceImage> too_many(grid, 0, 4, kDeviceLowRankMaxFrames + 1);
    FAIL("33 frames were taken");
  } catch (const Unsupported &e) {
    CHECK(std::string(e.what()).find(std::to_string(kDeviceLowRankMaxFrames + 1)) != std::string::npos);
  }
  CHECK_THROWS_AS(LowRankOps<DeviceImage>(grid, 0, 11, 3), InvalidArgument); // beyond 10 along y
  CHECK_THROWS_AS(LowRankOps<DeviceImage>(grid, 0, 0, 3), InvalidArgument);
  LowRankOps<DeviceImage> ops(grid, 0, 4, 3);
  std::vector<DeviceImage> wrong_count = upload(random_frames(grid, 2, 5));
  CHECK_THROWS_AS(ops.shrink(wrong_count, {0, 0, 0}, 1.0), InvalidArgument);
  std::vector<DeviceImage> wrong_grid = upload(random_frames(Grid(12, 11), 3, 6));
  CHECK_THROWS_AS(ops.shrink(wrong_grid, {0, 0, 0}, 1.0), InvalidArgument);
  std::vector<DeviceImage> right = upload(random_frames(grid, 3, 7));
  CHECK_THROWS_AS(ops.shrink(right, {0, 0, 0}, -1.0), InvalidArgument);
  CHECK_THROWS_AS(ops.shrink(right, {0, 0, 0}, std::nan("")), InvalidArgument);
}
