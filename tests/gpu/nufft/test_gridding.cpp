// The CUDA gridding NUFFT (cuda/nufft/gridding_cuda.cu) through NufftOperator with backend = Cuda:
// accuracy against the exact float64 sums per tolerance, scatter (GA, atomics) vs reverse
// gridding (RGA, gather), RGA bitwise determinism, adjointness, periodic wrap on tiny grids,
// agreement with the CPU NUFFT at M = 2^20, and Q by NUFFT.
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "mri_backend/nufft_access.hpp"
#include "recon/device_image.hpp"
#include "nufft/gridding_cuda.hpp"
#include "catch.hpp"
#include "test_support.hpp"
#include "gpu/sampled_reference.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/nufft.hpp"
#include "mri_backend/direct_sums.hpp"
#include "mri_backend/q_trajectory.hpp"

using namespace mri;

namespace {

using gpu_test::fresh_seed; // MRI_GPU_TEST_SEED replays a failure

using gpu_test::cuda_nufft;

Image exact_adjoint(const Trajectory &t, const std::vector<cfloat> &y, const Grid &g) {
  Image x(g);
  detail::adjoint_sum_f64(t, y, g, g, x.data());
  return x;
}

std::vector<cfloat> exact_forward(const Trajectory &t, const Image &x) {
  std::vector<cfloat> y(t.size());
  detail::forward_sum_f64(t, x, y.data());
  return y;
}

bool bitwise_equal(const Image &a, const Image &b) {
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(cfloat)) == 0;
}

} // namespace

TEST_CASE("cuda nufft: error vs the exact float64 F and F^H within the tolerance, GA and RGA",
          "[gpu][gridding][small]") {
  const Grid grid = GENERATE(Grid(24, 20), Grid(15, 17), Grid(10, 8, 6), Grid(9, 7, 5));
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", seed " << seed);
  const Trajectory t = traj::uniform_random(grid, 1537, seed);
  const auto y = test::random_complex(t.size(), seed + 1);
  const Image x = test::random_image(grid, seed + 2);
  const Image adjoint_ref = exact_adjoint(t, y, grid);
  const auto forward_ref = exact_forward(t, x);
  for (const double tol : {1e-2, 1e-4, 1e-5}) {
    for (const Gridding g : {Gridding::Scatter, Gridding::Gather}) {
      const NufftOperator op(t, grid, cuda_nufft(tol, g));
      REQUIRE(op.options().backend == Backend::Cuda);
      const double ea = test::relative_error(mri::adjoint(op, y), adjoint_ref);
      const double ef = test::relative_error(mri::forward(op, x), forward_ref);
      // The CPU NUFFT with the same kernel: the two differ by float rounding only.
      NufftOptions cpu = cuda_nufft(tol, g);
      cpu.backend = Backend::Cpu;
      const NufftOperator ref(t, grid, cpu);
      const double da = test::relative_error(mri::adjoint(op, y), mri::adjoint(ref, y));
      const double df = test::relative_error(mri::forward(op, x), mri::forward(ref, x));
      INFO("tol " << tol << ", " << to_string(g) << ": adjoint " << ea << ", forward " << ef << "; vs CPU NUFFT "
                  << da << ", " << df);
      CHECK(ea <= tol);
      CHECK(ef <= tol);
      CHECK(da <= 5e-6);
      CHECK(df <= 5e-6);
    }
  }
}

