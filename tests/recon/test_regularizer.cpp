// lambda W^H W against explicit difference operators.
#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/regularizer.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// ||D x||^2 for forward differences along each axis of extent > 1, no wrap.
double difference_energy(const Image &x) {
  const Grid &g = x.grid();
  double e = 0;
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t i = 0; i < g.nx(); ++i) {
        const cdouble v = x.at(i, y, z);
        if (i + 1 < g.nx()) e += std::norm(cdouble(x.at(i + 1, y, z)) - v);
        if (y + 1 < g.ny()) e += std::norm(cdouble(x.at(i, y + 1, z)) - v);
        if (z + 1 < g.nz()) e += std::norm(cdouble(x.at(i, y, z + 1)) - v);
      }
  return e;
}

} // namespace

TEST_CASE("regularizer: <x, D^H D x> = ||D x||^2 and Tikhonov adds lambda x", "[regularizer]") {
  const Grid grid = GENERATE(Grid(7, 5), Grid(4, 3, 6));
  const Image x = test::random_image(grid, 8);
  Image out(grid);
  add_regularizer_normal(Regularizer::FiniteDifference, 2.0, grid, x.data(), out.data());
  const cdouble quad = test::inner(x.values(), out.values());
  CHECK(std::abs(quad.real() - 2.0 * difference_energy(x)) < 1e-5 * quad.real());
  CHECK(std::abs(quad.imag()) < 1e-5 * quad.real());
  // A constant image has no differences.
  Image c(grid, std::vector<cfloat>(static_cast<std::size_t>(grid.voxels()), cfloat(3, -1)));
  Image zero(grid);
  add_regularizer_normal(Regularizer::FiniteDifference, 1.0, grid, c.data(), zero.data());
  for (const auto &v : zero.values()) CHECK(std::abs(v) < 1e-6f);

  Image t(grid);
  add_regularizer_normal(Regularizer::Tikhonov, 0.5, grid, x.data(), t.data());
  CHECK(test::relative_error(t.values(), Image(grid, [&] {
                               auto v = x.values();
                               for (auto &e : v) e *= 0.5f;
                               return v;
                             }()).values()) < 1e-7);
}

TEST_CASE("regularizer: lambda must be finite and non-negative", "[regularizer][bad-input]") {
  const Grid grid(4, 4);
  Image x(grid), out(grid);
  CHECK_THROWS_WITH(add_regularizer_normal(Regularizer::Tikhonov, -1.0, grid, x.data(), out.data()),
                    test::contains("lambda = -1"));
  CHECK_THROWS_AS(add_regularizer_normal(Regularizer::None, std::nan(""), grid, x.data(), out.data()),
                  InvalidArgument);
}
