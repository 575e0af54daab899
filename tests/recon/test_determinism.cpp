// What the SDK promises about determinism on the CPU, and what it does not (docs/reliability.md):
//  - Gather (RGA) gridding: bitwise identical run to run and for any thread count (nufft.hpp).
//  - Scatter (GA) gridding: per-thread grids reduced in thread order, so bitwise run to run at a
//    fixed thread count; another thread count regroups the sums (float rounding).
//  - reconstruct(): the exact F^H D and Q split their float32 sums by thread (separable_dft.cpp),
//    so the image depends on the thread count at float rounding; at a fixed count of at most 2
//    threads it is bitwise run to run (the OpenMP reductions of the CG dot products combine at
//    most two partial sums, and a + b == b + a). Larger teams combine partials in arrival order.
#include "catch.hpp"
#include "mri/nufft.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "omp_threads.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

KSpaceData spiral_problem(const Grid &grid) {
  auto t = traj::spiral(grid, 12, 400);
  auto s = Phantom::shepp_logan_2d().kspace(t, grid);
  add_noise(s, 40.0, 3);
  auto w = test::random_weights(t.size(), 5);
  return KSpaceData(std::move(t), std::move(s), std::move(w));
}

std::vector<cfloat> grid_adjoint(const KSpaceData &data, const Grid &grid, Gridding gridding,
                                 int threads) {
  NufftOptions o;
  o.gridding = gridding;
  o.threads = threads;
  return mri::adjoint(NufftOperator(data.trajectory(), grid, o), data.weighted_samples()).values();
}

std::vector<cfloat> recon(const KSpaceData &data, const Grid &grid, Method method, int threads) {
  const test::OmpThreads team(threads);
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.method = method;
  o.solver.iterations = 8;
  return reconstruct(data, grid, o).image.values();
}

} // namespace

TEST_CASE(
    "determinism: gather (RGA) gridding is bitwise identical for 1, 2, 3, 5 threads and run to run",
    "[determinism][nufft]") {
  const Grid grid(48, 40);
  const KSpaceData data = spiral_problem(grid);
  const auto one = grid_adjoint(data, grid, Gridding::Gather, 1);
  for (const int threads : {1, 2, 3, 5}) {
    INFO("threads " << threads);
    CHECK(grid_adjoint(data, grid, Gridding::Gather, threads) == one);
    CHECK(grid_adjoint(data, grid, Gridding::Gather, threads) == one);
  }
  // Scatter sums the same terms in another grouping: equal within float rounding, not bitwise
  // (if it were bitwise, the comparisons above would not show the order to be fixed).
  const auto scatter = grid_adjoint(data, grid, Gridding::Scatter, 3);
  CHECK(scatter != one);
  CHECK(test::relative_error(scatter, one) < 1e-6);
}

TEST_CASE("determinism: scatter (GA) gridding is bitwise run to run at a fixed thread count",
          "[determinism][nufft]") {
  const Grid grid(48, 40);
  const KSpaceData data = spiral_problem(grid);
  for (const int threads : {1, 2, 3}) {
    INFO("threads " << threads);
    CHECK(grid_adjoint(data, grid, Gridding::Scatter, threads) ==
          grid_adjoint(data, grid, Gridding::Scatter, threads));
  }
  CHECK(test::relative_error(grid_adjoint(data, grid, Gridding::Scatter, 3),
                             grid_adjoint(data, grid, Gridding::Scatter, 1)) < 1e-6);
}

TEST_CASE("determinism: the CPU reconstruction is bitwise run to run; across thread counts within "
          "float rounding",
          "[determinism][reconstruct]") {
  const Grid grid(48, 40);
  const KSpaceData data = spiral_problem(grid);
  for (const Method method : {Method::Exact, Method::Nufft}) {
    INFO("method " << to_string(method));
    const auto two = recon(data, grid, method, 2);
    CHECK(recon(data, grid, method, 2) == two);
    CHECK(recon(data, grid, method, 1) == recon(data, grid, method, 1));
    for (const int threads : {1, 3}) {
      INFO("threads " << threads);
      CHECK(test::relative_error(recon(data, grid, method, threads), two) < 1e-5);
    }
  }
}