TEST_CASE("cuda nufft: GA and RGA agree to rounding; RGA is bitwise identical run to run; adjoint pair",
          "[gpu][gridding][small]") {
  const Grid grid = GENERATE(Grid(64, 48), Grid(16, 12, 10));
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", seed " << seed);
  const Trajectory t = traj::uniform_random(grid, 20011, seed);
  const auto y = test::random_complex(t.size(), seed + 1);
  const Image x = test::random_image(grid, seed + 2);
  const NufftOperator ga(t, grid, cuda_nufft(1e-3, Gridding::Scatter));
  const NufftOperator rga(t, grid, cuda_nufft(1e-3, Gridding::Gather));
  const Image a = mri::adjoint(rga, y);
  CHECK(bitwise_equal(a, mri::adjoint(rga, y)));
  CHECK(bitwise_equal(a, mri::adjoint(NufftOperator(t, grid, cuda_nufft(1e-3, Gridding::Gather)), y))); // a new plan too
  const double diff = test::relative_error(mri::adjoint(ga, y), a);
  INFO("|GA - RGA| / |RGA| = " << diff);
  CHECK(diff <= 2e-6);
  for (const NufftOperator *op : {&ga, &rga}) {
    const auto fx = mri::forward(*op, x);
    const Image fhy = mri::adjoint(*op, y);
    const cdouble lhs = test::inner(fx, y), rhs = test::inner(x.values(), fhy.values());
    auto norm = [](std::span<const cfloat> v) { return std::sqrt(test::inner(v, v).real()); };
    const double rel = std::abs(lhs - rhs) / (norm(fx) * norm(y) + norm(x.values()) * norm(fhy.values()));
    INFO(to_string(op->options().gridding) << ": adjointness " << rel);
    CHECK(rel <= 2e-6);
  }
}

// NufftOperator::adjoint_coils on CUDA (blocks of 4 coils through the coil-batched gather): each
// coil's image bitwise equal to adjoint() of that coil with RGA (the same sums in the same order)
// and with SMF (per coil, integer sums); with GA (atomics: the order of the adds varies run to
// run) within float rounding, 2e-6 as the GA/RGA test above; 1, 3 and 9 coils (blocks of 4, 4, 1).
TEST_CASE("cuda nufft: adjoint_coils equals adjoint per coil", "[gpu][gridding][sense][small]") {
  const Grid grid = GENERATE(Grid(64, 48), Grid(16, 12, 10));
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", seed " << seed);
  const Trajectory t = traj::uniform_random(grid, 7001, seed);
  const std::size_t m = t.size(), n = static_cast<std::size_t>(grid.voxels());
  for (const Gridding g : {Gridding::Gather, Gridding::Scatter, Gridding::ScatterFixed}) {
    const NufftOperator op(t, grid, cuda_nufft(1e-3, g));
    for (int coils : {1, 3, 9}) {
      INFO(to_string(g) << ", " << coils << " coils");
      const auto y = test::random_complex(coils * m, seed + coils);
      std::vector<cfloat> images(coils * n, cfloat(NAN, NAN));
      op.adjoint_coils(y.data(), coils, images.data());
      for (int c = 0; c < coils; ++c) {
        Image one(grid);
        op.adjoint(std::span<const cfloat>(y).subspan(c * m, m), one);
        const std::span<const cfloat> batched(images.data() + c * n, n);
        if (g != Gridding::Scatter)
          CHECK(std::memcmp(one.data(), batched.data(), n * sizeof(cfloat)) == 0);
        else
          CHECK(test::relative_error(one.values(), batched) <= 2e-6);
      }
    }
  }
}

TEST_CASE("cuda nufft: samples on the k-space edge and tiny grids wrap periodically", "[gpu][gridding][small]") {
  // 12 to 36 samples on grids of 12 to 96 voxels: few terms, so the relative error nears the
  // kernel's worst case (the old width choice, W = 6 at 1e-5, measured 1.12e-5 here on 6x4x4).
  // The plan's W now has a worst-case estimate within the tolerance (KaiserBessel::for_tolerance):
  // the exact sums within tol, and the CPU NUFFT's result to rounding (a wrong wrap is O(1)).
  for (const Grid g : {Grid(4, 4), Grid(8, 6), Grid(6, 4, 4), Grid(3, 5)}) {
    const Trajectory t = test::edge_trajectory(g);
    const auto y = test::random_complex(t.size(), 5);
    const Image x = test::random_image(g, 6);
    for (const Gridding gr : {Gridding::Scatter, Gridding::Gather}) {
      const NufftOperator op(t, g, cuda_nufft(1e-5, gr));
      NufftOptions cpu = cuda_nufft(1e-5, gr);
      cpu.backend = Backend::Cpu;
      const NufftOperator ref(t, g, cpu);
      const double ea = test::relative_error(mri::adjoint(op, y), exact_adjoint(t, y, g));
      const double ef = test::relative_error(mri::forward(op, x), exact_forward(t, x));
      const double da = test::relative_error(mri::adjoint(op, y), mri::adjoint(ref, y));
      const double df = test::relative_error(mri::forward(op, x), mri::forward(ref, x));
      INFO("grid " << g.nx() << "x" << g.ny() << "x" << g.nz() << ", " << to_string(gr) << ": " << ea << ", " << ef
                   << "; vs CPU " << da << ", " << df);
      CHECK(da <= 5e-6);
      CHECK(df <= 5e-6);
      CHECK(ea <= 1e-5);
      CHECK(ef <= 1e-5);
    }
  }
}

