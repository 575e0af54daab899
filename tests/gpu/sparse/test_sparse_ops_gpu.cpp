// SparseOps<DeviceImage> (cuda/sparse/) against the host's SparseOps<Image> on fresh random
// inputs: the wavelet transforms (three families, odd and even extents, 2D and 3D, axis subsets),
// the circular shift, the finite-difference gradient and its adjoint, TV's dual step, the block shrink and the
// sum of group norms, plus the device round trip Psi^H Psi x = x against x itself and bad input.
//
// Tolerance: both backends evaluate every output sample with the same per-sample definitions
// (mri/detail/sparse_stencil.hpp): float32 values, double accumulation within a sample, one
// rounding to float per sample and pass. They differ only in float rounding order (fused
// multiply-adds on the device, the order of the passes' roundings), so a relative L2 error of
// 1e-5 (about 100 float32 ulps over up to 3 levels x 3 axes of passes) separates rounding from
// any wrong index, which moves O(1) of the signal. The shift only moves values: exact.
// Tags: [gpu][sparse] all; [small] the quick subset compute-sanitizer runs.
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/error.hpp"
#include "mri/sparse.hpp"
#include "recon/device_image.hpp"
#include "sparse/sparse_ops_cuda.hpp"
#include "test_support.hpp"

using namespace mri;
using cuda::DeviceImage;
using Host = SparseOps<Image>;
using Device = SparseOps<DeviceImage>;

namespace {

using gpu_test::fresh_seed; // MRI_GPU_TEST_SEED replays a failure (the seed is in the INFO output)

constexpr double kRoundingTolerance = 1e-5; // see the file comment

std::string describe(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

// A device image full of NaN: an output every operation must overwrite completely.
DeviceImage poisoned(const Grid &grid) {
  Image nan(grid);
  const float q = std::numeric_limits<float>::quiet_NaN();
  for (auto &v : nan.values()) v = {q, q};
  return DeviceImage(nan);
}

// ||a - b|| / ||b|| in double, a from the device.
double device_error(const DeviceImage &a, const Image &b) { return test::relative_error(a.to_host(), b); }

void check_wavelet(const Grid &grid, unsigned axes, Wavelet wavelet) {
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(grid) << ", axes " << axes << ", " << to_string(wavelet) << ", seed " << seed);
  const WaveletLevels levels = wavelet_levels(grid, axes, wavelet);
  const Image x = test::random_image(grid, seed);

  Image c_host;
  Host::wavelet_forward(levels, x, c_host);
  const DeviceImage dx(x);
  DeviceImage dc = poisoned(grid);
  Device::wavelet_forward(levels, dx, dc);
  CHECK(device_error(dc, c_host) < kRoundingTolerance);

  // The inverse of the same coefficients on both backends.
  Image x_host;
  Host::wavelet_inverse(levels, c_host, x_host);
  const DeviceImage dc_host(c_host);
  DeviceImage dy = poisoned(grid);
  Device::wavelet_inverse(levels, dc_host, dy);
  CHECK(device_error(dy, x_host) < kRoundingTolerance);

  // Perfect reconstruction on the device (the transform is orthonormal for any extent).
  DeviceImage round_trip = poisoned(grid);
  Device::wavelet_inverse(levels, dc, round_trip);
  CHECK(device_error(round_trip, x) < kRoundingTolerance);

  // In place (input and output one vector): the same coefficients.
  DeviceImage in_place(x);
  Device::wavelet_forward(levels, in_place, in_place);
  CHECK(device_error(in_place, c_host) < kRoundingTolerance);
}

// A group vector of `group_size` blocks on `base` and a keep box inside it.
struct GroupCase {
  Grid base;
  int group_size;
  KeepBox keep;
};

// Shrink on both backends from the same z: values, and the returned sums of norms (double sums
// of the same per-group norms in different orders: far inside the tolerance).
void check_shrink(const GroupCase &g) {
  const std::uint64_t seed = fresh_seed();
  INFO("base " << describe(g.base) << ", group " << g.group_size << ", keep " << g.keep[0] << "," << g.keep[1] << ","
               << g.keep[2] << ", seed " << seed);
  const Grid stacked = stacked_grid(g.base, g.group_size);
  const Image z = test::random_image(stacked, seed);
  // Norms of groups of normal(0,1) complex values are near sqrt(2 size): this threshold zeroes
  // some groups and scales the others.
  const double t = 1.1 * std::sqrt(2.0 * g.group_size);

  const DeviceImage dz_const(z);
  const double norm_sum = Device::group_norm_sum(dz_const, g.base, g.group_size, g.keep);
  const double norm_sum_host = Host::group_norm_sum(z, g.base, g.group_size, g.keep);
  CHECK(std::abs(norm_sum - norm_sum_host) <= kRoundingTolerance * norm_sum_host);
  CHECK(test::relative_error(dz_const.to_host(), z) == 0.0); // group_norm_sum only reads

  Image z_host = z;
  const double shrunk_host = Host::shrink(z_host, g.base, g.group_size, g.keep, t);
  DeviceImage dz(z);
  const double shrunk = Device::shrink(dz, g.base, g.group_size, g.keep, t);
  CHECK(std::abs(shrunk - shrunk_host) <= kRoundingTolerance * shrunk_host);
  CHECK(std::abs(shrunk - norm_sum_host) <= kRoundingTolerance * norm_sum_host); // the norms before the shrink
  const Image out = dz.to_host();
  CHECK(test::relative_error(out, z_host) < kRoundingTolerance);

  // The threshold is exercised both ways: some groups zeroed, some only scaled.
  std::int64_t zeroed = 0, scaled = 0;
  for (const cfloat &v : z_host.values()) (v == cfloat(0.0f, 0.0f) ? zeroed : scaled) += 1;
  INFO("zeroed " << zeroed << ", scaled or kept " << scaled);
  CHECK(zeroed > 0);
  CHECK(scaled > 0);

  // The kept box is untouched, bit for bit.
  for (int c = 0; c < g.group_size; ++c)
    for (std::int64_t iz = 0; iz < std::min(g.keep[2], g.base.nz()); ++iz)
      for (std::int64_t iy = 0; iy < std::min(g.keep[1], g.base.ny()); ++iy)
        for (std::int64_t ix = 0; ix < std::min(g.keep[0], g.base.nx()); ++ix) {
          const auto v = static_cast<std::size_t>(g.base.index(ix, iy, iz) + c * g.base.voxels());
          CHECK(out.values()[v] == z.values()[v]);
        }
}

} // namespace

