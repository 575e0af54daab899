// The operator core (mri/linear_operator.hpp) on the device: the GPU's normal operators model
// LinearOperator and are self-adjoint, and mri_backend/normal_assembly.hpp's regularized() takes
// their fused pass (FusesRegularizer) with the result of the host composition
// F^H W F + lambda RegularizerOperator::normal.
#include <cmath>
#include <complex>
#include <concepts>
#include <type_traits>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "test_support.hpp"
#include "recon/device_image.hpp"
#include "mri/linear_operator.hpp"
#include "mri/regularizer.hpp"
#include "mri/toeplitz.hpp"
#include "mri_backend/normal_assembly.hpp"
#include "gpu/sampled_reference.hpp"
#include "sense/sense_toeplitz.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

using namespace mri;
using cuda::DeviceImage;

static_assert(LinearOperator<cuda::QOperator> && LinearOperator<cuda::DirectNormalOperator> &&
              LinearOperator<cuda::detail::SenseToeplitz>);
static_assert(mri::detail::FusesRegularizer<cuda::QOperator> &&
              mri::detail::FusesRegularizer<cuda::DirectNormalOperator>);
static_assert(!mri::detail::FusesRegularizer<QOperator>); // the host composes a sum instead

namespace {

std::complex<double> dot(const Image &a, const Image &b) { // sum conj(a) b
  std::complex<double> s = 0;
  for (std::size_t i = 0; i < a.values().size(); ++i)
    s += std::conj(std::complex<double>(a.values()[i])) * std::complex<double>(b.values()[i]);
  return s;
}

// A self-adjoint: <y, A x> = <A y, x>; and regularized(ref(A), r, lambda) = A + lambda W^H W.
template <class Op> void check_normal(const Op &op, const Image &x, const Image &y) {
  const Grid &grid = x.grid();
  const DeviceImage dx(x), dy(y);
  DeviceImage ax = op.range_vector(), ay = op.range_vector();
  op.forward(dx, ax);
  op.adjoint(dy, ay);
  const Image ax_host = ax.to_host(), ay_host = ay.to_host();
  // float32 FFTs or sums over ~10^3 samples: the products' rounding is ~1e-6 of ||y|| ||A x||
  // (Cauchy-Schwarz's bound on both sides), not of |<y, A x>|, which random phases can make ~30x
  // smaller (a fresh seed failed 1e-5 |<y, A x>| at 1.7e-5).
  const std::complex<double> lhs = dot(y, ax_host), rhs = dot(ay_host, x);
  const double scale = std::sqrt(std::abs(dot(y, y)) * std::abs(dot(ax_host, ax_host)));
  CHECK(std::abs(lhs - rhs) <= 1e-5 * scale);
  for (const Regularizer r : {Regularizer::Tikhonov, Regularizer::FiniteDifference}) {
    INFO(to_string(r));
    const double lambda = 0.6;
    const auto regularized = mri::detail::regularized(mri::ref(op), r, lambda, grid);
    static_assert(std::same_as<std::remove_const_t<decltype(regularized)>, mri::detail::FusedRegularized<Op>>);
    DeviceImage out = regularized.range_vector();
    regularized.forward(dx, out);
    Image expected = ax_host;
    Image stencil(grid);
    RegularizerOperator(r, grid).normal(x, stencil);
    for (std::size_t i = 0; i < expected.values().size(); ++i)
      expected.values()[i] += static_cast<float>(lambda) * stencil.values()[i];
    // The same F^H W F pass plus the stencil added in float32 on either side: rounding only.
    CHECK(test::relative_error(out.to_host(), expected) < 1e-6);
  }
}

} // namespace

TEST_CASE("gpu operator core: the normal operators are self-adjoint and fuse the regulariser as the host composes it",
          "[gpu][operators][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed << " (MRI_GPU_TEST_SEED replays it)");
  for (const Grid &grid : {Grid(22, 18), Grid(10, 8, 6)}) {
    INFO("grid " << grid.nx() << "x" << grid.ny() << "x" << grid.nz());
    const Trajectory t = gpu_test::random_trajectory(grid, 900, seed);
    const std::vector<float> w = test::random_weights(t.size(), seed + 1);
    const Image x = test::random_image(grid, seed + 2), y = test::random_image(grid, seed + 3);
    check_normal(cuda::QOperator(t, w, grid, KernelPolicy::Tuned), x, y);
    check_normal(cuda::DirectNormalOperator(t, w, grid), x, y);
  }
}