TEST_CASE("cuda nufft: M = 2^20 on 256^2 and M = 2^18 on 48^3 agree with the CPU NUFFT", "[gpu][gridding]") {
  for (const Grid grid : {Grid(256, 256), Grid(48, 48, 48)}) {
    const std::size_t m = grid.dims() == 2 ? std::size_t{1} << 20 : std::size_t{1} << 18;
    const Trajectory t = traj::uniform_random(grid, m, 99);
    const auto y = test::random_complex(t.size(), 100);
    const Image x = test::random_image(grid, 101);
    NufftOptions cpu;
    cpu.tolerance = 1e-3;
    const NufftOperator ref(t, grid, cpu);
    const Image ref_adj = mri::adjoint(ref, y);
    const auto ref_fwd = mri::forward(ref, x);
    for (const Gridding g : {Gridding::Scatter, Gridding::Gather}) {
      const NufftOperator op(t, grid, cuda_nufft(1e-3, g));
      const double da = test::relative_error(mri::adjoint(op, y), ref_adj);
      const double df = test::relative_error(mri::forward(op, x), ref_fwd);
      INFO(grid.dims() << "D, " << to_string(g) << ": vs CPU NUFFT adjoint " << da << ", forward " << df);
      CHECK(da <= 1e-5);
      CHECK(df <= 1e-5);
    }
  }
}

TEST_CASE("cuda nufft: Q by NUFFT on the device matches the exact Q", "[gpu][gridding][small]") {
  const Grid g(16, 12);
  const Trajectory t = traj::uniform_random(g, 700, 55);
  std::vector<float> w(t.size(), 0.5f);
  std::vector<cfloat> wc(w.begin(), w.end());
  Image exact(g.doubled());
  detail::adjoint_sum_f64(t, wc, g.doubled(), g, exact.data());
  const Image q = nufft_q(t, w, g, cuda_nufft(1e-4, Gridding::Gather));
  const double e = test::relative_error(q, exact);
  INFO("Q error " << e);
  CHECK(e <= 1e-4);
}

namespace {

using cuda::detail::ScatterMethod;

// The adjoint with Gridding::Scatter through the given scatter kernel.
Image scatter_adjoint(const NufftOperator &op, const std::vector<cfloat> &y, ScatterMethod method) {
  cuda::detail::device_plan_of(op).set_scatter_method(method);
  Image out = mri::adjoint(op, y);
  cuda::detail::device_plan_of(op).set_scatter_method(ScatterMethod::Auto);
  return out;
}

// `near_count` samples uniform within `radius` of k = 0 (a dense centre), then `background`
// uniform over the grid (seeds `seed` and `seed` + 1).
Trajectory cluster(const Grid &g, int near_count, float radius, int background, std::uint64_t seed) {
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  std::uniform_real_distribution<float> near(-radius, radius);
  std::vector<KPoint> p;
  for (int i = 0; i < near_count; ++i) p.push_back({near(rng), near(rng), g.dims() == 3 ? near(rng) : 0.0f});
  const Trajectory rest = test::random_trajectory(g, static_cast<std::size_t>(background), seed + 1);
  p.insert(p.end(), rest.points().begin(), rest.points().end());
  return Trajectory(g.dims(), p);
}

} // namespace

