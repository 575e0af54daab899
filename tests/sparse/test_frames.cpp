// Joint reconstruction of frames (mri/dynamic.hpp, mri/frame_terms.hpp): one frame equals
// reconstruct bitwise, TV along the frames is the float64 minimum of its denoising problem and its
// transform is adjoint, locally low rank as a frame term, a static object seen through frames of
// different spokes gains from the temporal term, and bad frames or terms are refused.
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "catch.hpp"
#include "mri/dynamic.hpp"
#include "mri/error.hpp"
#include "mri/frame_terms.hpp"
#include "mri/metrics.hpp"
#include "mri/phantom.hpp"
#include "mri/proximal_solvers.hpp"
#include "recon_test_options.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

using Stack = FrameStack<Image>;

Stack random_stack(const Grid &grid, int frames, std::uint64_t seed) {
  Stack s;
  for (int f = 0; f < frames; ++f) s.frames.push_back(test::random_image(grid, seed + static_cast<std::uint64_t>(f)));
  return s;
}

SparseTerm temporal_tv(double lambda) {
  SparseTerm t;
  t.penalty = SparsePenalty::TotalVariation;
  t.axes = kFrameAxis;
  t.lambda = lambda;
  return t;
}

// `frames` frames of a 48^2 Shepp-Logan, each from its own `spokes` golden-angle spokes of one
// continuous acquisition (frame f: spokes f*spokes .. (f+1)*spokes - 1), 2 coils, SNR 30.
struct StaticSeries {
  Grid grid{48, 48};
  Image truth = Phantom::shepp_logan_2d().rasterize(grid);
  std::vector<KSpaceData> frames;
  StaticSeries(int count, int spokes) {
    const Trajectory all = traj::radial(grid, count * spokes, 96, traj::SpokeOrder::GoldenAngle);
    const std::size_t per = static_cast<std::size_t>(spokes) * 96;
    for (int f = 0; f < count; ++f) {
      std::vector<KPoint> points(all.points().begin() + static_cast<std::ptrdiff_t>(f * per),
                                 all.points().begin() + static_cast<std::ptrdiff_t>((f + 1) * per));
      const Trajectory t(2, std::move(points));
      std::vector<cfloat> one = Phantom::shepp_logan_2d().kspace(t, grid);
      std::vector<cfloat> two = one; // a second coil: the first times a smooth phase-free weight
      for (std::size_t m = 0; m < two.size(); ++m) two[m] *= 0.5f;
      one.insert(one.end(), two.begin(), two.end());
      add_noise(one, 30.0, 40 + static_cast<std::uint64_t>(f));
      frames.emplace_back(t, std::move(one), std::vector<float>{}, 2);
    }
  }
};

double scaled_psnr(const Image &x, const Image &truth) {
  Image s = x;
  const cfloat a = best_scale(x, truth);
  for (cfloat &v : s.values()) v *= a;
  return psnr(s, truth);
}

double mean_psnr(const std::vector<Image> &frames, const Image &truth) {
  double sum = 0;
  for (const Image &f : frames) sum += scaled_psnr(f, truth);
  return sum / static_cast<double>(frames.size());
}

} // namespace

TEST_CASE("frames: one frame is reconstruct's image bitwise (CG and FISTA)", "[sparse][frames]") {
  const StaticSeries s(1, 20);
  ReconOptions o = test::fixed_iterations(8);
  SECTION("cg") {}
  SECTION("fista, wavelet") {
    SparseTerm w;
    w.penalty = SparsePenalty::L1Wavelet;
    w.lambda = 0.05;
    o.solver.terms = {w};
  }
  const ReconResult single = reconstruct(s.frames[0], s.grid, o);
  const FramesResult joint = reconstruct_frames(s.frames, s.grid, o);
  REQUIRE(joint.frames.size() == 1);
  CHECK(joint.frames[0].values() == single.image.values());
  CHECK(joint.report.iterations == single.report.iterations);
  CHECK(joint.report.solver == single.report.solver);
  CHECK(joint.report.data_scale == single.report.data_scale);
  CHECK(joint.report.maps == single.report.maps);
}

