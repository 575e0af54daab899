// NufftOperator::adjoint_coils (the coil-batched adjoint NUFFT, BART's coil-major layout) against
// one adjoint per coil: bitwise equal for every gridding ISA, GA and RGA, float32 and float64, 2D
// and 3D, coil counts inside one gridding block and across blocks; adjoint to the forward per
// coil; bad input.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/nufft.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// Coil c's image: one coil-major block of `voxels` values.
std::span<const cfloat> coil(const std::vector<cfloat> &v, int c, std::size_t size) {
  return {v.data() + static_cast<std::size_t>(c) * size, size};
}

bool bitwise_equal(std::span<const cfloat> a, std::span<const cfloat> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(cfloat)) == 0;
}

} // namespace

TEST_CASE("nufft: adjoint_coils equals one adjoint per coil, bitwise", "[nufft]") {
  // Each coil's grid gets the same products in the same order as a one-coil pass (the weights
  // are only shared, not re-associated): RGA sums each tile's fixed list; GA's per-thread grids
  // split the samples alike and reduce in thread order. So equality is exact, not a tolerance.
  // 11 coils: a full block of 8, then 3.
  struct Case {
    Grid grid;
    std::size_t m;
  };
  const Case cases[] = {{Grid(24, 20), 1500}, {Grid(10, 8, 6), 900}};
  const std::string kernel = GENERATE(as<std::string>{}, "", "avx2", "generic");
  const test::EnvScope scope("MRI_GRIDDING_KERNEL", kernel);
  std::uint64_t seed = 7000;
  for (const Case &c : cases) {
    const Trajectory t = test::random_trajectory(c.grid, c.m, seed += 10);
    const std::size_t n = static_cast<std::size_t>(c.grid.voxels());
    for (const Precision precision : {Precision::Float32, Precision::Float64})
      for (const Gridding gridding : {Gridding::Scatter, Gridding::Gather})
        for (const int threads : {0, 3}) {
          NufftOptions o;
          o.tolerance = 1e-4;
          o.precision = precision;
          o.gridding = gridding;
          o.threads = threads;
          const NufftOperator op(t, c.grid, o);
          for (const int coils : {1, 3, 5, 8, 11}) {
            const auto y = test::random_complex(c.m * static_cast<std::size_t>(coils), ++seed);
            std::vector<cfloat> batched(n * static_cast<std::size_t>(coils));
            op.adjoint_coils(y.data(), coils, batched.data());
            for (int k = 0; k < coils; ++k) {
              Image one(c.grid);
              op.adjoint(coil(y, k, c.m), one);
              INFO("kernel '" << kernel << "', " << c.grid.dims() << "D, " << to_string(precision) << ", "
                              << to_string(gridding) << ", threads " << threads << ", coil " << k << " of " << coils);
              CHECK(bitwise_equal(coil(batched, k, n), one.values()));
            }
          }
        }
  }
}

TEST_CASE("nufft: adjoint_coils is the adjoint of the forward, coil by coil", "[nufft]") {
  // <F x_c, y_c> = <x_c, (F^H y)_c> to rounding (bounds as the one-coil adjointness test).
  const int coils = 5;
  for (const Grid g : {Grid(32, 24), Grid(9, 7, 5)}) {
    const Trajectory t = test::random_trajectory(g, 2000, 191);
    const std::size_t m = t.size(), n = static_cast<std::size_t>(g.voxels());
    const auto y = test::random_complex(m * coils, 192);
    const auto x = test::random_complex(n * coils, 193);
    for (const Precision precision : {Precision::Float64, Precision::Float32})
      for (const Gridding gridding : {Gridding::Scatter, Gridding::Gather}) {
        NufftOptions o;
        o.tolerance = 1e-2;
        o.precision = precision;
        o.gridding = gridding;
        const NufftOperator op(t, g, o);
        std::vector<cfloat> fhy(n * coils), fx(m);
        op.adjoint_coils(y.data(), coils, fhy.data());
        auto norm = [](std::span<const cfloat> v) { return std::sqrt(test::inner(v, v).real()); };
        for (int c = 0; c < coils; ++c) {
          const std::span<const cfloat> xc = coil(x, c, n);
          op.forward(Image(g, std::vector<cfloat>(xc.begin(), xc.end())), fx);
          const cdouble lhs = test::inner(fx, coil(y, c, m)), rhs = test::inner(coil(x, c, n), coil(fhy, c, n));
          const double scale = norm(fx) * norm(coil(y, c, m)) + norm(coil(x, c, n)) * norm(coil(fhy, c, n));
          const double rel = std::abs(lhs - rhs) / scale;
          INFO(to_string(precision) << ", " << to_string(gridding) << ", " << g.dims() << "D, coil " << c << ": " << rel);
          CHECK(rel <= (precision == Precision::Float64 ? 1.5 * 0x1p-24 : 2e-6));
        }
      }
  }
}

TEST_CASE("nufft: adjoint_coils refuses bad coil counts and null pointers", "[nufft][bad-input]") {
  const Grid g(16, 16);
  const Trajectory t = test::random_trajectory(g, 100, 3);
  const NufftOperator op(t, g);
  std::vector<cfloat> y(2 * t.size()), images(2 * static_cast<std::size_t>(g.voxels()));
  CHECK_THROWS_AS(op.adjoint_coils(y.data(), 0, images.data()), InvalidArgument);
  CHECK_THROWS_WITH(op.adjoint_coils(y.data(), 0, images.data()), test::contains("coils = 0"));
  CHECK_THROWS_WITH(op.adjoint_coils(y.data(), -3, images.data()), test::contains("coils = -3"));
  CHECK_THROWS_AS(op.adjoint_coils(nullptr, 2, images.data()), InvalidArgument);
  CHECK_THROWS_WITH(op.adjoint_coils(nullptr, 2, images.data()), test::contains("samples = null"));
  CHECK_THROWS_AS(op.adjoint_coils(y.data(), 2, nullptr), InvalidArgument);
  CHECK_THROWS_WITH(op.adjoint_coils(y.data(), 2, nullptr), test::contains("images = null"));
}