TEST_CASE("cuda nufft: SM tiles, GA and RGA agree with the CPU NUFFT for every width, partial and wrapped tiles",
          "[gpu][gridding][small]") {
  // Oversampled grids that are not multiples of the SM tiles (32 x 16 in 2D, 16 x 8 x 8 or
  // 16 x 8 x 4 in 3D) and grids smaller than one padded tile (the halo wraps onto the tile).
  const Grid grid = GENERATE(Grid(24, 20), Grid(70, 36), Grid(10, 8, 6), Grid(20, 9, 7), Grid(5, 4, 4));
  const std::uint64_t seed = fresh_seed();
  INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz() << ", seed " << seed);
  const Trajectory t = traj::uniform_random(grid, 3001, seed);
  const auto y = test::random_complex(t.size(), seed + 1);
  for (int width = 2; width <= cuda::detail::kMaxDeviceWidth; ++width) {
    NufftOptions o = cuda_nufft(1e-5, Gridding::Scatter);
    o.width = width;
    const NufftOperator op(t, grid, o);
    NufftOptions cpu = o;
    cpu.backend = Backend::Cpu;
    const Image ref = mri::adjoint(NufftOperator(t, grid, cpu), y);
    const Image sm = scatter_adjoint(op, y, ScatterMethod::Shared);
    const Image ga = scatter_adjoint(op, y, ScatterMethod::Global);
    o.gridding = Gridding::ScatterFixed;
    const Image fixed = mri::adjoint(NufftOperator(t, grid, o), y);
    o.gridding = Gridding::Gather;
    const Image rga = mri::adjoint(NufftOperator(t, grid, o), y);
    const double e_sm = test::relative_error(sm, ref), e_ga = test::relative_error(ga, ref),
                 e_rga = test::relative_error(rga, ref), sm_ga = test::relative_error(sm, ga),
                 e_fixed = test::relative_error(fixed, ref);
    INFO("W " << width << ": vs CPU NUFFT SM " << e_sm << ", GA " << e_ga << ", RGA " << e_rga << ", SM fixed "
              << e_fixed << "; SM vs GA " << sm_ga);
    CHECK(e_fixed <= 5e-6);
    // Auto: SM in 3D; in 2D SM from one sample per oversampled cell (24 x 20: 3001 samples on
    // 1920 cells), GA below (70 x 36: on 10080).
    const bool dense = static_cast<std::int64_t>(t.size()) >= op.oversampled_grid().voxels();
    CHECK(cuda::detail::device_plan_of(op).scatter_method() ==
          (grid.dims() == 3 || dense ? ScatterMethod::Shared : ScatterMethod::Global));
    if (grid.dims() == 2) CHECK(dense == (grid.nx() == 24));
    CHECK(e_sm <= 5e-6);
    CHECK(e_ga <= 5e-6);
    CHECK(e_rga <= 5e-6);
    CHECK(sm_ga <= 2e-6);
  }
}

TEST_CASE("cuda nufft: SM tiles with dense clusters (PROPELLER centre, one crowded tile)", "[gpu][gridding][small]") {
  // PROPELLER: every blade crosses the centre, whose tiles hold many chunks of samples.
  // 3D: 4100 samples within one cell's width of k = 0 (one tile, many chunks, heavy contention
  // on the same shared-memory points; 5 subproblems of at most 1024 samples, the last of 4, each
  // a block adding into the same grid points) plus a uniform background.
  std::vector<KPoint> p;
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> near(-0.4f, 0.4f), any(-8.0f, std::nextafter(8.0f, 0.0f));
  for (int i = 0; i < 4100; ++i) p.push_back({near(rng), near(rng), near(rng)});
  for (int i = 0; i < 1000; ++i) p.push_back({any(rng), any(rng), any(rng)});
  const std::vector<std::pair<Trajectory, Grid>> problems = {
      {traj::propeller(Grid(64, 64), 8, 16, 64), Grid(64, 64)}, {Trajectory(3, p), Grid(16, 16, 16)}};
  for (const auto &[t, grid] : problems) {
    const auto y = test::random_complex(t.size(), 23);
    NufftOptions cpu = cuda_nufft(1e-4, Gridding::Scatter);
    cpu.backend = Backend::Cpu;
    const Image ref = mri::adjoint(NufftOperator(t, grid, cpu), y);
    const NufftOperator op(t, grid, cuda_nufft(1e-4, Gridding::Scatter));
    const Image sm = scatter_adjoint(op, y, ScatterMethod::Shared);
    const Image ga = scatter_adjoint(op, y, ScatterMethod::Global);
    const Image fixed = mri::adjoint(NufftOperator(t, grid, cuda_nufft(1e-4, Gridding::ScatterFixed)), y);
    const Image rga = mri::adjoint(NufftOperator(t, grid, cuda_nufft(1e-4, Gridding::Gather)), y);
    const double e_sm = test::relative_error(sm, ref), e_ga = test::relative_error(ga, ref),
                 e_rga = test::relative_error(rga, ref), e_fixed = test::relative_error(fixed, ref);
    INFO(grid.dims() << "D, M = " << t.size() << ": vs CPU NUFFT SM " << e_sm << ", GA " << e_ga << ", RGA " << e_rga
                     << ", SM fixed " << e_fixed);
    CHECK(e_fixed <= 5e-6);
    CHECK(e_sm <= 5e-6);
    CHECK(e_ga <= 5e-6);
    CHECK(e_rga <= 5e-6);
  }
}

