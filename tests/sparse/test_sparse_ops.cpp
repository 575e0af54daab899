// The host sparse terms (mri/sparse.hpp): BART -R parsing, the wavelet transform, finite
// differences, block shrinkage and locally low rank, against float64 references written here.
//
// Tolerances: the transforms run in float32 with each output sample accumulated in double and
// rounded once, so each pass along an axis adds a relative error of about 2^-24 = 6e-8 per sample;
// an orthonormal pass does not amplify earlier errors. We allow 1e-6 per pass (levels summed over
// the axes), a margin of more than 10 over that bound.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "catch.hpp"
#include "mri/detail/sparse_stencil.hpp"
#include "mri/error.hpp"
#include "mri/sparse.hpp"
#include "omp_threads.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

constexpr double kPassTolerance = 1e-6;

struct WaveletCase {
  Grid grid;
  unsigned axes;
};

int passes(const WaveletLevels &levels) { return levels.levels[0] + levels.levels[1] + levels.levels[2]; }

double norm(const Image &x) { return std::sqrt(std::real(test::inner(x.values(), x.values()))); }

std::int64_t stride_of(const Grid &g, int axis) { return axis == 0 ? 1 : axis == 1 ? g.nx() : g.nx() * g.ny(); }

// One periodised level on a line in double: [a | x[m] if n odd | d] with
// a[k] = sum_j h[j] x[(2k+j) mod m], d[k] = sum_j (-1)^j h[T-1-j] x[(2k+j) mod m] (Mallat 7.5).
std::vector<cdouble> filter_bank_level(const std::vector<cdouble> &x, const detail::WaveletFilter &f) {
  const std::size_t n = x.size(), m = n - n % 2, half = m / 2, odd = n % 2;
  std::vector<cdouble> out(n);
  for (std::size_t k = 0; k < half; ++k) {
    cdouble a = 0, d = 0;
    for (int j = 0; j < f.taps; ++j) {
      const cdouble v = x[(2 * k + static_cast<std::size_t>(j)) % m];
      a += f.h[j] * v;
      d += (j % 2 == 0 ? 1.0 : -1.0) * f.h[f.taps - 1 - j] * v;
    }
    out[k] = a;
    out[half + odd + k] = d;
  }
  if (odd == 1) out[half] = x[m];
  return out;
}

// The multilevel transform in double: at each level the lines of the current approximation box,
// along the split axes in x, y, z order.
std::vector<cdouble> reference_wavelet(const WaveletLevels &levels, const Image &x) {
  const Grid &g = levels.grid;
  const detail::WaveletFilter &f = detail::kWaveletFilters[static_cast<int>(levels.wavelet)];
  std::vector<cdouble> v(x.values().begin(), x.values().end());
  std::array<std::int64_t, 3> box = g.extents();
  for (int l = 0; l < levels.max_levels(); ++l) {
    for (int a = 0; a < 3; ++a) {
      if (levels.levels[static_cast<std::size_t>(a)] <= l) continue;
      const std::int64_t n = box[static_cast<std::size_t>(a)], stride = stride_of(g, a);
      for (std::int64_t iz = 0; iz < (a == 2 ? 1 : box[2]); ++iz)
        for (std::int64_t iy = 0; iy < (a == 1 ? 1 : box[1]); ++iy)
          for (std::int64_t ix = 0; ix < (a == 0 ? 1 : box[0]); ++ix) {
            const std::int64_t base = g.index(ix, iy, iz);
            std::vector<cdouble> line(static_cast<std::size_t>(n));
            for (std::int64_t s = 0; s < n; ++s) line[static_cast<std::size_t>(s)] = v[static_cast<std::size_t>(base + s * stride)];
            const std::vector<cdouble> out = filter_bank_level(line, f);
            for (std::int64_t s = 0; s < n; ++s) v[static_cast<std::size_t>(base + s * stride)] = out[static_cast<std::size_t>(s)];
          }
    }
    for (std::size_t a = 0; a < 3; ++a)
      if (levels.levels[a] > l) box[a] = box[a] / 2 + box[a] % 2;
  }
  return v;
}

