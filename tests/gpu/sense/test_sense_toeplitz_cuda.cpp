// The coil-batched SENSE Toeplitz operator (cuda/sense/sense_toeplitz.hpp) against the SENSE normal
// summed directly in float64, and against the one-coil Toeplitz operator composed per coil
// (mri_backend/sense.hpp's SenseNormal) for every batch size: how the coils are split into passes
// must not change the result beyond float rounding.
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <vector>

#include "catch.hpp"
#include "test_support.hpp"
#include "recon/device_image.hpp"
#include "mri/coils.hpp"
#include "mri/reconstruct.hpp"
#include "mri/regularizer.hpp"
#include "mri_backend/sense.hpp"
#include "gpu/sampled_reference.hpp"
#include "gpu/sense_reference.hpp"
#include "sense/sense_cuda.hpp"
#include "sense/sense_toeplitz.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

using namespace mri;
using cdouble = std::complex<double>;
using cuda::DeviceImage;

using gpu_test::sense_normal_f64;

TEST_CASE("gpu sense: the coil-batched Toeplitz normal equals the float64 SENSE normal for every batch",
          "[gpu][sense][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed << " (MRI_GPU_TEST_SEED replays it)");
  const Grid grid(24, 20);
  const int coils = 5;
  const Trajectory t = gpu_test::random_trajectory(grid, 700, seed);
  const std::vector<float> w = test::random_weights(t.size(), seed + 1);
  const CoilSensitivities maps(grid, coils, test::random_complex(static_cast<std::size_t>(coils * grid.voxels()), seed + 2));
  const Image x = test::random_image(grid, seed + 3);
  const double lambda = 0.7;
  const auto reference = sense_normal_f64(t, w, maps, x, Regularizer::FiniteDifference, lambda);

  const cuda::QOperator toeplitz(t, w, grid);
  const cuda::detail::DeviceCoils device_maps(maps, Regularizer::FiniteDifference, lambda, toeplitz.stream());
  const DeviceImage dx(x);
  // The one-coil operator composed per coil: what the batched operator replaces.
  const auto one_coil = [&](const DeviceImage &in, DeviceImage &out) { toeplitz.apply(in, out); };
  DeviceImage composed(grid);
  mri::detail::SenseNormal<DeviceImage, cuda::detail::DeviceCoils, decltype(one_coil)>(device_maps, one_coil, dx)(
      dx, composed);
  const Image composed_host = composed.to_host();
  // Q is an exact float32 sum over 700 samples, then two float32 FFTs of 48 x 40: ~1e-6 relative.
  CHECK(test::relative_error(composed_host.values(), reference) < 1e-5);
  for (int batch : {1, 2, 3, 5}) {
    INFO("batch " << batch);
    const cuda::detail::SenseToeplitz op(device_maps, toeplitz, batch);
    DeviceImage out(grid);
    op.forward(dx, out);
    const Image got = out.to_host();
    CHECK(test::relative_error(got.values(), reference) < 1e-5);
    CHECK(test::relative_error(got, composed_host) < 1e-5);
  }
  CHECK_THROWS_AS(cuda::detail::SenseToeplitz(device_maps, toeplitz, 0), InvalidArgument);
  CHECK_THROWS_AS(cuda::detail::SenseToeplitz(device_maps, toeplitz, coils + 1), InvalidArgument);
}

TEST_CASE("gpu sense: a 2D SENSE reconstruction batches its coils and says so", "[gpu][sense][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  const Grid grid(32, 28);
  const int coils = 3;
  const Trajectory t = gpu_test::random_trajectory(grid, 900, seed);
  KSpaceData data(t, test::random_complex(coils * t.size(), seed + 1), {}, coils);
  ReconOptions o;
  o.method = Method::Exact;
  o.backend = Backend::Cuda;
  o.solver.iterations = 4;
  o.coils.sensitivities = std::make_shared<const CoilSensitivities>(
      grid, coils, test::random_complex(static_cast<std::size_t>(coils * grid.voxels()), seed + 2));
  const ReconResult r = reconstruct(data, grid, o);
  CHECK_THAT(r.report.toeplitz_fft, test::contains("3 coils per batched transform"));
  CHECK(cuda::detail::sense_coil_batch(grid, coils) == coils);
  CHECK(cuda::detail::sense_coil_batch(Grid(128, 128, 128), coils) == 0); // 3D Pruned: one coil at a time
}