TEST_CASE("cuda nufft: SM in fixed point is bitwise identical run to run, on a new plan and at any scale of the values",
          "[gpu][gridding][small]") {
  // A crowded 3D centre (4100 samples within 0.4 of k = 0: one tile, five subproblems adding
  // into the same points, heavy shared-memory contention) plus a uniform background, 2D alike:
  // where float atomics give different last bits from run to run, integer ones may not. Values
  // scaled by 2^-100 and 2^100 (the fixed-point scale follows max |value|, scatter_shared.cuh
  // SmAcc): scaled back, the image stays within 5e-6 of the CPU NUFFT.
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  for (const Grid &grid : {Grid(16, 16, 16), Grid(40, 36)}) {
    const Trajectory t = cluster(grid, 4100, 0.4f, 1000, seed);
    const auto y = test::random_complex(t.size(), seed + 2);
    NufftOptions cpu = cuda_nufft(1e-4, Gridding::Scatter);
    cpu.backend = Backend::Cpu;
    const Image ref = mri::adjoint(NufftOperator(t, grid, cpu), y);
    const NufftOperator op(t, grid, cuda_nufft(1e-4, Gridding::ScatterFixed));
    const Image a = mri::adjoint(op, y);
    INFO(grid.dims() << "D: vs CPU NUFFT " << test::relative_error(a, ref));
    CHECK(test::relative_error(a, ref) <= 5e-6);
    for (int run = 0; run < 3; ++run) CHECK(bitwise_equal(a, mri::adjoint(op, y)));
    const NufftOperator again(t, grid, cuda_nufft(1e-4, Gridding::ScatterFixed));
    CHECK(bitwise_equal(a, mri::adjoint(again, y)));
    for (const int e : {-100, 100}) {
      std::vector<cfloat> scaled(y);
      for (auto &v : scaled) v *= std::ldexp(1.0f, e);
      const Image b = mri::adjoint(op, scaled);
      std::vector<cfloat> back(b.values().begin(), b.values().end());
      for (auto &v : back) v *= std::ldexp(1.0f, -e);
      INFO("values x 2^" << e << ": vs CPU NUFFT " << test::relative_error(Image(grid, back), ref));
      CHECK(test::relative_error(Image(grid, back), ref) <= 5e-6);
    }
  }
}

// Gridding::Auto on CUDA (lib/nufft/nufft_setup.cpp, deterministic_gridding): SMF, but the gather in 3D
// at W 3 (tolerance 3e-2 -> W 3, 1e-3 -> W 5: both branches). options() says which ran, and the
// image is bitwise that method's, run to run.
TEST_CASE("cuda nufft: Gridding::Auto runs SM in fixed point, the gather in 3D at width 3", "[gpu][gridding][small]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  for (const Grid &grid : {Grid(16, 16, 16), Grid(40, 36)})
    for (const double tolerance : {3e-2, 1e-3}) {
      const Trajectory t = cluster(grid, 2000, 0.4f, 1000, seed);
      const auto y = test::random_complex(t.size(), seed + 2);
      const NufftOperator op(t, grid, cuda_nufft(tolerance, Gridding::Auto));
      const int width = op.kernel().width;
      INFO(grid.dims() << "D, tolerance " << tolerance << ", W " << width);
      CHECK(width == (tolerance > 1e-2 ? 3 : 5));
      const Gridding expected = grid.dims() == 3 && width == 3 ? Gridding::Gather : Gridding::ScatterFixed;
      CHECK(op.options().gridding == expected);
      const Image a = mri::adjoint(op, y);
      CHECK(bitwise_equal(a, mri::adjoint(op, y)));
      CHECK(bitwise_equal(a, mri::adjoint(NufftOperator(t, grid, cuda_nufft(tolerance, expected)), y)));
    }
}