// sum |c|^2 over the voxels with `inside(ix, iy, iz)`, over the total.
template <class Inside> double energy_fraction(const Image &c, Inside inside) {
  const Grid &g = c.grid();
  double part = 0, total = 0;
  for (std::int64_t iz = 0; iz < g.nz(); ++iz)
    for (std::int64_t iy = 0; iy < g.ny(); ++iy)
      for (std::int64_t ix = 0; ix < g.nx(); ++ix) {
        const double e = std::norm(cdouble(c.at(ix, iy, iz)));
        total += e;
        if (inside(ix, iy, iz)) part += e;
      }
  return part / total;
}

// D_a x in double with a zero at the last index along a (Neumann), the blocks stacked.
std::vector<cdouble> reference_gradient(const Grid &g, unsigned axes, const Image &x) {
  std::vector<cdouble> out;
  for (int a = 0; a < 3; ++a) {
    if ((axes >> a & 1u) == 0) continue;
    for (std::int64_t iz = 0; iz < g.nz(); ++iz)
      for (std::int64_t iy = 0; iy < g.ny(); ++iy)
        for (std::int64_t ix = 0; ix < g.nx(); ++ix) {
          const std::array<std::int64_t, 3> p{ix, iy, iz};
          if (p[static_cast<std::size_t>(a)] + 1 == g.extent(a)) {
            out.push_back(0);
            continue;
          }
          const std::int64_t v = g.index(ix, iy, iz);
          out.push_back(cdouble(x[static_cast<std::size_t>(v + stride_of(g, a))]) - cdouble(x[static_cast<std::size_t>(v)]));
        }
  }
  return out;
}

// The prox of t ||.||_* on one (voxels x frames) matrix through the eigen-decomposition of M^H M
// = V S^2 V^H: M V diag(max(0, 1 - t / s)) V^H = U max(S - t, 0) V^H, an SVD-free float64 reference.
Eigen::MatrixXcd nuclear_prox(const Eigen::MatrixXcd &m, double t) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> eig(m.adjoint() * m);
  Eigen::VectorXd factor(eig.eigenvalues().size());
  for (Eigen::Index i = 0; i < factor.size(); ++i) {
    const double s = std::sqrt(std::max(0.0, eig.eigenvalues()(i)));
    factor(i) = s > t ? 1.0 - t / s : 0.0;
  }
  return m * eig.eigenvectors() * factor.asDiagonal() * eig.eigenvectors().adjoint();
}

// The block of each voxel as (kx, ky, kz): ((p - shift) mod n) / block per axis of extent > 1.
std::map<std::array<std::int64_t, 3>, std::vector<std::int64_t>> llr_blocks(const Grid &g, int block,
                                                                           const std::array<std::int64_t, 3> &shift) {
  std::map<std::array<std::int64_t, 3>, std::vector<std::int64_t>> blocks;
  for (std::int64_t iz = 0; iz < g.nz(); ++iz)
    for (std::int64_t iy = 0; iy < g.ny(); ++iy)
      for (std::int64_t ix = 0; ix < g.nx(); ++ix) {
        const std::array<std::int64_t, 3> p{ix, iy, iz};
        std::array<std::int64_t, 3> k{};
        for (std::size_t a = 0; a < 3; ++a) {
          const std::int64_t n = g.extent(static_cast<int>(a));
          k[a] = n == 1 ? 0 : ((p[a] - shift[a]) % n + n) % n / block;
        }
        blocks[k].push_back(g.index(ix, iy, iz));
      }
  return blocks;
}

std::vector<cdouble> reference_llr(const std::vector<cfloat> &frames_data, const Grid &g, int frames, int block,
                                   const std::array<std::int64_t, 3> &shift, double t) {
  std::vector<cdouble> out(frames_data.begin(), frames_data.end());
  const std::int64_t voxels = g.voxels();
  for (const auto &[k, members] : llr_blocks(g, block, shift)) {
    Eigen::MatrixXcd m(static_cast<Eigen::Index>(members.size()), frames);
    for (int f = 0; f < frames; ++f)
      for (std::size_t r = 0; r < members.size(); ++r)
        m(static_cast<Eigen::Index>(r), f) = cdouble(frames_data[static_cast<std::size_t>(f * voxels + members[r])]);
    const Eigen::MatrixXcd p = nuclear_prox(m, t);
    for (int f = 0; f < frames; ++f)
      for (std::size_t r = 0; r < members.size(); ++r)
        out[static_cast<std::size_t>(f * voxels + members[r])] = p(static_cast<Eigen::Index>(r), f);
  }
  return out;
}

} // namespace

