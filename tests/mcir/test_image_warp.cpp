// ImageWarp (mri/mcir.hpp): against the float64 trilinear warp and its transpose, adjointness,
// the identity, mri::warp's convention, affine exactness, determinism, bad input.
#include "catch.hpp"

#include <cmath>
#include <string>

#include "mcir/mcir_test_support.hpp"
#include "mri/error.hpp"
#include "mri/linear_operator.hpp"
#include "mri/mcir.hpp"
#include "mri/motion.hpp"
#include "omp_threads.hpp"
#include "test_support.hpp"

using namespace mri;
using namespace mri::test::mcir;

namespace {

// Grids with odd, even and unequal extents, 2D and 3D.
const Grid kGrids[] = {Grid(23, 18), Grid(13, 10, 9)};

cdouble dot_f64(const Image &a, const Image &b) {
  cdouble s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += std::conj(cdouble(a[i])) * cdouble(b[i]);
  return s;
}
double norm_f64(const Image &a) { return std::sqrt(std::abs(dot_f64(a, a))); }

} // namespace

TEST_CASE("ImageWarp forward and adjoint match the float64 trilinear warp and its transpose", "[mcir]") {
  for (const Grid &g : kGrids)
    for (const bool jacobian : {false, true}) {
      const std::uint64_t seed = fresh_seed();
      INFO("grid " << g.nx() << "x" << g.ny() << "x" << g.nz() << ", jacobian " << jacobian << ", seed " << seed);
      const DisplacementField f = smooth_field(g, 3.0, seed); // positions leave the volume at the border
      const ImageWarp w(f, {jacobian});
      const Image x = test::random_image(g, seed + 1), y = test::random_image(g, seed + 2);
      // Float32 lerps of O(1) values with t in [0, 1]: a few ulps of the largest input per output.
      CHECK(max_relative(mri::forward(w, x), warp_f64(f, x, w.jacobian())) < 1e-5);
      // The scatter sums up to 8 (2D: 4) terms per state voxel landing on each reference voxel.
      CHECK(max_relative(mri::adjoint(w, y), warp_adjoint_f64(f, y, w.jacobian())) < 1e-5);
    }
}

TEST_CASE("ImageWarp's adjoint is the transpose: <W x, y> = <x, W^H y>", "[mcir]") {
  for (const Grid &g : kGrids)
    for (const bool jacobian : {false, true}) {
      const std::uint64_t seed = fresh_seed();
      INFO("grid " << g.nx() << "x" << g.ny() << "x" << g.nz() << ", jacobian " << jacobian << ", seed " << seed);
      const ImageWarp w(smooth_field(g, 2.5, seed), {jacobian});
      const Image x = test::random_image(g, seed + 1), y = test::random_image(g, seed + 2);
      const Image wx = mri::forward(w, x), why = mri::adjoint(w, y);
      // Both inner products in float64 from float32 operator outputs: each output carries a relative
      // rounding of ~1e-7 (a few float ops per term), so the two agree to ~1e-6 of ||W x|| ||y||.
      const double scale = norm_f64(wx) * norm_f64(y);
      CHECK(std::abs(dot_f64(wx, y) - dot_f64(x, why)) < 1e-5 * scale);
    }
}

TEST_CASE("ImageWarp of a zero field is the identity, bitwise", "[mcir]") {
  for (const Grid &g : kGrids) {
    const std::uint64_t seed = fresh_seed();
    INFO("seed " << seed);
    const Image x = test::random_image(g, seed);
    for (const bool jacobian : {false, true}) {
      const ImageWarp w(DisplacementField(g), {jacobian});
      CHECK(w.is_identity());
      CHECK(mri::forward(w, x).values() == x.values());
      CHECK(mri::adjoint(w, x).values() == x.values());
    }
    CHECK(mri::forward(ImageWarp::identity(g), x).values() == x.values());
  }
}

TEST_CASE("ImageWarp's forward on a real image is mri::warp (the field's direction), bitwise", "[mcir]") {
  for (const Grid &g : kGrids) {
    const std::uint64_t seed = fresh_seed();
    INFO("seed " << seed);
    const DisplacementField f = smooth_field(g, 2.0, seed);
    const RealVolume real = textured_volume(g, seed + 1);
    Image x(g);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = real[i];
    const Image state = mri::forward(ImageWarp(f), x);
    const RealVolume expected = warp(real, f);
    bool equal = true;
    for (std::size_t i = 0; i < x.size(); ++i)
      equal = equal && state[i] == cfloat(expected[i], 0.0f);
    CHECK(equal);
  }
}