TEST_CASE("cuda nufft: RGA's dense items (a block each): accurate, bitwise run to run and coil-batched",
          "[gpu][gridding][sense][small]") {
  // Clusters whose work items hold more samples than the dense threshold (gather_rga.cuh:
  // kGatherDense<D, W>, 256-1024):
  // 3D, 4100 samples within 0.4 of k = 0 on 16^3 plus a uniform background; 2D, 3000 within 0.3
  // on 40 x 36 plus a background. Their sums are split over a block's threads and added by a
  // fixed tree: within float rounding of the CPU NUFFT, the same bits on every run, and the
  // coil-batched gather (6 coils: a block of 4 and one of 2) sums each coil in the same order.
  const std::pair<Trajectory, Grid> problems[] = {{cluster(Grid(16, 16, 16), 4100, 0.4f, 1000, 31), Grid(16, 16, 16)},
                                                  {cluster(Grid(40, 36), 3000, 0.3f, 800, 31), Grid(40, 36)}};
  for (const auto &[t, g] : problems) {
    const std::uint64_t seed = fresh_seed();
    INFO(g.dims() << "D, M = " << t.size() << ", seed " << seed);
    const int coils = 6;
    const std::size_t m = t.size(), n = static_cast<std::size_t>(g.voxels());
    const auto y = test::random_complex(coils * m, seed);
    const auto plan = cuda::detail::make_device_nufft_plan(t, g, cuda_nufft(1e-4, Gridding::Gather));
    const unsigned dense = plan->dense_gather_items();
    INFO(dense << " dense items");
    CHECK(dense > 0);
    NufftOptions cpu = cuda_nufft(1e-4, Gridding::Gather);
    cpu.backend = Backend::Cpu;
    const NufftOperator ref(t, g, cpu);
    std::vector<Image> single;
    for (int c = 0; c < coils; ++c) {
      single.emplace_back(g);
      plan->adjoint(y.data() + c * m, single.back().data(), Gridding::Gather);
      Image by_cpu(g);
      ref.adjoint(std::span<const cfloat>(y).subspan(c * m, m), by_cpu);
      const double e = test::relative_error(single.back(), by_cpu);
      INFO("coil " << c << ": vs CPU NUFFT " << e);
      CHECK(e <= 5e-6);
    }
    Image again(g);
    plan->adjoint(y.data(), again.data(), Gridding::Gather);
    CHECK(bitwise_equal(again, single[0]));
    std::vector<cfloat> batched(coils * n);
    plan->adjoint_coils(y.data(), coils, batched.data(), Gridding::Gather);
    for (int c = 0; c < coils; ++c) {
      INFO("coil " << c);
      CHECK(bitwise_equal(Image(g, std::vector<cfloat>(batched.begin() + c * n, batched.begin() + (c + 1) * n)),
                          single[c]));
    }
  }
}