TEST_CASE("sparse: BART -R terms parse to their penalty, axes and lambda", "[sparse]") {
  const SparseTerm w = parse_bart_term("W:3:0:0.001");
  CHECK(w.penalty == SparsePenalty::L1Wavelet);
  CHECK(w.axes == 3);
  CHECK(w.joint == 0);
  CHECK(w.lambda == 0.001);
  CHECK(w.wavelet == Wavelet::Daubechies2);
  CHECK(to_string(w) == "W:3:0:0.001 (l1-wavelet, daubechies2)");

  const SparseTerm t = parse_bart_term("T:7:0:1e-3");
  CHECK(t.penalty == SparsePenalty::TotalVariation);
  CHECK(t.axes == 7);
  CHECK(t.lambda == 1e-3);
  CHECK(t.isotropic);
  CHECK(to_string(t) == "T:7:0:0.001 (total-variation, isotropic)");

  const SparseTerm i = parse_bart_term("I:3:0:0.5");
  CHECK(i.penalty == SparsePenalty::L1Image);
  CHECK(i.lambda == 0.5);

  const SparseTerm q = parse_bart_term("Q:0.01");
  CHECK(q.penalty == SparsePenalty::L2);
  CHECK(q.lambda == 0.01);
  CHECK(to_string(q) == "Q:0.01 (l2)");
  CHECK(std::string(to_string(Wavelet::Daubechies4)) == "daubechies4");
}

TEST_CASE("sparse: malformed BART -R terms are refused naming the text", "[sparse][bad-input]") {
  for (const char *spec : {"X:3:0:1", "W:3:0:-1", "W:3:0:nan", "W:3:0:inf", "W:8:0:1", "W:3:1:1", "W:3:0",
                           "W:3:0:1x", "W:3x:0:1", "W::0:1", "Q:1:2", "Q:", ""}) {
    INFO(spec);
    CHECK_THROWS_AS(parse_bart_term(spec), InvalidArgument);
    CHECK_THROWS_WITH(parse_bart_term(spec), test::contains(std::string("= ") + spec + ":"));
  }
  CHECK_THROWS_WITH(parse_bart_term("W:3:1:1"), test::contains("joint thresholding"));
}

TEST_CASE("sparse: axes, stacked grids and wavelet levels", "[sparse]") {
  CHECK(resolve_axes(Grid(37, 50), 0) == 3);
  CHECK(resolve_axes(Grid(64, 1), 0) == 1);
  CHECK(resolve_axes(Grid(5, 6, 7), 0) == 7);
  CHECK(axis_count(5) == 2);
  CHECK(stacked_grid(Grid(8, 6), 2) == Grid(8, 6, 2));
  CHECK(stacked_grid(Grid(8, 6, 3), 3) == Grid(8, 6, 9));
  CHECK_THROWS_WITH(resolve_axes(Grid(8, 6), 4), test::contains("axes = 4"));
  CHECK_THROWS_AS(resolve_axes(Grid(8, 6), 8), InvalidArgument);
  CHECK_THROWS_AS(resolve_axes(Grid(1, 1), 0), InvalidArgument);

  // 37 -> 19 -> 10 and 50 -> 25 -> 13: each split while the extent is >= 16.
  const WaveletLevels a = wavelet_levels(Grid(37, 50), 0, Wavelet::Haar);
  CHECK(a.axes == 3);
  CHECK(a.levels == std::array<int, 3>{2, 2, 0});
  CHECK(a.coarse == std::array<std::int64_t, 3>{10, 13, 1});
  CHECK(a.max_levels() == 2);
  const WaveletLevels b = wavelet_levels(Grid(256, 12, 20), 5, Wavelet::Daubechies4);
  CHECK(b.levels == std::array<int, 3>{5, 0, 1});
  CHECK(b.coarse == std::array<std::int64_t, 3>{8, 12, 10});
  // An axis below 16 in the mask is not split, as long as another one is.
  const WaveletLevels c = wavelet_levels(Grid(40, 9), 0, Wavelet::Daubechies2);
  CHECK(c.levels == std::array<int, 3>{2, 0, 0});
  CHECK(c.coarse == std::array<std::int64_t, 3>{10, 9, 1});
  CHECK_THROWS_AS(wavelet_levels(Grid(15, 12), 0, Wavelet::Haar), InvalidArgument);
  CHECK_THROWS_AS(wavelet_levels(Grid(32, 32), 4, Wavelet::Haar), InvalidArgument);

  // A hand-made WaveletLevels splitting a line below the filter's taps is refused by the transform.
  WaveletLevels deep = wavelet_levels(Grid(32, 32), 0, Wavelet::Daubechies4);
  deep.levels[0] = 3; // 32 -> 16 -> 8 -> 4: the third split has 8 samples for 8 taps, the fourth 4
  Image x = test::random_image(Grid(32, 32), 4001), coeffs;
  CHECK_NOTHROW(SparseOps<Image>::wavelet_forward(deep, x, coeffs));
  deep.levels[0] = 4;
  CHECK_THROWS_WITH(SparseOps<Image>::wavelet_forward(deep, x, coeffs), test::contains("more splits"));
  CHECK_THROWS_AS(SparseOps<Image>::wavelet_inverse(deep, x, coeffs), InvalidArgument);
}