TEST_CASE("frames: TV along the frames is adjoint and bounded by 4", "[sparse][frames]") {
  const Grid grid(5, 4);
  const Stack like = random_stack(grid, 4, 11);
  FrameTermOps<Image> term(temporal_tv(1.0), grid, like, false, 1);
  const Stack x = random_stack(grid, 4, 21);
  Stack z = term.make_range(like);
  REQUIRE(z.size() == 3);
  const Stack y = random_stack(grid, 3, 31);
  Stack dx = term.make_range(like), dty = VectorOps<Stack>::like(like);
  term.transform(x, dx);
  term.transform_adjoint(y, dty);
  // <D x, y> = <x, D^H y>: sums of float products, 1e-5 relative to the sums' scale.
  const auto lhs = VectorOps<Stack>::dot(dx, y), rhs = VectorOps<Stack>::dot(x, dty);
  CHECK(std::abs(lhs - rhs) <= 1e-5 * std::sqrt(VectorOps<Stack>::norm2(dx) * VectorOps<Stack>::norm2(y)));
  // D x against its definition, frame by frame.
  for (std::size_t f = 0; f + 1 < x.size(); ++f)
    for (std::size_t v = 0; v < x[f].values().size(); ++v)
      CHECK(dx[f].values()[v] == x[f + 1].values()[v] - x[f].values()[v]);
  CHECK(term.transform_norm2() == 4.0);
  CHECK(VectorOps<Stack>::norm2(dx) <= 4.0 * VectorOps<Stack>::norm2(x));
}

namespace {
// The float64 minimum of 0.5 sum_f |x_f - b_f|^2 + lambda sum_f |x_{f+1} - x_f| for one voxel's
// series b (complex), by projected gradient on the dual (Chambolle 2004): x = b - D^H p,
// p <- P_{|p| <= lambda}(p + D x / 4), to convergence (20000 iterations on 6 values).
std::vector<cdouble> tv1d_reference(const std::vector<cdouble> &b, double lambda) {
  const std::size_t n = b.size();
  std::vector<cdouble> p(n - 1, 0.0), x = b;
  for (int k = 0; k < 20000; ++k) {
    for (std::size_t f = 0; f < n; ++f)
      x[f] = b[f] - ((f > 0 ? p[f - 1] : 0.0) - (f + 1 < n ? p[f] : 0.0));
    for (std::size_t f = 0; f + 1 < n; ++f) {
      const cdouble q = p[f] + (x[f + 1] - x[f]) / 4.0;
      p[f] = std::abs(q) > lambda ? q * (lambda / std::abs(q)) : q;
    }
  }
  return x;
}
} // namespace

TEST_CASE("frames: ADMM and primal-dual with TV along the frames reach the float64 minimum", "[sparse][frames]") {
  // N = identity: the problem is TV denoising along the frames, voxel by voxel.
  const Grid grid(3, 2);
  const int frames = 6;
  const Stack b = random_stack(grid, frames, 301);
  const double lambda = 0.4;
  const auto identity = [](const Stack &x, Stack &out) { VectorOps<Stack>::copy(x, out); };
  ProximalSettings settings;
  settings.algorithm = GENERATE(ProximalAlgorithm::Admm, ProximalAlgorithm::PrimalDual, ProximalAlgorithm::Auto);
  settings.cycle_spinning = false;
  settings.admm_cg_tolerance = 0;
  ProximalSolver<decltype(identity), Stack, VectorOps<Stack>, SparseOps<Image>, FrameTermOps<Image>> solver(
      identity, grid, {temporal_tv(lambda)}, settings);
  solver.set_max_iterations(400).set_tolerance(0);
  const Stack x = solver.solve(b);
  CHECK(solver.algorithm() != ProximalAlgorithm::Fista); // Auto: no map on the image, ADMM
  double err2 = 0, ref2 = 0;
  for (std::int64_t v = 0; v < grid.voxels(); ++v) {
    std::vector<cdouble> series;
    for (int f = 0; f < frames; ++f) series.push_back(cdouble(b[static_cast<std::size_t>(f)].values()[static_cast<std::size_t>(v)]));
    const std::vector<cdouble> ref = tv1d_reference(series, lambda);
    for (int f = 0; f < frames; ++f) {
      err2 += std::norm(cdouble(x[static_cast<std::size_t>(f)].values()[static_cast<std::size_t>(v)]) - ref[static_cast<std::size_t>(f)]);
      ref2 += std::norm(ref[static_cast<std::size_t>(f)]);
    }
  }
  INFO(to_string(solver.algorithm()));
  // 1e-4: float32 iterates of a converged solver (the reference is float64 to ~1e-12).
  CHECK(std::sqrt(err2 / ref2) < 1e-4);
}

