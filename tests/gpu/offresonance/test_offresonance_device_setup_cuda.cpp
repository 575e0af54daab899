// The segmentation's tables made on the device from the host's fit (SegmentedFieldDevice's fit
// constructor) against the host's make_segment_tables, and the device memory estimate of a
// reconstruction with a field map: the measured peak under it, and the refusal before anything is
// allocated. Tags: [gpu][offresonance].
#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "catch.hpp"
#include "device.cuh"
#include "gpu/sampled_reference.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/error.hpp"
#include "mri/offresonance.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "nufft/gridding_cuda.hpp"
#include "offresonance/segmented_cuda.hpp"
#include "recon/device_memory_ledger.cuh"

namespace {

using namespace mri;

// The largest |a - b| over the largest |b|.
double max_relative(const std::vector<cfloat> &a, const std::vector<cfloat> &b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  }
  return diff / scale;
}

} // namespace

TEST_CASE("GPU segmentation tables made from the fit equal the host's to float32 rounding", "[gpu][offresonance][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  const Grid g(40, 36);
  const std::vector<float> times = readout_times(3, 700, 0.016);
  const Trajectory t = traj::spiral(g, 3, 700);
  // the simulated map, offset by a random number of Hz so that f0 is not 0
  std::vector<float> hz = simulated_field_map(g, 250).hz();
  const float offset = static_cast<float>(seed % 97) - 48.0f;
  for (float &v : hz) v += offset;
  const FieldMap field(g, hz);
  SegmentationOptions hanning;
  hanning.interpolator = SegmentInterpolator::Hanning;
  hanning.segments = 7;
  const FieldMap uniform(g, std::vector<float>(static_cast<std::size_t>(g.voxels()), 40.0f));
  struct Case {
    const char *name;
    const FieldMap *map;
    SegmentationOptions options;
  };
  for (const Case &c : {Case{"least squares, automatic L", &field, {}}, Case{"hanning, L = 7", &field, hanning},
                        Case{"uniform field", &uniform, {}}}) {
    TimeSegmentation host = fit_segmentation(*c.map, times, c.options);
    const TimeSegmentation fit = host;
    make_segment_tables(host, *c.map, times);
    const auto plan = cuda::detail::make_device_nufft_plan(t, g, gpu_test::cuda_nufft(1e-5, Gridding::Gather));
    const cuda::detail::SegmentedFieldDevice dev(fit, times, c.map->hz(), plan, g, Gridding::Gather);
    REQUIRE(dev.segments() == host.segments);
    const std::size_t L = static_cast<std::size_t>(host.segments);
    const double eb = max_relative(dev.sample_coefficients(), host.sample_coefficients);
    const double ee = max_relative(dev.voxel_phases(), host.voxel_phases);
    std::printf("  device tables (%s, L = %zu): B max rel diff %.2e, E %.2e\n", c.name, L, eb, ee);
    // Both in double, rounded to float once: within two float32 ulps of the largest entry (the
    // device's and glibc's double sine may differ in the last bit, which can move a rounding).
    CHECK(eb <= 2.4e-7);
    CHECK(ee <= 2.4e-7);
  }
  TimeSegmentation bare;
  bare.segments = 2;
  bare.centres = {0.0, 0.01};
  const auto plan = cuda::detail::make_device_nufft_plan(t, g, gpu_test::cuda_nufft(1e-5, Gridding::Gather));
  CHECK_THROWS_AS(cuda::detail::SegmentedFieldDevice(bare, times, field.hz(), plan, g, Gridding::Gather), InvalidArgument);
}

TEST_CASE("GPU reconstruct with a field map: the peak stays under the estimate; beyond the limit it refuses up front",
          "[gpu][offresonance]") {
  const Grid g(96, 96);
  const Image truth = Phantom::shepp_logan_2d().rasterize(g);
  const auto field = std::make_shared<const FieldMap>(simulated_field_map(g, 200));
  const auto maps = std::make_shared<const CoilSensitivities>(SimulatedCoils(2, 3).maps(g));
  const KSpaceData data = simulate_field_acquisition(truth, traj::spiral(g, 4, 2048), *field,
                                                     readout_times(4, 2048, 0.016), maps.get(), 30);
  for (int variant = 0; variant < 3; ++variant) {
    ReconOptions o;
    o.backend = Backend::Cuda;
    o.method = variant == 2 ? Method::Exact : Method::Nufft;
    o.solver.iterations = 4;
    o.coils.sensitivities = maps;
    o.offresonance.field_map = field;
    if (variant == 1) o.solver.normal = Normal::Direct;
    const std::size_t estimate = reconstruct(data, g, o).report.device_bytes;
    REQUIRE(estimate > 0);
    cuda::detail::release_gridding_cache();
    cuda::detail::reset_device_memory_peak();
    const cuda::detail::DeviceMemoryPeak before = cuda::detail::device_memory_peak();
    o.gpu.memory_limit = estimate;
    const ReconResult r = reconstruct(data, g, o);
    const cuda::detail::DeviceMemoryPeak after = cuda::detail::device_memory_peak();
    const std::size_t measured = (after.allocated_high - before.allocated_now) +
                                 (after.pooled_high - std::min(after.pooled_high, before.pooled_now));
    std::printf("  field reconstruct (%s): estimate %zu bytes, measured peak %zu (%.2f)\n",
                variant == 0 ? "segmented toeplitz" : variant == 1 ? "segmented direct" : "exact", estimate, measured,
                double(measured) / double(estimate));
    CHECK(r.report.device_bytes == estimate);
    CHECK(measured <= estimate);
    // A limit below the estimate: Unsupported before anything is allocated, naming the sizes.
    o.gpu.memory_limit = estimate / 2;
    cuda::detail::reset_device_memory_peak();
    const cuda::detail::DeviceMemoryPeak quiet = cuda::detail::device_memory_peak();
    try {
      reconstruct(data, g, o);
      FAIL("a limit of half the estimate should refuse");
    } catch (const Unsupported &e) {
      CHECK_THAT(std::string(e.what()), test::contains("96x96x1"));
      CHECK_THAT(std::string(e.what()), test::contains("M = 8192"));
      CHECK_THAT(std::string(e.what()), test::contains("needs about"));
    }
    CHECK(cuda::detail::device_memory_peak().allocated_high == quiet.allocated_now);
  }
}
