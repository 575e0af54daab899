// Samples at and beyond the grid's edge |k| = n/2 (docs/conventions.md): on the integer voxel grid
// k and k + n are the same DFT sample, so every operator must give, for a trajectory outside
// [-n/2, n/2), the sums of the definition with the k as given; beyond 3n/2 is an error.
#include <cmath>

#include "catch.hpp"
#include "mri/mri.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// (F x)_m = sum_n x_n exp(-i 2 pi sum_a k_ma x_a / n_a) in double with the k as given: the
// definition, independent of any wrapping.
std::vector<cdouble> forward_definition(const Trajectory &t, const Image &x) {
  const Grid &g = x.grid();
  std::vector<cdouble> out(t.size());
  for (std::size_t m = 0; m < t.size(); ++m) {
    cdouble s = 0;
    for (std::int64_t z = 0; z < g.nz(); ++z)
      for (std::int64_t y = 0; y < g.ny(); ++y)
        for (std::int64_t xi = 0; xi < g.nx(); ++xi) {
          const double phase = -2 * M_PI *
                               (t[m].kx * static_cast<double>(g.coordinate(0, xi)) / static_cast<double>(g.nx()) +
                                t[m].ky * static_cast<double>(g.coordinate(1, y)) / static_cast<double>(g.ny()) +
                                t[m].kz * static_cast<double>(g.coordinate(2, z)) / static_cast<double>(g.nz()));
          s += cdouble(x.at(xi, y, z)) * cdouble(std::cos(phase), std::sin(phase));
        }
    out[m] = s;
  }
  return out;
}

} // namespace

TEST_CASE("edge: wrapped() maps every k to its periodic image in [-n/2, n/2)", "[edge][trajectory]") {
  const Grid g(16, 15);
  const Trajectory t(2, {{8.0f, 7.5f, 0}, {-8.0f, -7.5f, 0}, {23.9f, -22.0f, 0}, {-24.0f, 22.5f, 0}, {3.25f, -1.0f, 0}});
  CHECK(t.check_range(g) == 3); // samples 0, 2, 3 (n/2 itself is outside: the interval is half-open)
  const Trajectory w = t.wrapped(g);
  CHECK_NOTHROW(w.check_within(g));
  CHECK(w[0].kx == -8.0f);   // n/2 -> -n/2
  CHECK(w[0].ky == -7.5f);   // odd n: 7.5 -> -7.5
  CHECK(w[1].kx == -8.0f);   // -n/2 stays
  CHECK(w[1].ky == -7.5f);
  CHECK(w[2].kx == Approx(7.9f).margin(1e-5)); // 23.9 - 16
  CHECK(w[2].ky == Approx(-7.0f).margin(1e-5)); // -22 + 15
  CHECK(w[3].kx == -8.0f);                      // -24 + 16
  CHECK(w[3].ky == Approx(7.5f - 15.0f).margin(1e-5)); // 22.5 - 15 = 7.5 = n/2 -> -7.5
  CHECK(w[4].kx == 3.25f);
  CHECK(w[4].ky == -1.0f);
  CHECK_THROWS_WITH(Trajectory(2, {{0, 0, 0}, {24.01f, 0, 0}}).check_range(g),
                    test::contains("trajectory[1]") && test::contains("beyond 3n/2"));
  CHECK_THROWS_AS(Trajectory(3, {{0, 0, 0}}).check_range(g), InvalidArgument); // dims differ
}

TEST_CASE("edge: F, F^H and Q on samples beyond the edge are the definition's sums", "[edge][fourier]") {
  // Tolerance: float32 operators (accurate phases, float sums) reach ~1e-6 on these sizes;
  // 1e-5 is the F^H D suite's bar. A wrong wrap (k moved by anything but a multiple of n) is
  // O(1) wrong.
  for (const Grid g : {Grid(16, 12), Grid(7, 6, 5)}) {
    const std::uint64_t seed = 1234 + static_cast<std::uint64_t>(g.voxels());
    INFO(g.nx() << "x" << g.ny() << "x" << g.nz() << ", seed " << seed);
    const Trajectory t = test::beyond_edge_trajectory(g, 300, seed);
    REQUIRE(t.check_range(g) > 150); // most samples moved out, the edge samples too
    const Image x = test::random_image(g, seed + 1);
    const std::vector<cdouble> reference = forward_definition(t, x);
    for (const Precision p : {Precision::Float32, Precision::Float64}) {
      const FourierOperator f(t, g, {Backend::Cpu, p});
      CHECK(test::relative_error(mri::forward(f, x), reference) < 1e-5);
      // Adjointness against the same definition: <F x, y> = <x, F^H y>.
      const auto y = test::random_complex(t.size(), seed + 2);
      cdouble lhs = 0;
      for (std::size_t m = 0; m < t.size(); ++m) lhs += std::conj(reference[m]) * cdouble(y[m]);
      const cdouble rhs = test::inner({x.data(), x.size()}, mri::adjoint(f, y).values());
      CHECK(std::abs(lhs - rhs) < 1e-5 * std::abs(lhs));
    }
    NufftOptions o;
    o.tolerance = 1e-4;
    CHECK(test::relative_error(mri::forward(NufftOperator(t, g, o), x), reference) < 1e-4);
    const Image q_edge = QOperator(t, {}, g, {Backend::Cpu, Precision::Float64}).q();
    const Image q_inside = QOperator(t.wrapped(g), {}, g, {Backend::Cpu, Precision::Float64}).q();
    CHECK(test::relative_error(q_edge, q_inside) < 1e-12);
    CHECK(test::relative_error(nufft_q(t, {}, g, o), q_inside) < 1e-3);
  }
}

TEST_CASE("edge: reconstruct takes a spiral that ends at |k| = n/2 and says so", "[edge][reconstruct]") {
  const Grid g(32, 32);
  // A spiral scaled so that each interleave's last sample sits exactly on |k| = n/2 (a design to
  // Nyquist), plus the corner samples.
  const Trajectory base = traj::spiral(g, 8, 256);
  double r_max = 0;
  for (const KPoint &k : base.points()) r_max = std::max(r_max, std::hypot(double(k.kx), double(k.ky)));
  std::vector<KPoint> pts;
  for (const KPoint &k : base.points())
    pts.push_back({static_cast<float>(k.kx * 16 / r_max), static_cast<float>(k.ky * 16 / r_max), 0});
  pts.push_back({16, 0, 0});
  pts.push_back({0, 16, 0});
  pts.push_back({16, 16, 0});
  const Trajectory t(2, std::move(pts));
  const std::size_t outside = t.check_range(g);
  REQUIRE(outside >= 3);
  const auto samples = Phantom::shepp_logan_2d().kspace(t, g);
  ReconOptions o;
  o.solver.iterations = 10;
  o.backend = Backend::Cpu;
  for (const Method method : {Method::Exact, Method::Nufft}) {
    o.method = method;
    INFO(to_string(method));
    const ReconResult edge = reconstruct(KSpaceData(t, samples), g, o);
    CHECK(edge.report.wrapped_samples == outside);
    const ReconResult inside = reconstruct(KSpaceData(t.wrapped(g), samples), g, o);
    CHECK(inside.report.wrapped_samples == 0);
    CHECK(test::relative_error(edge.image, inside.image) == 0.0); // the same path, the same sums
    CHECK(psnr(edge.image, Phantom::shepp_logan_2d().rasterize(g)) > 15.0);
  }
}