TEST_CASE("sparse: the wavelet transform is the float64 filter bank, orthonormal, and inverted by its adjoint",
          "[sparse]") {
  const WaveletCase wc = GENERATE(WaveletCase{Grid(37, 50), 0}, WaveletCase{Grid(17, 16, 23), 0},
                                  WaveletCase{Grid(256, 256), 0}, WaveletCase{Grid(64, 1), 1},
                                  WaveletCase{Grid(33, 20, 18), 5});
  const Wavelet family = GENERATE(Wavelet::Haar, Wavelet::Daubechies2, Wavelet::Daubechies4);
  INFO(wc.grid.nx() << "x" << wc.grid.ny() << "x" << wc.grid.nz() << " axes " << wc.axes << " " << to_string(family));
  const WaveletLevels levels = wavelet_levels(wc.grid, wc.axes, family);
  const double tol = kPassTolerance * passes(levels);
  const Image x = test::random_image(wc.grid, 4101), y = test::random_image(wc.grid, 4102);

  Image c(wc.grid), back(wc.grid), adj(wc.grid);
  SparseOps<Image>::wavelet_forward(levels, x, c);
  const std::vector<cdouble> ref = reference_wavelet(levels, x);
  CHECK(test::relative_error(c.values(), ref) < tol);
  CHECK(std::abs(norm(c) - norm(x)) < tol * norm(x));

  SparseOps<Image>::wavelet_inverse(levels, c, back);
  CHECK(test::relative_error(back, x) < 2 * tol);

  // <Psi x, y> = <x, Psi^H y>.
  SparseOps<Image>::wavelet_inverse(levels, y, adj);
  const cdouble lhs = test::inner(c.values(), y.values()), rhs = test::inner(x.values(), adj.values());
  CHECK(std::abs(lhs - rhs) < 2 * tol * norm(x) * norm(y));

  // In place (c aliasing x) gives the same coefficients.
  Image inplace = x;
  SparseOps<Image>::wavelet_forward(levels, inplace, inplace);
  CHECK(test::relative_error(inplace, c) < 1e-7);
}