// NufftOperator plans with the samples as given; the plan's device range check finds those
// outside [-n/2, n/2), and the operator then wraps them (Trajectory::wrapped) and plans again.
// make_device_nufft_plan refuses them, naming the sample.
TEST_CASE("cuda nufft: samples outside the grid and wrong dims throw InvalidArgument (device range check)",
          "[gpu][gridding][small]") {
  const Grid g2(16, 12), g3(8, 8, 6);
  std::vector<KPoint> p(100);
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = {static_cast<float>(i % 16) - 8.0f, static_cast<float>(i % 12) - 6.0f, 0.0f};
  CHECK_NOTHROW(NufftOperator(Trajectory(2, p), g2, cuda_nufft(1e-3, Gridding::Gather)));
  for (const KPoint bad : {KPoint{8.0f, 0.0f, 0.0f}, KPoint{0.0f, -6.5f, 0.0f}, KPoint{-9.0f, 0.0f, 0.0f}}) {
    std::vector<KPoint> q = p;
    q[57] = bad;
    CHECK_THROWS_AS(cuda::detail::make_device_nufft_plan(Trajectory(2, q), g2, cuda_nufft(1e-3, Gridding::Gather)),
                    InvalidArgument);
    const NufftOperator wrapped(Trajectory(2, q), g2, cuda_nufft(1e-3, Gridding::Gather)); // its periodic image
    CHECK(wrapped.trajectory().check_range(g2) == 0);
    CHECK(wrapped.trajectory()[57].kx == (bad.kx == 8.0f ? -8.0f : bad.kx == -9.0f ? 7.0f : 0.0f));
  }
  std::vector<KPoint> r(50, KPoint{0.5f, -0.25f, 2.0f});
  CHECK_NOTHROW(NufftOperator(Trajectory(3, r), g3, cuda_nufft(1e-3, Gridding::Scatter)));
  r[49].kz = 3.0f; // n_z / 2
  CHECK_THROWS_AS(cuda::detail::make_device_nufft_plan(Trajectory(3, r), g3, cuda_nufft(1e-3, Gridding::Scatter)),
                  InvalidArgument);
  r[49].kz = 9.5f; // beyond 3 n_z / 2: refused before the device
  CHECK_THROWS_AS(NufftOperator(Trajectory(3, r), g3, cuda_nufft(1e-3, Gridding::Scatter)), InvalidArgument);
  CHECK_THROWS_AS(NufftOperator(Trajectory(2, p), g3, cuda_nufft(1e-3, Gridding::Gather)), InvalidArgument); // dims
  // Large enough for the pinned upload ring; the plan after the failed one is unaffected.
  const Grid g(64, 64);
  std::vector<KPoint> big = traj::uniform_random(g, std::size_t{1} << 17, 41).points();
  big[100000] = KPoint{0.0f, 32.0f, 0.0f};
  CHECK_THROWS_AS(cuda::detail::make_device_nufft_plan(Trajectory(2, big), g, cuda_nufft(1e-3, Gridding::Gather)),
                  InvalidArgument);
  big[100000] = KPoint{0.0f, 31.5f, 0.0f};
  const Trajectory ok(2, big);
  const auto y = test::random_complex(ok.size(), 42);
  NufftOptions cpu = cuda_nufft(1e-3, Gridding::Gather);
  cpu.backend = Backend::Cpu;
  CHECK(test::relative_error(mri::adjoint(NufftOperator(ok, g, cuda_nufft(1e-3, Gridding::Gather)), y),
                             mri::adjoint(NufftOperator(ok, g, cpu), y)) <= 5e-6);
}

TEST_CASE("cuda nufft: plans of one shape share the cached cuFFT plans and pooled memory safely",
          "[gpu][gridding][small]") {
  const Grid grid = GENERATE(Grid(40, 36), Grid(12, 10, 8));
  const Trajectory t = traj::uniform_random(grid, 5000, 31);
  const auto y = test::random_complex(t.size(), 32);
  const Image x = test::random_image(grid, 33);
  auto a = std::make_unique<NufftOperator>(t, grid, cuda_nufft(1e-3, Gridding::Gather));
  const NufftOperator b(t, grid, cuda_nufft(1e-3, Gridding::Gather)); // alive together: two cuFFT plans
  const Image ya = mri::adjoint(*a, y);
  const auto fa = mri::forward(*a, x);
  CHECK(bitwise_equal(ya, mri::adjoint(b, y)));
  CHECK(mri::forward(b, x) == fa);
  cuda::detail::release_gridding_cache(); // live plans keep theirs
  CHECK(bitwise_equal(ya, mri::adjoint(*a, y)));
  a.reset(); // its cuFFT plan and buffers go back to the caches
  const NufftOperator c(t, grid, cuda_nufft(1e-3, Gridding::Gather));
  CHECK(bitwise_equal(ya, mri::adjoint(c, y)));
  CHECK(mri::forward(c, x) == fa);
  CHECK(bitwise_equal(ya, mri::adjoint(b, y)));
  cuda::detail::release_gridding_cache();
  const NufftOperator d(t, grid, cuda_nufft(1e-3, Gridding::Gather));
  CHECK(bitwise_equal(ya, mri::adjoint(d, y)));
}