TEST_CASE("frames: locally low rank as a frame term is the block SVD's shrink", "[sparse][frames]") {
  const Grid grid(8, 6);
  const Stack x = random_stack(grid, 5, 501);
  SparseTerm llr;
  llr.penalty = SparsePenalty::LocallyLowRank;
  llr.lambda = 2.0;
  llr.block = 4;
  FrameTermOps<Image> term(llr, grid, x, false, 3);
  CHECK(term.acts_on_image());
  Stack shrunk = x;
  term.prox(0.75, shrunk); // threshold 1.5
  std::vector<cfloat> contiguous;
  for (const Image &f : x.frames) contiguous.insert(contiguous.end(), f.values().begin(), f.values().end());
  locally_low_rank_shrink(contiguous.data(), grid, 5, 4, {0, 0, 0}, 1.5);
  for (std::size_t f = 0; f < 5; ++f)
    CHECK(std::equal(shrunk[f].values().begin(), shrunk[f].values().end(),
                     contiguous.begin() + static_cast<std::ptrdiff_t>(f * 48)));
  // value: lambda times the nuclear norms, which the shrink's return gives too.
  std::vector<cfloat *> pointers;
  Stack copy = x;
  for (Image &f : copy.frames) pointers.push_back(f.data());
  const double nuclear = locally_low_rank_shrink(pointers, grid, 0, 4, {0, 0, 0}, 0.0);
  Stack range = term.make_range(x);
  CHECK(std::abs(term.value(x, range) - 2.0 * nuclear) <= 1e-12 * nuclear);
}

TEST_CASE("frames: TV along the frames shares a static object's spokes between frames", "[sparse][frames]") {
  // 4 frames of 12 spokes each (48^2: ~6x below Nyquist per frame); the object does not move, so
  // TV along the frames lets each frame borrow the others' spokes.
  const StaticSeries s(4, 12);
  ReconOptions l2 = test::fixed_iterations(8);
  const FramesResult alone = reconstruct_frames(s.frames, s.grid, l2);
  ReconOptions joint = test::fixed_iterations(40);
  joint.solver.terms = {temporal_tv(0.05)};
  const FramesResult together = reconstruct_frames(s.frames, s.grid, joint);
  const double psnr_alone = mean_psnr(alone.frames, s.truth), psnr_joint = mean_psnr(together.frames, s.truth);
  INFO("frame by frame " << psnr_alone << " dB, with TV along the frames " << psnr_joint << " dB");
  CHECK(psnr_joint > psnr_alone + 2.0);
  CHECK(together.report.solver == "admm");
  CHECK(together.report.objective.back() < together.report.objective.front());
  CHECK(together.report.maps.find("estimated") == 0);
  REQUIRE(together.frames.size() == 4);
}

