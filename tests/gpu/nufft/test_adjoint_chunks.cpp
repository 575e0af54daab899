// NufftDevicePlan::adjoint_coils_device in passes of kCoilBlock vectors (cuda/nufft/gridding_cuda.cu):
// one permute launch, the gather, the inverse transforms (one batched cuFFT execution with
// set_batched_fft(true), 2D) and one crop launch per pass, against adjoint_device of each vector
// alone, on 1, 3, 17 and 8 vectors (a pass alone, a partial pass, several passes and a remainder,
// whole passes only).
//
// Batching off: the same kernels' arithmetic per vector and the same single-grid cuFFT plan, so
// bitwise equal. Batching on: cuFFT does not promise that a batched plan rounds each transform as
// the single plan does, so the tolerance is the float rounding of two inverse transforms: each is
// within about u log2(P) of the exact one in relative L2 (u = 2^-24, P the oversampled points:
// log2 P about 13 here, so about 8e-7), hence their difference within about 1.6e-6; 1e-5 leaves a
// factor 6 and lies 100 times below the NUFFT's tolerance (1e-3). 3D is never batched (the pruned
// transforms of several grids are no single strided batch): bitwise there either way. Whether the
// batched 2D transforms happened to be bitwise equal is printed.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "catch.hpp"
#include "gpu/sampled_reference.hpp"
#include "nufft/gridding_cuda.hpp"
#include "recon/device_image.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

using gpu_test::cuda_nufft;
using gpu_test::fresh_seed; // MRI_GPU_TEST_SEED replays a failure

// adjoint_coils_device of `vectors` vectors (vector c's M samples at y + c M) from device arrays.
std::vector<cfloat> adjoint_chunks(cuda::detail::NufftDevicePlan &plan, const std::vector<cfloat> &y, int vectors,
                                   std::size_t n) {
  cuda::DeviceImage d_y(Grid(static_cast<std::int64_t>(y.size()), 1));
  cuda::DeviceImage d_x(Grid(static_cast<std::int64_t>(static_cast<std::size_t>(vectors) * n), 1));
  d_y.upload(y.data());
  plan.adjoint_coils_device(d_y.data(), vectors, d_x.data(), Gridding::Gather);
  plan.synchronize();
  std::vector<cfloat> x(static_cast<std::size_t>(vectors) * n);
  d_x.download(x.data());
  return x;
}

} // namespace

TEST_CASE("cuda nufft: the adjoint's passes of vectors (batched permute, transforms, crop) equal adjoint per vector",
          "[gpu][nufft][small]") {
  const double tolerance = 1e-5; // batched transforms (header comment)
  for (const Grid g : {Grid(40, 36), Grid(10, 9, 8)}) {
    const std::uint64_t seed = fresh_seed();
    INFO(g.nx() << "x" << g.ny() << "x" << g.nz() << ", seed " << seed << " (MRI_GPU_TEST_SEED replays it)");
    const Trajectory t = test::random_trajectory(g, 1200, seed);
    const auto plan = cuda::detail::make_device_nufft_plan(t, g, cuda_nufft(1e-3, Gridding::Gather));
    const std::size_t m = t.size(), n = static_cast<std::size_t>(g.voxels());
    CHECK(plan->fft_batch(cuda::detail::NufftDevicePlan::kCoilBlock) == 1); // off by default
    for (const int vectors : {1, 3, 17, 8}) {
      const auto y = test::random_complex(static_cast<std::size_t>(vectors) * m, seed + 1 + vectors);
      std::vector<cfloat> single(static_cast<std::size_t>(vectors) * n);
      for (int c = 0; c < vectors; ++c) plan->adjoint(y.data() + c * m, single.data() + c * n, Gridding::Gather);

      plan->set_batched_fft(false);
      const auto unbatched = adjoint_chunks(*plan, y, vectors, n);
      plan->set_batched_fft(true);
      const int batch = plan->fft_batch(vectors);
      const auto batched = adjoint_chunks(*plan, y, vectors, n);
      plan->set_batched_fft(false);

      double worst = 0;
      bool same_bits = true;
      for (int c = 0; c < vectors; ++c) {
        INFO(vectors << " vectors, vector " << c << ", transforms per cuFFT execution " << batch);
        const std::size_t at = static_cast<std::size_t>(c) * n;
        CHECK(std::memcmp(unbatched.data() + at, single.data() + at, n * sizeof(cfloat)) == 0);
        const std::span<const cfloat> one(single.data() + at, n), got(batched.data() + at, n);
        const double e = test::relative_error(got, one);
        worst = std::max(worst, e);
        same_bits = same_bits && std::memcmp(got.data(), one.data(), n * sizeof(cfloat)) == 0;
        CHECK(e <= tolerance);
        if (g.dims() == 3 || batch == 1) CHECK(std::memcmp(got.data(), one.data(), n * sizeof(cfloat)) == 0);
      }
      if (g.dims() == 3) CHECK(batch == 1);
      std::printf("  adjoint passes %lldx%lldx%lld, %2d vectors: %d transforms per cuFFT execution, batched vs "
                  "per vector: rel %.2e (%s)\n",
                  static_cast<long long>(g.nx()), static_cast<long long>(g.ny()), static_cast<long long>(g.nz()),
                  vectors, batch, worst, same_bits ? "bitwise equal" : "not bitwise");
    }
  }
  // Whether the batched transforms fit the buffers they borrow at the off-resonance benchmark's
  // sizes (F^H D of 128^2, Q on its doubled grid; MRI_GRIDDING_TRACE=1 prints the work areas).
  for (const Grid g : {Grid(128, 128), Grid(256, 256)}) {
    const auto plan = cuda::detail::make_device_nufft_plan(test::random_trajectory(g, 2000, fresh_seed()), g,
                                                           cuda_nufft(1e-3, Gridding::Gather));
    plan->set_batched_fft(true);
    const int batch = plan->fft_batch(cuda::detail::NufftDevicePlan::kCoilBlock);
    CHECK((batch == 1 || batch == cuda::detail::NufftDevicePlan::kCoilBlock));
    std::printf("  adjoint passes %lldx%lld: %d transforms per cuFFT execution\n", static_cast<long long>(g.nx()),
                static_cast<long long>(g.ny()), batch);
  }
}