TEST_CASE("cuda nufft: a plan from device points (scaled) equals the plan from the host trajectory",
          "[gpu][gridding][small]") {
  // reconstruct uploads k once and makes the F^H D plan (scale 1) and Q's plan on the doubled
  // grid (scale 2; 0 on axes of extent 1) from it: both must be the host-trajectory plans,
  // bitwise (2k is exact in float, the setup computes the same values). The host trajectory goes
  // up from pageable memory under 1 MB, above through the pinned ring in chunks (150001 points:
  // 1.8 MB, a partial last chunk).
  const std::pair<Grid, int> cases[] = {{Grid(20, 14), 700}, {Grid(9, 8, 7), 700}, {Grid(64, 48), 150001}};
  for (const auto &[g, m] : cases) {
    const std::uint64_t seed = fresh_seed();
    INFO(g.nx() << "x" << g.ny() << "x" << g.nz() << ", " << m << " points, seed " << seed);
    const Trajectory t = test::random_trajectory(g, m, seed);
    const auto y = test::random_complex(t.size(), seed + 1);
    const NufftOptions o = cuda_nufft(1e-3, Gridding::Gather);
    const cuda::detail::DevicePoints points(t);
    REQUIRE(points.size() == t.size());
    const auto run = [&](const auto &plan, const Grid &grid) { // the plan, or the operator's behind the interface
      Image out(grid);
      plan->adjoint(y.data(), out.data(), Gridding::Gather);
      return out;
    };
    CHECK(bitwise_equal(run(cuda::detail::make_device_nufft_plan(points.data(), t.size(), g, o, {1, 1, 1}), g),
                        run(mri::detail::NufftAccess::device_plan(NufftOperator(t, g, o)), g)));
    const auto two = [&](int a) { return g.extent(a) > 1 ? 2.0f : 0.0f; };
    CHECK(bitwise_equal(
        run(cuda::detail::make_device_nufft_plan(points.data(), t.size(), g.doubled(), o, {two(0), two(1), two(2)}),
            g.doubled()),
        run(mri::detail::NufftAccess::device_plan(NufftOperator(mri::detail::q_trajectory(t, g), g.doubled(), o)), g.doubled())));
    // Scaled out of the grid: refused on the device check.
    CHECK_THROWS_AS(cuda::detail::make_device_nufft_plan(points.data(), t.size(), g, o, {3, 3, 3}), InvalidArgument);
  }
}

TEST_CASE("cuda nufft: the coil-batched adjoint equals the per-coil adjoint, bitwise", "[gpu][gridding][sense][small]") {
  // SENSE's F^H D grids kCoilBlock coils per pass (one read of each sample's cells and weights):
  // the same sums in the same order as one coil at a time. 6 coils: a full block and a partial one.
  for (const Grid g : {Grid(24, 18), Grid(10, 9, 8)}) {
    const std::uint64_t seed = fresh_seed();
    INFO(g.nx() << "x" << g.ny() << "x" << g.nz() << ", seed " << seed);
    const int coils = 6;
    const Trajectory t = test::random_trajectory(g, 900, seed);
    const auto y = test::random_complex(coils * t.size(), seed + 1);
    const auto plan = cuda::detail::make_device_nufft_plan(t, g, cuda_nufft(1e-3, Gridding::Gather));
    const std::size_t m = t.size(), n = static_cast<std::size_t>(g.voxels());
    std::vector<Image> single;
    for (int c = 0; c < coils; ++c) {
      single.emplace_back(g);
      plan->adjoint(y.data() + c * m, single.back().data(), Gridding::Gather);
    }
    // Device arrays of coils * M and coils * N values (DeviceImages on flat grids).
    cuda::DeviceImage d_y(Grid(static_cast<std::int64_t>(y.size()), 1));
    cuda::DeviceImage d_x(Grid(static_cast<std::int64_t>(coils * n), 1));
    d_y.upload(y.data());
    plan->adjoint_coils_device(d_y.data(), coils, d_x.data(), Gridding::Gather);
    plan->synchronize();
    std::vector<cfloat> batched(coils * n);
    d_x.download(batched.data());
    for (int c = 0; c < coils; ++c) {
      INFO("coil " << c);
      const Image one(g, std::vector<cfloat>(batched.begin() + c * n, batched.begin() + (c + 1) * n));
      CHECK(bitwise_equal(one, single[c]));
    }
  }
}
