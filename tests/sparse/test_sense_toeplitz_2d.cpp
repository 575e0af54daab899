// The fused 2D SENSE Toeplitz normal (lib/toeplitz/sense_toeplitz_2d.hpp) that the CPU
// reconstruction's solvers apply: sum_c conj(S_c) F^H W F (S_c x) against the float64 sums, and
// the same bits for any OpenMP team.
#include <complex>
#include <vector>

#include "../../lib/toeplitz/sense_toeplitz_2d.hpp"
#include "catch.hpp"
#include "mri/fourier.hpp"
#include "mri/toeplitz.hpp"
#include "omp_threads.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// sum_c conj(S_c) F^H (w .* F (S_c x)) by the float64 reference sums.
std::vector<cdouble> explicit_sense_normal(const Trajectory &t, const std::vector<float> &w,
                                           const CoilSensitivities &maps, const Image &x) {
  const FourierOperator f(t, x.grid(), {Backend::Cpu, Precision::Float64});
  std::vector<cdouble> sum(x.size()), coil(x.size()), back(x.size()), y(t.size());
  for (int c = 0; c < maps.coils(); ++c) {
    for (std::size_t i = 0; i < x.size(); ++i) coil[i] = cdouble(maps.map(c)[i]) * cdouble(x[i]);
    f.forward(coil, y);
    for (std::size_t m = 0; m < y.size(); ++m) y[m] *= w[m];
    f.adjoint(y, back);
    for (std::size_t i = 0; i < x.size(); ++i) sum[i] += std::conj(cdouble(maps.map(c)[i])) * back[i];
  }
  return sum;
}

} // namespace

TEST_CASE("sense toeplitz 2d: the fused coil pass equals sum_c conj(S_c) F^H W F S_c x", "[sparse][toeplitz]") {
  // Extents that leave partial row and column blocks (16 lines each) and odd nx; 5 coils: one
  // full group of 4 and a partial one. Tolerance 1e-5 as the single-coil Toeplitz test's: float32
  // FFTs of the doubled grid against float64 sums.
  const Grid grid = GENERATE(Grid(15, 12), Grid(37, 20));
  const auto t = traj::uniform_random(grid, 600, 23);
  const auto w = test::random_weights(t.size(), 29);
  const int coils = 5;
  const CoilSensitivities maps(grid, coils, test::random_complex(static_cast<std::size_t>(coils * grid.voxels()), 31));
  const Image x = test::random_image(grid, 37);
  const QOperator q(t, w, grid, {Backend::Cpu, Precision::Float64});
  const detail::SenseToeplitz2d fused(q, maps);
  Image out(grid);
  fused.apply(x, out);
  CHECK(test::relative_error(std::span<const cfloat>(out.values()), explicit_sense_normal(t, w, maps, x)) < 1e-5);
}

TEST_CASE("sense toeplitz 2d: the same bits for any number of threads", "[sparse][toeplitz][determinism]") {
  const Grid grid(40, 34);
  const auto t = traj::uniform_random(grid, 900, 41);
  const CoilSensitivities maps(grid, 3, test::random_complex(static_cast<std::size_t>(3 * grid.voxels()), 43));
  const Image x = test::random_image(grid, 47);
  const QOperator q(t, {}, grid, {Backend::Cpu, Precision::Float32});
  Image one(grid), three(grid);
  {
    test::OmpThreads team(1);
    detail::SenseToeplitz2d(q, maps).apply(x, one);
  }
  {
    test::OmpThreads team(3);
    detail::SenseToeplitz2d(q, maps).apply(x, three);
  }
  CHECK(one.values() == three.values());
}