TEST_CASE("sparse: wavelet bands: constants stay in the coarse band, the Nyquist pattern in the finest detail band",
          "[sparse]") {
  const Wavelet family = GENERATE(Wavelet::Haar, Wavelet::Daubechies2, Wavelet::Daubechies4);
  INFO(to_string(family));
  const Grid grid(37, 50);
  const WaveletLevels levels = wavelet_levels(grid, 0, family);
  // A constant has no detail (sum g = 0) at any level: the energy of the coefficients lies in the
  // coarse band [0, coarse) of wavelet_levels.
  Image constant(grid, std::vector<cfloat>(static_cast<std::size_t>(grid.voxels()), cfloat(0.7f, -1.3f)));
  Image c(grid);
  SparseOps<Image>::wavelet_forward(levels, constant, c);
  const auto in_coarse = [&](std::int64_t ix, std::int64_t iy, std::int64_t) {
    return ix < levels.coarse[0] && iy < levels.coarse[1];
  };
  CHECK(1 - energy_fraction(c, in_coarse) < 1e-10);
  CHECK(std::abs(c.at(levels.coarse[0] - 1, levels.coarse[1] - 1)) > 0.1f);

  // (-1)^ix has no approximation along x (sum (-1)^j h[j] = 0): everything lies at ix >= 32 / 2.
  const Grid even(64, 48);
  const WaveletLevels le = wavelet_levels(even, 0, family);
  Image alternating = test::random_image(even, 4103);
  for (std::int64_t iy = 0; iy < even.ny(); ++iy)
    for (std::int64_t ix = 0; ix < even.nx(); ++ix) alternating.at(ix, iy) = alternating.at(0, iy) * float(ix % 2 ? -1 : 1);
  Image ca(even);
  SparseOps<Image>::wavelet_forward(le, alternating, ca);
  CHECK(energy_fraction(ca, [](std::int64_t ix, std::int64_t, std::int64_t) { return ix < 32; }) < 1e-10);

  // A smooth periodic image has little energy in the finest detail bands (ix >= 32 or iy >= 24);
  // a random one has about 3/4 of it there.
  Image smooth(even);
  for (std::int64_t iy = 0; iy < even.ny(); ++iy)
    for (std::int64_t ix = 0; ix < even.nx(); ++ix)
      smooth.at(ix, iy) = std::polar(2.0f + std::cos(2 * float(M_PI) * float(iy) / 48), 2 * float(M_PI) * float(ix) / 64);
  const auto finest = [](std::int64_t ix, std::int64_t iy, std::int64_t) { return ix >= 32 || iy >= 24; };
  Image cs(even), cr(even);
  SparseOps<Image>::wavelet_forward(le, smooth, cs);
  SparseOps<Image>::wavelet_forward(le, test::random_image(even, 4104), cr);
  CHECK(energy_fraction(cs, finest) < 1e-2);
  CHECK(energy_fraction(cr, finest) > 0.6);
}

TEST_CASE("sparse: finite differences match float64 and their adjoint", "[sparse]") {
  const WaveletCase gc = GENERATE(WaveletCase{Grid(12, 10), 0}, WaveletCase{Grid(9, 8, 5), 0},
                                  WaveletCase{Grid(9, 8, 5), 5}, WaveletCase{Grid(40, 1), 1});
  INFO(gc.grid.nx() << "x" << gc.grid.ny() << "x" << gc.grid.nz() << " axes " << gc.axes);
  const unsigned axes = resolve_axes(gc.grid, gc.axes);
  const Grid stacked = stacked_grid(gc.grid, axis_count(axes));
  const Image x = test::random_image(gc.grid, 4201), g = test::random_image(stacked, 4202);
  Image dx(stacked), dhg(gc.grid);
  SparseOps<Image>::gradient_forward(gc.grid, gc.axes, x, dx);
  // Each difference is one float subtraction: within 2^-24 relative of the float64 value.
  CHECK(test::relative_error(dx.values(), reference_gradient(gc.grid, axes, x)) < 1e-6);

  SparseOps<Image>::gradient_adjoint(gc.grid, gc.axes, g, dhg);
  // A sum of at most 2 per axis float terms per voxel; float64 inner products.
  const cdouble lhs = test::inner(dx.values(), g.values()), rhs = test::inner(x.values(), dhg.values());
  CHECK(std::abs(lhs - rhs) < 1e-5 * norm(x) * norm(g));

  // D^H g in float64 from its definition sum_a (g_a[v - e_a] - g_a[v]) with the edges' terms absent.
  std::vector<cdouble> ref(static_cast<std::size_t>(gc.grid.voxels()));
  int b = 0;
  for (int a = 0; a < 3; ++a) {
    if ((axes >> a & 1u) == 0) continue;
    const std::int64_t stride = stride_of(gc.grid, a), n = gc.grid.extent(a);
    for (std::int64_t v = 0; v < gc.grid.voxels(); ++v) {
      const std::int64_t pos = v / stride % n;
      const std::size_t o = static_cast<std::size_t>(b * gc.grid.voxels());
      if (pos >= 1) ref[static_cast<std::size_t>(v)] += cdouble(g[o + static_cast<std::size_t>(v - stride)]);
      if (pos + 1 < n) ref[static_cast<std::size_t>(v)] -= cdouble(g[o + static_cast<std::size_t>(v)]);
    }
    ++b;
  }
  CHECK(test::relative_error(dhg.values(), ref) < 1e-6);
  CHECK_THROWS_AS(SparseOps<Image>::gradient_forward(gc.grid, 8, x, dx), InvalidArgument);
}

