#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/kspace.hpp"
#include "test_support.hpp"

#include <limits>

using namespace mri;

TEST_CASE("grid: extents, dims, coordinates and the doubled grid", "[grid]") {
  const Grid g2(6, 5);
  CHECK(g2.dims() == 2);
  CHECK(g2.voxels() == 30);
  CHECK(g2.coordinate(0, 0) == -3);
  CHECK(g2.coordinate(0, 5) == 2);
  CHECK(g2.coordinate(1, 0) == -2); // odd n: {-2 .. 2}
  CHECK(g2.index(1, 2) == 1 + 6 * 2);
  CHECK(g2.doubled() == Grid(12, 10, 1));
  const Grid g3(4, 3, 2);
  CHECK(g3.dims() == 3);
  CHECK(g3.index(1, 2, 1) == 1 + 4 * (2 + 3 * 1));
  CHECK(g3.doubled() == Grid(8, 6, 4));
}

TEST_CASE("grid: zero or negative extents are rejected", "[grid][bad-input]") {
  CHECK_THROWS_AS(Grid(0, 4), InvalidArgument);
  CHECK_THROWS_AS(Grid(4, -1), InvalidArgument);
  CHECK_THROWS_AS(Grid(4, 4, 0), InvalidArgument);
  CHECK_THROWS_WITH(Grid(4, -3), test::contains("grid.ny = -3"));
}

TEST_CASE("image: data size must match the grid", "[grid][bad-input]") {
  CHECK_THROWS_AS(Image(Grid(4, 4), std::vector<cfloat>(15)), InvalidArgument);
  const Image img(Grid(3, 2), std::vector<cfloat>(6, cfloat(1, 2)));
  CHECK(img.at(2, 1) == cfloat(1, 2));
}

TEST_CASE("kspace: validation of samples and weights", "[kspace][bad-input]") {
  const Trajectory t(2, {{0, 0, 0}, {1, -1, 0}, {2, 0.5f, 0}});
  const auto s = test::random_complex(3, 1);
  CHECK_NOTHROW(KSpaceData(t, s));
  CHECK_THROWS_AS(KSpaceData(t, test::random_complex(2, 1)), InvalidArgument);
  CHECK_THROWS_AS(KSpaceData(Trajectory(2, {}), {}), InvalidArgument);
  auto bad = s;
  bad[1] = {std::numeric_limits<float>::quiet_NaN(), 0};
  CHECK_THROWS_WITH(KSpaceData(t, bad), test::contains("samples[1]"));
  bad[1] = {0, std::numeric_limits<float>::infinity()};
  CHECK_THROWS_AS(KSpaceData(t, bad), InvalidArgument);
  CHECK_THROWS_AS(KSpaceData(t, s, {1.0f, 2.0f}), InvalidArgument);
  CHECK_THROWS_WITH(KSpaceData(t, s, {1.0f, -2.0f, 1.0f}), test::contains("weights[1] = -2"));
  const KSpaceData d(t, s, {1.0f, 2.0f, 0.5f});
  CHECK(d.weighted_samples()[1] == s[1] * 2.0f);
}

TEST_CASE("trajectory: NaN/Inf coordinates, kz in 2D and points outside the grid", "[kspace][bad-input]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(Trajectory(2, {{nan, 0, 0}}), InvalidArgument);
  CHECK_THROWS_AS(Trajectory(3, {{0, std::numeric_limits<float>::infinity(), 0}}), InvalidArgument);
  CHECK_THROWS_AS(Trajectory(2, {{0, 0, 1}}), InvalidArgument);
  CHECK_THROWS_AS(Trajectory(4, {}), InvalidArgument);
  const Trajectory t(2, {{-4, 3.99f, 0}, {4, 0, 0}});
  CHECK_THROWS_WITH(t.check_within(Grid(8, 8)), test::contains("trajectory[1]"));
  CHECK_THROWS_AS(t.check_within(Grid(8, 8, 8)), InvalidArgument); // dims differ
  CHECK_NOTHROW(Trajectory(2, {{-4, 3.99f, 0}}).check_within(Grid(8, 8)));
}
