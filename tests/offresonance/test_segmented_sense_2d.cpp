// The fused 2D time-segmented SENSE Toeplitz normal (lib/offresonance/segmented_sense_2d.hpp) that
// reconstruct applies with a field map and coil maps on a 2D grid: against the float64 sums of the
// segmented model, against SenseNormal over SegmentedToeplitz (the unfused form), on every vector
// ISA of the spectral product, the same bits for any OpenMP team, and bad input.
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "../../lib/offresonance/segmented_sense_2d.hpp"
#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/offresonance.hpp"
#include "omp_threads.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// A random field of -60 .. +90 Hz (L of 3 or more over 12 ms at 1e-3).
std::shared_ptr<const FieldMap> random_field(const Grid &g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-60.0f, 90.0f);
  std::vector<float> f(static_cast<std::size_t>(g.voxels()));
  for (float &v : f) v = u(rng);
  return std::make_shared<const FieldMap>(g, f);
}

// sum_c conj(S_c) A^H W A (S_c x), A x = sum_l B_l .* F(E_l .* x) with the segmentation's own
// tables and F the float64 Fourier sums: the model the Toeplitz kernels embed, without the NUFFT.
std::vector<cdouble> segmented_sense_normal(const Trajectory &t, const TimeSegmentation &s, const std::vector<float> &w,
                                            const CoilSensitivities &maps, const Image &x) {
  const FourierOperator f(t, x.grid(), {Backend::Cpu, Precision::Float64});
  const std::size_t n = x.size(), m = t.size();
  std::vector<cdouble> sum(n), coil(n), segment(n), back(n), y(m), ys(m);
  for (int c = 0; c < maps.coils(); ++c) {
    std::fill(y.begin(), y.end(), cdouble{});
    for (int l = 0; l < s.segments; ++l) {
      for (std::size_t i = 0; i < n; ++i)
        segment[i] = cdouble(s.voxel_phases[l * n + i]) * cdouble(maps.map(c)[i]) * cdouble(x[i]);
      f.forward(segment, ys);
      for (std::size_t j = 0; j < m; ++j) y[j] += cdouble(s.sample_coefficients[l * m + j]) * ys[j];
    }
    for (std::size_t j = 0; j < m; ++j) y[j] *= w[j];
    std::fill(coil.begin(), coil.end(), cdouble{});
    for (int l = 0; l < s.segments; ++l) {
      for (std::size_t j = 0; j < m; ++j) ys[j] = std::conj(cdouble(s.sample_coefficients[l * m + j])) * y[j];
      f.adjoint(ys, back);
      for (std::size_t i = 0; i < n; ++i) coil[i] += std::conj(cdouble(s.voxel_phases[l * n + i])) * back[i];
    }
    for (std::size_t i = 0; i < n; ++i) sum[i] += std::conj(cdouble(maps.map(c)[i])) * coil[i];
  }
  return sum;
}

} // namespace

TEST_CASE("segmented sense toeplitz 2d: the fused pass equals the float64 segmented model and the unfused normal",
          "[offresonance]") {
  // 10 x 37: partial blocks of rows (16) and of columns (8) on the doubled grid, and columns of
  // 74 frequencies: a whole chunk of the product (64; AVX-512 register-blocks those for L <= 8)
  // and a partial one. 5 coils: a group of 4 and one.
  const Grid grid(10, 37);
  const int coils = 5;
  const Trajectory t = test::random_trajectory(grid, 700, 61);
  const auto times = readout_times(7, 100, 0.012);
  const auto field = random_field(grid, 63);
  NufftOptions nufft;
  nufft.tolerance = 1e-5; // float32's tightest, as the single-coil Toeplitz tests
  const SegmentedFieldOperator op(t, grid, *field, times, {}, nufft);
  const auto w = test::random_weights(t.size(), 64);
  const CoilSensitivities maps(grid, coils, test::random_complex(static_cast<std::size_t>(coils * grid.voxels()), 65));
  const Image x = test::random_image(grid, 66);
  REQUIRE(op.segmentation().segments >= 3);
  REQUIRE(op.segmentation().segments <= 8);

  // The unfused form: SenseNormal's loop over SegmentedToeplitz.
  const SegmentedToeplitz single(op, w);
  Image unfused(grid), coil(grid), back(grid);
  for (int c = 0; c < coils; ++c) {
    for (std::size_t i = 0; i < x.size(); ++i) coil[i] = maps.map(c)[i] * x[i];
    single.forward(coil, back);
    for (std::size_t i = 0; i < x.size(); ++i) unfused[i] += std::conj(maps.map(c)[i]) * back[i];
  }
  const auto reference = segmented_sense_normal(t, op.segmentation(), w, maps, x);

  for (const char *isa : {"generic", "avx2", "avx512"}) { // capped to what the CPU has
    CAPTURE(isa, op.segmentation().segments);
    const test::EnvScope scope("MRI_SEGMENT_PRODUCT", isa);
    const detail::SegmentedSenseToeplitz2d fused(op, w, maps);
    Image out(grid);
    fused.apply(x, out);
    // Against the model: the kernels come from the NUFFT at 1e-5 (measured 2e-7 here). Against
    // the unfused form: the same kernels, only the float32 FFTs' and products' rounding differs
    // (measured 1e-7 on these lengths; 1e-6 leaves 10x).
    CHECK(test::relative_error(std::span<const cfloat>(out.values()), reference) < 1e-5);
    CHECK(test::relative_error(out, unfused) < 1e-6);
  }
}

TEST_CASE("segmented sense toeplitz 2d: the same bits for any number of threads", "[offresonance][determinism]") {
  const Grid grid(40, 34);
  const Trajectory t = test::random_trajectory(grid, 900, 71);
  const auto times = readout_times(9, 100, 0.012);
  const auto field = random_field(grid, 73);
  const SegmentedFieldOperator op(t, grid, *field, times);
  const CoilSensitivities maps(grid, 3, test::random_complex(static_cast<std::size_t>(3 * grid.voxels()), 74));
  const Image x = test::random_image(grid, 75);
  Image one(grid), two(grid);
  {
    test::OmpThreads team(1);
    detail::SegmentedSenseToeplitz2d(op, {}, maps).apply(x, one);
  }
  {
    test::OmpThreads team(2);
    detail::SegmentedSenseToeplitz2d(op, {}, maps).apply(x, two);
  }
  CHECK(one.values() == two.values());
}

TEST_CASE("segmented sense toeplitz 2d: bad input", "[offresonance][bad-input]") {
  const Grid grid(16, 12);
  const Trajectory t = test::random_trajectory(grid, 300, 81);
  const auto times = readout_times(3, 100, 0.012);
  const SegmentedFieldOperator op(t, grid, *random_field(grid, 83), times);
  const CoilSensitivities other(Grid(16, 16), 2, test::random_complex(2 * 256, 84));
  CHECK_THROWS_AS(detail::SegmentedSenseToeplitz2d(op, {}, other), InvalidArgument);
  const CoilSensitivities maps(grid, 2, test::random_complex(2 * 192, 85));
  CHECK_THROWS_AS(detail::SegmentedSenseToeplitz2d(op, std::vector<float>(5, 1.0f), maps), InvalidArgument);
}