TEST_CASE("sparse: TV's dual step is the float64 projected gradient step with momentum", "[sparse]") {
  const WaveletCase gc = GENERATE(WaveletCase{Grid(12, 10), 0}, WaveletCase{Grid(9, 8, 5), 0},
                                  WaveletCase{Grid(9, 8, 5), 5}, WaveletCase{Grid(9, 8, 5), 2});
  const bool isotropic = GENERATE(true, false);
  INFO(gc.grid.nx() << "x" << gc.grid.ny() << "x" << gc.grid.nz() << " axes " << gc.axes << " isotropic " << isotropic);
  const unsigned axes = resolve_axes(gc.grid, gc.axes);
  const int count = axis_count(axes);
  const Grid stacked = stacked_grid(gc.grid, count);
  const Image u = test::random_image(gc.grid, 4301);
  Image p = test::random_image(stacked, 4302), q = test::random_image(stacked, 4303);
  const Image p0 = p, q0 = q;
  const double step = 0.125, momentum = 0.4;
  const std::vector<cdouble> g = reference_gradient(gc.grid, axes, u);
  const auto voxels = static_cast<std::size_t>(gc.grid.voxels());
  std::vector<cdouble> w(g.size()), p_ref(g.size()), q_ref(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) w[i] = cdouble(q0[i]) + step * g[i];
  const auto group_norm = [&](std::size_t v, int b) {
    double norm2 = 0;
    for (int c = 0; c < count; ++c)
      if (isotropic || c == b) norm2 += std::norm(w[v + static_cast<std::size_t>(c) * voxels]);
    return std::sqrt(norm2);
  };
  // The radius at the median group norm: both branches (projected or not) are tested.
  std::vector<double> norms;
  for (std::size_t v = 0; v < voxels; ++v) norms.push_back(group_norm(v, 0));
  std::nth_element(norms.begin(), norms.begin() + static_cast<std::ptrdiff_t>(norms.size() / 2), norms.end());
  const double radius = norms[norms.size() / 2];
  SparseOps<Image>::tv_dual_step(gc.grid, gc.axes, isotropic, u, step, radius, momentum, p, q);

  std::size_t projected = 0;
  for (std::size_t v = 0; v < voxels; ++v)
    for (int b = 0; b < count; ++b) {
      const std::size_t i = v + static_cast<std::size_t>(b) * voxels;
      const double norm = group_norm(v, b), scale = norm > radius ? radius / norm : 1.0;
      projected += scale < 1;
      p_ref[i] = scale * w[i];
      q_ref[i] = p_ref[i] + momentum * (p_ref[i] - cdouble(p0[i]));
    }
  CHECK(projected > g.size() / 5);
  CHECK(projected < g.size() * 4 / 5);
  // A handful of float roundings per value (the difference, the step, the norm, the scale, the
  // momentum): within 1e-6 relative; a wrong index or group moves O(1) of the signal.
  CHECK(test::relative_error(p.values(), p_ref) < 1e-6);
  CHECK(test::relative_error(q.values(), q_ref) < 1e-6);
  CHECK_THROWS_AS(SparseOps<Image>::tv_dual_step(gc.grid, gc.axes, isotropic, u, step, -1.0, momentum, p, q), InvalidArgument);
  CHECK_THROWS_AS(SparseOps<Image>::tv_dual_step(gc.grid, gc.axes, isotropic, u, step, radius, momentum, p, p), InvalidArgument);
}

