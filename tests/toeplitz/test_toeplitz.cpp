// The Toeplitz normal operator equals F^H W (F x) computed by the explicit sums.
#include <cmath>
#include <complex>
#include <limits>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/nufft.hpp"
#include "mri/toeplitz.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// F^H (w .* F x) with the float64 reference sums.
Image explicit_normal(const Trajectory &t, const std::vector<float> &w, const Image &x) {
  const FourierOperator f(t, x.grid(), {Backend::Cpu, Precision::Float64});
  auto y = mri::forward(f, x);
  for (std::size_t m = 0; m < y.size(); ++m) y[m] *= w.empty() ? 1.0f : w[m];
  return mri::adjoint(f, y);
}

} // namespace

TEST_CASE("toeplitz: Q-embedded F^H W F equals F^H(W F x)", "[toeplitz]") {
  // Odd and even extents, 2D and 3D, weighted and unweighted. Tolerance 1e-5: the explicit side
  // is float64 rounded to float; the Toeplitz side runs float32 FFTs of size L, whose error
  // grows like eps * log2(L) ~ 1e-6 relative.
  const Grid grid = GENERATE(Grid(16, 16), Grid(15, 12), Grid(8, 6, 5));
  const bool weighted = GENERATE(false, true);
  const auto t = traj::uniform_random(grid, 700, 11);
  const auto w = weighted ? test::random_weights(t.size(), 3) : std::vector<float>{};
  const Image x = test::random_image(grid, 5);
  const QOperator q(t, w, grid, {Backend::Cpu, Precision::Float64});
  CHECK(q.q().grid() == grid.doubled());
  CHECK(test::relative_error(mri::forward(q, x), explicit_normal(t, w, x)) < 1e-5);
}

TEST_CASE("toeplitz: Q is Hermitian symmetric and its centre is the weight sum", "[toeplitz]") {
  const Grid grid(10, 10);
  const auto t = traj::uniform_random(grid, 300, 2);
  const auto w = test::random_weights(t.size(), 9);
  const QOperator q(t, w, grid, {Backend::Cpu, Precision::Float64});
  double wsum = 0;
  for (float v : w) wsum += v;
  const Image &Q = q.q();
  // Q(0) = sum_m w_m sits at index L/2 per axis.
  CHECK(std::abs(Q.at(10, 10).real() - wsum) < 1e-4 * wsum);
  CHECK(std::abs(Q.at(10, 10).imag()) < 1e-4 * wsum);
  // Q(-d) = conj(Q(d)) for every d with both offsets on the grid.
  for (int dy = -9; dy <= 9; ++dy)
    for (int dx = -9; dx <= 9; ++dx)
      CHECK(std::abs(Q.at(10 + dx, 10 + dy) - std::conj(Q.at(10 - dx, 10 - dy))) < 1e-4 * wsum);
}

TEST_CASE("toeplitz: the spectrum is a sum of separable Dirichlet kernels (the GPU's tensor-core form)",
          "[toeplitz][dirichlet]") {
  // cuda/exact/dirichlet_spectrum.cu computes K(f) = (1/L) sum_m w_m prod_a D_a(k_a/n_a - f_a/L_a),
  // D_a(t) = sin(pi (2 n_a - 1) t) / sin(pi t), instead of Re(FFT(Q)) / L. Here, in float64 on the
  // CPU: that identity against a DFT of Q over the offsets |d_a| <= n_a - 1, and the operator made
  // from that spectrum (d_a = -n_a dropped) against F^H(W F x).
  const Grid grid(5, 4, 3);
  const auto t = traj::uniform_random(grid, 200, 21);
  const auto w = test::random_weights(t.size(), 22);
  const QOperator q(t, w, grid, {Backend::Cpu, Precision::Float64});
  const Grid doubled = grid.doubled();
  const int n[3] = {5, 4, 3};
  const int l[3] = {10, 8, 6};
  const double volume = static_cast<double>(doubled.voxels());
  std::vector<float> dirichlet;
  double num = 0, den = 0;
  for (int fz = 0; fz < l[2]; ++fz)
    for (int fy = 0; fy < l[1]; ++fy)
      for (int fx = 0; fx < l[0]; ++fx) {
        const int f[3] = {fx, fy, fz};
        const double k_dir = test::dirichlet_spectrum_at(t, w, grid, f);
        std::complex<double> dft = 0;
        for (int dz = 1 - n[2]; dz < n[2]; ++dz)
          for (int dy = 1 - n[1]; dy < n[1]; ++dy)
            for (int dx = 1 - n[0]; dx < n[0]; ++dx) {
              const double phase = -2 * M_PI * (double(fx) * dx / l[0] + double(fy) * dy / l[1] + double(fz) * dz / l[2]);
              dft += std::complex<double>(q.q().at(dx + n[0], dy + n[1], dz + n[2])) * std::polar(1.0, phase);
            }
        num += (dft.real() / volume - k_dir) * (dft.real() / volume - k_dir);
        den += k_dir * k_dir;
        dirichlet.push_back(static_cast<float>(k_dir));
      }
  // Q is held in float (Image): ~1e-7.
  CHECK(std::sqrt(num / den) < 1e-6);
  const Image x = test::random_image(grid, 23);
  CHECK(test::relative_error(mri::forward(QOperator::from_spectrum(grid, dirichlet), x), explicit_normal(t, w, x)) < 1e-5);
}