TEST_CASE("gpu sparse: the wavelet transforms on device images match the host's", "[gpu][sparse][wavelet][small]") {
  const Grid grid = GENERATE(Grid(37, 50), Grid(17, 16, 23));
  const Wavelet wavelet = GENERATE(Wavelet::Haar, Wavelet::Daubechies2, Wavelet::Daubechies4);
  check_wavelet(grid, 0, wavelet);
}

TEST_CASE("gpu sparse: the wavelet transforms along axis subsets and at 64^3", "[gpu][sparse][wavelet]") {
  const Wavelet wavelet = GENERATE(Wavelet::Haar, Wavelet::Daubechies2, Wavelet::Daubechies4);
  check_wavelet(Grid(37, 50), 0b10, wavelet);     // y only: x lines untouched
  check_wavelet(Grid(33, 8, 40), 0b101, wavelet); // x and z, y (extent 8) not split
  check_wavelet(Grid(64, 64, 64), 0, wavelet);    // 3 levels on every axis
  check_wavelet(Grid(130, 19, 1), 0, wavelet);    // unequal level counts per axis
}

TEST_CASE("gpu sparse: circular shift moves every value where the host's does", "[gpu][sparse][shift][small]") {
  const Grid grid = GENERATE(Grid(37, 50), Grid(17, 16, 23));
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(grid) << ", seed " << seed);
  std::mt19937_64 rng(seed);
  std::array<std::int64_t, 3> shift{};
  for (int a = 0; a < 3; ++a)
    shift[static_cast<std::size_t>(a)] = std::uniform_int_distribution<std::int64_t>(0, grid.extent(a) - 1)(rng);
  INFO("shift " << shift[0] << "," << shift[1] << "," << shift[2]);
  const Image x = test::random_image(grid, seed + 1);
  Image out_host;
  Host::circular_shift(x, shift, out_host);
  const DeviceImage dx(x);
  DeviceImage out = poisoned(grid);
  Device::circular_shift(dx, shift, out);
  CHECK(device_error(out, out_host) == 0.0);
}