TEST_CASE("sparse: block soft-thresholding is the closed form outside the keep box", "[sparse]") {
  const Grid base(9, 7, 3);
  const int group = GENERATE(1, 2, 3);
  const KeepBox keep = GENERATE(KeepBox{0, 0, 0}, KeepBox{4, 3, 2});
  INFO("group " << group << " keep " << keep[0] << "," << keep[1] << "," << keep[2]);
  // N(0, 1) real and imaginary parts: group norms around sqrt(2 group); t = 1.6 puts some
  // groups below the threshold for every group size.
  const double t = 1.6;
  const Image z0 = test::random_image(stacked_grid(base, group), 4301 + static_cast<std::uint64_t>(group));
  Image z = z0;
  const double value = SparseOps<Image>::group_norm_sum(z0, base, group, keep);
  const double returned = SparseOps<Image>::shrink(z, base, group, keep, t);
  CHECK(returned == value);

  const std::int64_t voxels = base.voxels();
  double expected_value = 0;
  int zeroed = 0, shrunk = 0;
  for (std::int64_t v = 0; v < voxels; ++v) {
    const std::int64_t ix = v % base.nx(), iy = v / base.nx() % base.ny(), iz = v / (base.nx() * base.ny());
    const bool kept = ix < keep[0] && iy < keep[1] && iz < keep[2];
    double n2 = 0;
    for (int c = 0; c < group; ++c) n2 += std::norm(cdouble(z0[static_cast<std::size_t>(v + c * voxels)]));
    const double nrm = std::sqrt(n2), scale = kept ? 1.0 : std::max(0.0, 1.0 - t / nrm);
    if (!kept) expected_value += nrm;
    if (!kept) (scale == 0 ? zeroed : shrunk) += 1;
    for (int c = 0; c < group; ++c) {
      const std::size_t u = static_cast<std::size_t>(v + c * voxels);
      if (kept) {
        CHECK(z[u] == z0[u]);
      } else if (scale == 0) {
        CHECK(z[u] == cfloat(0, 0));
      } else {
        // The scale and the product each rounded to float: 2^-23 relative.
        CHECK(std::abs(cdouble(z[u]) - scale * cdouble(z0[u])) <= 2.5e-7 * std::abs(z0[u]));
      }
    }
  }
  CHECK(zeroed > 0);
  CHECK(shrunk > 0);
  // Norms in double of the same floats, summed in another order.
  CHECK(std::abs(returned - expected_value) < 1e-12 * expected_value);

  Image same = z0;
  SparseOps<Image>::shrink(same, base, group, keep, 0.0);
  CHECK(same.values() == z0.values());
}

TEST_CASE("sparse: the shrink's sum does not depend on the thread count", "[sparse]") {
  const Grid base(70, 65, 3); // several reduction chunks
  const Image z0 = test::random_image(stacked_grid(base, 2), 4401);
  Image one = z0, two = z0;
  double s1 = 0, s2 = 0;
  {
    test::OmpThreads threads(1);
    s1 = SparseOps<Image>::shrink(one, base, 2, KeepBox{5, 5, 1}, 1.0);
  }
  {
    test::OmpThreads threads(2);
    s2 = SparseOps<Image>::shrink(two, base, 2, KeepBox{5, 5, 1}, 1.0);
  }
  CHECK(s1 == s2);
  CHECK(one.values() == two.values());
  Image bad = z0;
  CHECK_THROWS_AS(SparseOps<Image>::shrink(bad, base, 3, KeepBox{}, 1.0), InvalidArgument);
  CHECK_THROWS_AS(SparseOps<Image>::shrink(bad, base, 2, KeepBox{}, -1.0), InvalidArgument);
}

TEST_CASE("sparse: circular shift moves x[i] to (i + s) mod n and the opposite shift undoes it", "[sparse]") {
  const Grid grid(7, 6, 5);
  const std::array<std::int64_t, 3> s{3, 0, 4}, back{4, 0, 1};
  const Image x = test::random_image(grid, 4501);
  Image out(grid), again(grid);
  SparseOps<Image>::circular_shift(x, s, out);
  for (std::int64_t iz = 0; iz < 5; ++iz)
    for (std::int64_t iy = 0; iy < 6; ++iy)
      for (std::int64_t ix = 0; ix < 7; ++ix) CHECK(out.at((ix + 3) % 7, iy, (iz + 4) % 5) == x.at(ix, iy, iz));
  SparseOps<Image>::circular_shift(out, back, again);
  CHECK(again.values() == x.values());
  CHECK_THROWS_AS(SparseOps<Image>::circular_shift(x, {7, 0, 0}, out), InvalidArgument);
  Image alias = x;
  CHECK_THROWS_AS(SparseOps<Image>::circular_shift(alias, s, alias), InvalidArgument);
}

