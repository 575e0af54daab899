// DeviceImageWarp (cuda/mcir/) against the host's ImageWarp (mri/mcir.hpp) on fresh random images
// and smooth random fields, 2D and 3D, with and without the Jacobian weighting; the identity;
// adjointness on the device; bad input.
//
// Tolerance: both evaluate every voxel with mri/detail/mcir_stencil.hpp's stencil and lerps. The
// forward differs only by nvcc's fused multiply-adds in the lerps (a few float32 ulps of the
// largest input); the adjoint also by the order of its atomic additions (up to 8 terms per state
// voxel reaching a reference voxel). A relative L2 error of 1e-5 separates that rounding from any
// wrong index or weight, which moves O(1) of the signal. The gather adjoint sums each voxel's terms in
// a fixed order: the same bits run to run (tested, with its lists made anew).
// Tags: [gpu][mcir] all; [small] the quick subset compute-sanitizer runs.
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>

#include "catch.hpp"
#include "gpu/sampled_reference.hpp"
#include "mcir/image_warp_cuda.hpp"
#include "mri/error.hpp"
#include "mri/mcir.hpp"
#include "recon/device_image.hpp"
#include "test_support.hpp"

using namespace mri;
using cuda::DeviceImage;
using cuda::DeviceImageWarp;
using gpu_test::fresh_seed; // MRI_GPU_TEST_SEED replays a failure (the seed is in the INFO output)

namespace {

constexpr double kRoundingTolerance = 1e-5; // see the file comment

// A smooth random field of peak ~amplitude voxels per component (3 plane waves, wavelengths 6-20).
DisplacementField smooth_field(const Grid &g, double amplitude, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), wavelength(6.0, 20.0), phase(0.0, 2 * M_PI);
  DisplacementField f(g);
  RealVolume *c[3] = {&f.u, &f.v, &f.w};
  for (int a = 0; a < g.dims(); ++a)
    for (int wave = 0; wave < 3; ++wave) {
      const double d[3] = {unit(rng), unit(rng), g.dims() == 3 ? unit(rng) : 0.0};
      const double k = 2 * M_PI / wavelength(rng), p = phase(rng), amp = amplitude / 3 * unit(rng);
      for (std::int64_t z = 0; z < g.nz(); ++z)
        for (std::int64_t y = 0; y < g.ny(); ++y)
          for (std::int64_t x = 0; x < g.nx(); ++x)
            c[a]->at(x, y, z) += static_cast<float>(amp * std::sin(k * (d[0] * x + d[1] * y + d[2] * z) + p));
    }
  return f;
}

std::complex<double> dot_f64(const Image &a, const Image &b) {
  std::complex<double> s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += std::conj(std::complex<double>(a[i])) * std::complex<double>(b[i]);
  return s;
}

} // namespace

TEST_CASE("DeviceImageWarp forward and adjoint equal the host's", "[gpu][mcir][small]") {
  for (const Grid &g : {Grid(37, 29), Grid(24, 19, 17)})
    for (const bool jacobian : {false, true})
      for (const cuda::DeviceWarpAdjoint form : {cuda::DeviceWarpAdjoint::Gather, cuda::DeviceWarpAdjoint::Atomic}) {
        const std::uint64_t seed = fresh_seed();
        INFO("grid " << g.nx() << "x" << g.ny() << "x" << g.nz() << ", jacobian " << jacobian << ", adjoint "
                     << (form == cuda::DeviceWarpAdjoint::Gather ? "gather" : "atomic") << ", seed " << seed);
        const ImageWarp host(smooth_field(g, 3.0, seed), {jacobian});
        const DeviceImageWarp device(host, form);
        const Image x = test::random_image(g, seed + 1), y = test::random_image(g, seed + 2);
        const DeviceImage dx(x), dy(y);
        DeviceImage out(g);
        device.forward(dx, out);
        CHECK(test::relative_error(out.to_host(), mri::forward(host, x)) < kRoundingTolerance);
        device.adjoint(dy, out);
        const Image wy = out.to_host();
        CHECK(test::relative_error(wy, mri::adjoint(host, y)) < kRoundingTolerance);
        // <W x, y> = <x, W^H y> with both from the device.
        device.forward(dx, out);
        const Image wx = out.to_host();
        const double scale = std::sqrt(std::abs(dot_f64(wx, wx)) * std::abs(dot_f64(y, y)));
        CHECK(std::abs(dot_f64(wx, y) - dot_f64(x, wy)) < kRoundingTolerance * scale);
      }
}

TEST_CASE("DeviceImageWarp's gather adjoint is the same bits run to run", "[gpu][mcir][small][determinism]") {
  const Grid g(40, 33, 21);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const ImageWarp host(smooth_field(g, 4.0, seed), {true});
  const DeviceImage y(test::random_image(g, seed + 1));
  DeviceImage out(g);
  const DeviceImageWarp once(host);
  once.adjoint(y, out);
  const Image first = out.to_host();
  const DeviceImageWarp again(host); // lists made again: their fill order differs, their sort does not
  again.adjoint(y, out);
  CHECK(out.to_host().values() == first.values());
}

TEST_CASE("DeviceImageWarp of a zero field copies, bitwise", "[gpu][mcir][small]") {
  const Grid g(16, 12, 5);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  const Image x = test::random_image(g, seed);
  const DeviceImageWarp device(ImageWarp(DisplacementField(g), {true}));
  CHECK(device.is_identity());
  const DeviceImage dx(x);
  DeviceImage out(g);
  device.forward(dx, out);
  CHECK(out.to_host().values() == x.values());
  device.adjoint(dx, out);
  CHECK(out.to_host().values() == x.values());
}

TEST_CASE("DeviceImageWarp refuses images of another grid and aliasing", "[gpu][mcir][small]") {
  const Grid g(8, 6);
  DisplacementField f(g);
  f.u[3] = 0.5f;
  const DeviceImageWarp device{ImageWarp(f)};
  DeviceImage a(g), other(Grid(8, 7));
  CHECK_THROWS_AS(device.forward(other, a), InvalidArgument);
  CHECK_THROWS_AS(device.adjoint(a, other), InvalidArgument);
  CHECK_THROWS_AS(device.forward(a, a), InvalidArgument);
}