TEST_CASE("gpu sparse: the gradient and its adjoint match the host's", "[gpu][sparse][gradient][small]") {
  const Grid grid = GENERATE(Grid(37, 50), Grid(17, 16, 23));
  const unsigned axes = GENERATE(0u, 0b01u, 0b10u);
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(grid) << ", axes " << axes << ", seed " << seed);
  const int count = axis_count(resolve_axes(grid, axes));
  const Grid stacked = stacked_grid(grid, count);

  const Image x = test::random_image(grid, seed);
  Image g_host;
  Host::gradient_forward(grid, axes, x, g_host);
  const DeviceImage dx(x);
  DeviceImage dg = poisoned(stacked);
  Device::gradient_forward(grid, axes, dx, dg);
  CHECK(device_error(dg, g_host) < kRoundingTolerance);

  const Image g = test::random_image(stacked, seed + 1);
  Image x_host;
  Host::gradient_adjoint(grid, axes, g, x_host);
  const DeviceImage dg_in(g);
  DeviceImage dy = poisoned(grid);
  Device::gradient_adjoint(grid, axes, dg_in, dy);
  CHECK(device_error(dy, x_host) < kRoundingTolerance);
}

TEST_CASE("gpu sparse: TV's dual step matches the host's", "[gpu][sparse][gradient][small]") {
  const Grid grid = GENERATE(Grid(37, 50), Grid(17, 16, 23));
  const unsigned axes = GENERATE(0u, 0b10u);
  const bool isotropic = GENERATE(true, false);
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << describe(grid) << ", axes " << axes << ", isotropic " << isotropic << ", seed " << seed);
  const Grid stacked = stacked_grid(grid, axis_count(resolve_axes(grid, axes)));
  const Image u = test::random_image(grid, seed);
  Image p = test::random_image(stacked, seed + 1), q = test::random_image(stacked, seed + 2);
  const DeviceImage du(u);
  DeviceImage dp(p), dq(q);
  // Radius 0.8: about half of the random groups lie outside it (both branches run).
  Host::tv_dual_step(grid, axes, isotropic, u, 0.125, 0.8, 0.4, p, q);
  Device::tv_dual_step(grid, axes, isotropic, du, 0.125, 0.8, 0.4, dp, dq);
  CHECK(device_error(dp, p) < kRoundingTolerance);
  CHECK(device_error(dq, q) < kRoundingTolerance);
  DeviceImage wrong(Grid(grid.nx() + 1, grid.ny(), grid.nz()));
  CHECK_THROWS_AS(Device::tv_dual_step(grid, axes, isotropic, du, 0.125, 0.8, 0.4, wrong, dq), InvalidArgument);
  CHECK_THROWS_AS(Device::tv_dual_step(grid, axes, isotropic, du, 0.125, 0.8, 0.4, dq, dq), InvalidArgument);
  CHECK_THROWS_AS(Device::tv_dual_step(grid, axes, isotropic, du, 0.125, -1.0, 0.4, dp, dq), InvalidArgument);
}

TEST_CASE("gpu sparse: block shrink and sums of group norms match the host's", "[gpu][sparse][shrink][small]") {
  const GroupCase g = GENERATE(GroupCase{Grid(37, 50), 1, {0, 0, 0}}, GroupCase{Grid(37, 50), 2, {5, 7, 1}},
                               GroupCase{Grid(17, 16, 23), 3, {9, 8, 12}}, GroupCase{Grid(64, 64, 64), 1, {8, 8, 8}});
  check_shrink(g);
}

TEST_CASE("gpu sparse: bad input is refused as on the host", "[gpu][sparse][bad-input][small]") {
  const Grid grid(37, 50);
  const WaveletLevels levels = wavelet_levels(grid, 0, Wavelet::Daubechies2);
  const DeviceImage wrong(Grid(36, 50));
  DeviceImage out;
  CHECK_THROWS_AS(Device::wavelet_forward(levels, wrong, out), InvalidArgument);
  CHECK_THROWS_AS(Device::wavelet_inverse(levels, wrong, out), InvalidArgument);
  const DeviceImage x(test::random_image(grid, fresh_seed()));
  const std::array<std::int64_t, 3> past_end{37, 0, 0}, negative{-1, 0, 0};
  CHECK_THROWS_AS(Device::circular_shift(x, past_end, out), InvalidArgument);
  CHECK_THROWS_AS(Device::circular_shift(x, negative, out), InvalidArgument);
  CHECK_THROWS_AS(Device::gradient_adjoint(grid, 0, x, out), InvalidArgument); // needs the 2-block stack
  DeviceImage z(test::random_image(grid, fresh_seed()));
  const KeepBox none{0, 0, 0};
  CHECK_THROWS_AS(Device::shrink(z, grid, 2, none, 1.0), InvalidArgument);
  CHECK_THROWS_AS(Device::shrink(z, grid, 1, none, -1.0), InvalidArgument);
  CHECK_THROWS_AS(Device::shrink(z, grid, 1, none, std::numeric_limits<double>::quiet_NaN()), InvalidArgument);
  CHECK_THROWS_AS(Device::group_norm_sum(z, grid, 0, none), InvalidArgument);
}