TEST_CASE("sparse: locally low rank shrinks a rank-1 block's singular value by t", "[sparse]") {
  // X[f][v] = u[v] w[f] is rank 1 in every block b, with singular value ||u_b|| ||w||.
  const Grid grid(16, 12);
  const int frames = 5, block = 4;
  const std::array<std::int64_t, 3> shift{1, 2, 0};
  const Image u = test::random_image(grid, 4601);
  const std::vector<cfloat> w = test::random_complex(frames, 4602);
  std::vector<cfloat> x(static_cast<std::size_t>(frames * grid.voxels()));
  for (int f = 0; f < frames; ++f)
    for (std::int64_t v = 0; v < grid.voxels(); ++v)
      x[static_cast<std::size_t>(f * grid.voxels() + v)] = u[static_cast<std::size_t>(v)] * w[static_cast<std::size_t>(f)];
  double w_norm = 0;
  for (const cfloat &c : w) w_norm += std::norm(cdouble(c));
  w_norm = std::sqrt(w_norm);
  const auto blocks = llr_blocks(grid, block, shift);
  CHECK(blocks.size() == 12);
  std::map<std::int64_t, double> sigma; // per voxel, its block's singular value
  double smallest = 1e30, largest = 0;
  for (const auto &[k, members] : blocks) {
    double n2 = 0;
    for (std::int64_t v : members) n2 += std::norm(cdouble(u[static_cast<std::size_t>(v)]));
    const double s = std::sqrt(n2) * w_norm;
    for (std::int64_t v : members) sigma[v] = s;
    smallest = std::min(smallest, s);
    largest = std::max(largest, s);
  }

  const double t = 0.3 * smallest;
  std::vector<cfloat> y = x;
  locally_low_rank_shrink(y.data(), grid, frames, block, shift, t);
  std::vector<cdouble> expected(x.size());
  for (int f = 0; f < frames; ++f)
    for (std::int64_t v = 0; v < grid.voxels(); ++v) {
      const std::size_t i = static_cast<std::size_t>(f * grid.voxels() + v);
      expected[i] = cdouble(x[i]) * (1 - t / sigma[v]);
    }
  // Float input, the SVD in double, the result rounded to float.
  CHECK(test::relative_error(y, expected) < 1e-6);

  std::vector<cfloat> z = x;
  locally_low_rank_shrink(z.data(), grid, frames, block, shift, 1.5 * largest);
  CHECK(std::all_of(z.begin(), z.end(), [](cfloat c) { return c == cfloat(0, 0); }));
}

TEST_CASE("sparse: locally low rank matches a float64 prox on random stacks with partial edge blocks", "[sparse]") {
  struct LlrCase {
    Grid grid;
    int frames, block;
    std::array<std::int64_t, 3> shift;
  };
  const LlrCase lc = GENERATE(LlrCase{Grid(10, 7), 5, 4, {3, 5, 0}}, LlrCase{Grid(6, 5, 4), 3, 3, {1, 4, 2}},
                              LlrCase{Grid(9, 9), 12, 3, {0, 0, 0}});
  INFO(lc.grid.nx() << "x" << lc.grid.ny() << "x" << lc.grid.nz() << " block " << lc.block);
  const std::vector<cfloat> x = test::random_complex(static_cast<std::size_t>(lc.frames * lc.grid.voxels()), 4701);
  // Random blocks' singular values spread around sqrt(2 * block voxels) - sqrt(2 * frames) ..
  // sqrt(2 * voxels) + sqrt(2 * frames) (Marchenko-Pastur edges): t = 3 keeps some, zeroes others.
  const double t = 3.0;
  std::vector<cfloat> y = x;
  locally_low_rank_shrink(y.data(), lc.grid, lc.frames, lc.block, lc.shift, t);
  CHECK(test::relative_error(y, reference_llr(x, lc.grid, lc.frames, lc.block, lc.shift, t)) < 1e-5);
  std::vector<cfloat> same = x;
  locally_low_rank_shrink(same.data(), lc.grid, lc.frames, lc.block, lc.shift, 0.0);
  CHECK(test::relative_error(same, std::vector<cfloat>(x)) < 1e-6);
}

TEST_CASE("sparse: locally low rank refuses blocks larger than the image and empty stacks", "[sparse][bad-input]") {
  std::vector<cfloat> x = test::random_complex(70 * 2, 4801);
  const Grid grid(10, 7);
  CHECK_THROWS_WITH(locally_low_rank_shrink(x.data(), grid, 2, 8, {0, 0, 0}, 1.0), test::contains("block = 8"));
  CHECK_THROWS_AS(locally_low_rank_shrink(x.data(), grid, 2, 0, {0, 0, 0}, 1.0), InvalidArgument);
  CHECK_THROWS_AS(locally_low_rank_shrink(x.data(), grid, 0, 2, {0, 0, 0}, 1.0), InvalidArgument);
  CHECK_THROWS_AS(locally_low_rank_shrink(x.data(), grid, 2, 2, {0, 0, 0}, -1.0), InvalidArgument);
}