TEST_CASE("ImageWarp is exact on affine fields and linear images, its Jacobian weight det(I + A)", "[mcir]") {
  // An affine field u(v) = A (v - c) + d moves a linear image a.v + b to a.(v + u(v)) + b exactly
  // (trilinear interpolation reproduces linear functions) wherever v + u(v) stays inside the volume.
  const Grid g(20, 18, 16);
  const double a_mat[3][3] = {{0.05, -0.02, 0.01}, {0.03, -0.04, 0.02}, {-0.01, 0.02, 0.06}};
  const double d[3] = {0.7, -0.4, 0.3}, c[3] = {10, 9, 8}, lin[3] = {0.3, -0.2, 0.5};
  DisplacementField f(g);
  Image x(g);
  RealVolume *comp[3] = {&f.u, &f.v, &f.w};
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t xx = 0; xx < g.nx(); ++xx) {
        const double v[3] = {double(xx), double(y), double(z)};
        for (int r = 0; r < 3; ++r) {
          double s = d[r];
          for (int col = 0; col < 3; ++col)
            s += a_mat[r][col] * (v[col] - c[col]);
          comp[r]->at(xx, y, z) = static_cast<float>(s);
        }
        x.at(xx, y, z) = cfloat(static_cast<float>(lin[0] * v[0] + lin[1] * v[1] + lin[2] * v[2] + 1.0), 0.5f);
      }
  const ImageWarp w(f, {true});
  const Image state = mri::forward(w, x);
  const double det = (1 + a_mat[0][0]) * ((1 + a_mat[1][1]) * (1 + a_mat[2][2]) - a_mat[1][2] * a_mat[2][1]) -
                     a_mat[0][1] * (a_mat[1][0] * (1 + a_mat[2][2]) - a_mat[1][2] * a_mat[2][0]) +
                     a_mat[0][2] * (a_mat[1][0] * a_mat[2][1] - (1 + a_mat[1][1]) * a_mat[2][0]);
  double worst_value = 0, worst_det = 0;
  for (std::int64_t z = 2; z < g.nz() - 2; ++z)
    for (std::int64_t y = 2; y < g.ny() - 2; ++y)
      for (std::int64_t xx = 2; xx < g.nx() - 2; ++xx) {
        const std::int64_t v = g.index(xx, y, z);
        const double p[3] = {xx + double(f.u[v]), y + double(f.v[v]), z + double(f.w[v])};
        const cdouble expected((lin[0] * p[0] + lin[1] * p[1] + lin[2] * p[2] + 1.0) * det, 0.5 * det);
        worst_value = std::max(worst_value, std::abs(cdouble(state[v]) - expected));
        worst_det = std::max(worst_det, std::abs(double(w.jacobian()[v]) - det));
      }
  // Central differences of an affine field are exact; float32 rounding of values of order 10.
  CHECK(worst_det < 1e-5);
  CHECK(worst_value < 1e-4);
}

TEST_CASE("ImageWarp's adjoint is the same bits for any thread count", "[mcir][determinism]") {
  const Grid g(24, 20, 18);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const ImageWarp w(smooth_field(g, 1.5, seed), {true});
  const Image y = test::random_image(g, seed + 1);
  Image one(g), two(g);
  {
    test::OmpThreads threads(1);
    w.adjoint(y, one);
  }
  {
    test::OmpThreads threads(3);
    w.adjoint(y, two);
  }
  CHECK(one.values() == two.values());
}

TEST_CASE("ImageWarp refuses NaN fields, other grids and aliasing", "[mcir][bad-input]") {
  const Grid g(8, 6);
  DisplacementField f(g);
  f.v[5] = NAN;
  CHECK_THROWS_WITH(ImageWarp(f), test::contains("field.v[5]"));
  f.v[5] = 0.5f;
  const ImageWarp w(f);
  Image other(Grid(8, 7)), x(g);
  CHECK_THROWS_AS(w.forward(other, x), InvalidArgument);
  CHECK_THROWS_AS(w.adjoint(x, other), InvalidArgument);
  CHECK_THROWS_WITH(w.forward(x, x), test::contains("alias"));
  CHECK_THROWS_AS(ImageWarp(DisplacementField{}), InvalidArgument);
}