TEST_CASE("frames: join_frames keeps every sample and coil in order", "[sparse][frames]") {
  const StaticSeries s(3, 4);
  const KSpaceData all = join_frames(s.frames);
  REQUIRE(all.samples_per_coil() == 3 * 4 * 96);
  REQUIRE(all.coils() == 2);
  const std::size_t m = 4 * 96;
  for (int c = 0; c < 2; ++c)
    for (std::size_t f = 0; f < 3; ++f)
      for (std::size_t i = 0; i < m; i += 37) {
        CHECK(all.samples()[c * all.samples_per_coil() + f * m + i] == s.frames[f].samples()[c * m + i]);
        CHECK(all.trajectory()[f * m + i].kx == s.frames[f].trajectory()[i].kx);
      }
}

TEST_CASE("frames: bad frames and terms are refused naming them", "[sparse][frames][bad-input]") {
  const StaticSeries s(2, 4);
  const ReconOptions o = test::fixed_iterations(2);
  CHECK_THROWS_WITH(reconstruct_frames({}, s.grid, o), test::contains("frames.size() = 0"));
  std::vector<KSpaceData> mixed = s.frames;
  mixed[1] = KSpaceData(s.frames[1].trajectory(),
                        std::vector<cfloat>(s.frames[1].samples().begin(),
                                            s.frames[1].samples().begin() + static_cast<std::ptrdiff_t>(s.frames[1].samples_per_coil())));
  CHECK_THROWS_WITH(reconstruct_frames(mixed, s.grid, o), test::contains("frames[1].coils() = 1"));
  ReconOptions one_frame = o;
  one_frame.solver.terms = {temporal_tv(0.1)};
  CHECK_THROWS_WITH(reconstruct_frames({s.frames[0]}, s.grid, one_frame), test::contains("frames = 1"));
  ReconOptions mixed_axes = o;
  mixed_axes.solver.terms = {temporal_tv(0.1)};
  mixed_axes.solver.terms[0].axes = kFrameAxis | 3u;
  CHECK_THROWS_WITH(reconstruct_frames(s.frames, s.grid, mixed_axes), test::contains("mixes the frame axis"));
  ReconOptions fista = one_frame;
  fista.solver.proximal.algorithm = ProximalAlgorithm::Fista;
  CHECK_THROWS_WITH(reconstruct_frames(s.frames, s.grid, fista), test::contains("fista"));
  ReconOptions gpu = o;
  gpu.backend = Backend::Cuda;
  CHECK_THROWS_AS(reconstruct_frames(s.frames, s.grid, gpu), Unsupported);
  // A frame term in a single-image reconstruction.
  ReconOptions single = o;
  single.solver.terms = {parse_bart_term("L:3:3:0.01")};
  CHECK_THROWS_WITH(reconstruct(s.frames[0], s.grid, single), test::contains("needs a stack of frames"));
  single.solver.terms = {parse_bart_term("T:1024:0:0.01")};
  CHECK_THROWS_WITH(reconstruct(s.frames[0], s.grid, single), test::contains("needs a stack of frames"));
  ReconOptions big_block = o;
  big_block.solver.terms = {parse_bart_term("L:3:3:0.01")};
  big_block.solver.terms[0].block = 64;
  CHECK_THROWS_WITH(reconstruct_frames(s.frames, s.grid, big_block), test::contains("block = 64"));
}

TEST_CASE("frames: BART's T:1024 and L:7:7 read as frame terms", "[sparse][frames]") {
  const SparseTerm t = parse_bart_term("T:1024:0:0.002");
  CHECK(is_temporal(t));
  CHECK(t.penalty == SparsePenalty::TotalVariation);
  const SparseTerm l = parse_bart_term("L:7:7:0.02");
  CHECK(l.penalty == SparsePenalty::LocallyLowRank);
  CHECK(l.axes == 7u);
  CHECK(l.joint == 0u);
  CHECK_THROWS_WITH(parse_bart_term("W:3:1024:0.01"), test::contains("joint"));
  CHECK_THROWS_WITH(parse_bart_term("T:2048:0:0.01"), test::contains("DIMS"));
}