TEST_CASE("toeplitz: float32 Q matches float64 Q", "[toeplitz]") {
  const Grid grid(12, 14);
  const auto t = traj::uniform_random(grid, 500, 4);
  const QOperator q32(t, {}, grid, {Backend::Cpu, Precision::Float32});
  const QOperator q64(t, {}, grid, {Backend::Cpu, Precision::Float64});
  CHECK(test::relative_error(q32.q(), q64.q()) < 1e-5);
}

TEST_CASE("toeplitz: QOperator::from_q with Q by NUFFT equals F^H(W F x) to the NUFFT tolerance", "[toeplitz][nufft]") {
  // Q by one adjoint NUFFT on the doubled grid (nufft_q), 2D and 3D, odd and even extents: the
  // operator inherits the NUFFT's relative error (<= tolerance on Q, Q's error spreads over the
  // convolution no worse), so 1e-4 at tolerance 1e-4; and from_q of the exact Q is the exact
  // operator (the same FFT path, 1e-6).
  const Grid grid = GENERATE(Grid(16, 16), Grid(15, 12), Grid(8, 6, 5));
  const auto t = traj::uniform_random(grid, 700, 12);
  const auto w = test::random_weights(t.size(), 6);
  const Image x = test::random_image(grid, 8);
  const Image reference = explicit_normal(t, w, x);
  NufftOptions o;
  o.tolerance = 1e-4;
  const QOperator by_nufft = QOperator::from_q(grid, nufft_q(t, w, grid, o));
  CHECK(test::relative_error(mri::forward(by_nufft, x), reference) < 1e-4);
  const QOperator exact(t, w, grid, {Backend::Cpu, Precision::Float64});
  CHECK(test::relative_error(mri::forward(QOperator::from_q(grid, exact.q()), x), mri::forward(exact, x)) < 1e-6);
}

TEST_CASE("toeplitz: bad input", "[toeplitz][bad-input]") {
  const Grid grid(8, 8);
  const auto t = traj::uniform_random(grid, 50, 1);
  CHECK_THROWS_AS(QOperator(t, std::vector<float>(49, 1.0f), grid), InvalidArgument);
  std::vector<float> w(50, 1.0f);
  w[7] = -1;
  CHECK_THROWS_WITH(QOperator(t, w, grid), test::contains("weights[7]"));
  CHECK_THROWS_AS(QOperator(Trajectory(2, {}), {}, grid), InvalidArgument);
  CHECK_THROWS_AS(QOperator(Trajectory(2, {{6.5f, 0, 0}}), {}, Grid(4, 4)), InvalidArgument); // beyond 3n/2 = 6
  const QOperator q(t, {}, grid);
  CHECK_THROWS_AS(mri::forward(q, Image(Grid(8, 9))), InvalidArgument);
  CHECK_THROWS_WITH(QOperator::from_q(grid, Image(grid)), test::contains("q.grid()")); // not doubled
  Image bad(grid.doubled());
  bad.data()[5] = cfloat(std::numeric_limits<float>::infinity(), 0);
  CHECK_THROWS_WITH(QOperator::from_q(grid, bad), test::contains("q[5]"));
}
