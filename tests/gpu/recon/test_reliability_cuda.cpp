// Reliability on the GPU (docs/reliability.md): reconstructions from 16 host threads at once
// against their serial runs (a deadlock fails after 120 s), the device memory in use over
// 1000 reconstructions, a CUDA failure injected at every checked call of a reconstruction, and
// gpu.memory_limit against the measured peak.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "run_threads.hpp"
#include "test_support.hpp"
#include "device.cuh"
#include "recon/device_memory_ledger.cuh"
#include "nufft/gridding_cuda.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "gpu/sampled_reference.hpp"
#include "gpu/under_sanitizer.hpp"

using namespace mri;

namespace {

struct Problem {
  Grid grid;
  KSpaceData data;
  ReconOptions options;
};

Problem problem(const Grid &grid, Method method, std::uint64_t seed, int coils = 1, std::size_t samples = 4000) {
  const Trajectory t = gpu_test::random_trajectory(grid, samples, seed);
  ReconOptions o;
  o.backend = Backend::Cuda;
  o.method = method;
  o.solver.iterations = 6;
  o.solver.lambda = 0.5;
  o.solver.regularizer = Regularizer::FiniteDifference;
  return {grid, KSpaceData(t, test::random_complex(coils * t.size(), seed + 1), {}, coils), o};
}

} // namespace

TEST_CASE("cuda reliability: 16 threads reconstruct at once, each equal to its serial run", "[gpu][reliability]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  // Different problems (grids, exact and NUFFT methods), each run by four threads: the same
  // problem at once and different problems at once.
  const std::vector<Problem> problems = {problem(Grid(48, 48), Method::Exact, seed),
                                         problem(Grid(40, 56), Method::Nufft, seed + 10),
                                         problem(Grid(16, 16, 16), Method::Exact, seed + 20),
                                         problem(Grid(20, 18, 12), Method::Nufft, seed + 30)};
  std::vector<Image> serial;
  for (const Problem &p : problems) serial.push_back(reconstruct(p.data, p.grid, p.options).image);
  const int threads = gpu_test::concurrent_threads(16);
  std::printf("%d threads: the %zu serial runs done, the concurrent ones start\n", threads, problems.size());
  std::fflush(stdout);

  // Seconds plainly; racecheck serialises the threads' kernels (under_sanitizer.hpp).
  const auto watchdog = std::chrono::seconds(gpu_test::under_sanitizer() ? 2400 : 120);
  std::vector<Image> concurrent(static_cast<std::size_t>(threads));
  REQUIRE_NOTHROW(test::run_threads(threads, watchdog, [&](int i) {
    const Problem &p = problems[static_cast<std::size_t>(i) % problems.size()];
    concurrent[static_cast<std::size_t>(i)] = reconstruct(p.data, p.grid, p.options).image;
  }));
  double worst = 0;
  for (int i = 0; i < threads; ++i) {
    INFO("thread " << i);
    const double e = test::relative_error(concurrent[static_cast<std::size_t>(i)],
                                          serial[static_cast<std::size_t>(i) % problems.size()]);
    worst = std::max(worst, e);
    // Not bitwise (the largest difference seen: 5.0e-7, docs/reliability.md): the device reductions' order
    // (atomics, split partial sums) varies between runs. 1e-5 is float rounding with margin; a
    // race between threads (a shared buffer) gives differences of order one.
    CHECK(e < 1e-5);
  }
  std::printf("%d concurrent GPU reconstructions vs serial: largest relative difference %.3e\n", threads, worst);
}

TEST_CASE("cuda reliability: no device memory is leaked over 1000 reconstructions", "[gpu][reliability]") {
  // 1000 plainly; 50 under a sanitizer (under_sanitizer.hpp), where each takes ~100x longer.
  const int pairs = gpu_test::under_sanitizer() ? 25 : 500;
  const Problem a = problem(Grid(32, 32), Method::Exact, 11), b = problem(Grid(24, 20, 8), Method::Nufft, 12);
  for (int i = 0; i < 3; ++i) { // warm-up: plan caches and memory pools reach their steady size
    reconstruct(a.data, a.grid, a.options);
    reconstruct(b.data, b.grid, b.options);
  }
  const std::size_t before = cuda::detail::device_memory_in_use();
  for (int i = 0; i < pairs; ++i) {
    reconstruct(a.data, a.grid, a.options);
    reconstruct(b.data, b.grid, b.options);
  }
  const std::size_t after = cuda::detail::device_memory_in_use();
  std::printf("device memory in use before / after %d reconstructions: %zu / %zu bytes (%+lld)\n", 2 * pairs, before,
              after, static_cast<long long>(after) - static_cast<long long>(before));
  CHECK(after <= before);
}

TEST_CASE("cuda reliability: a failure injected at each checked CUDA call of a reconstruction", "[gpu][reliability]") {
  // Every checked CUDA runtime, cuBLAS and cuFFT call of one reconstruction is failed in turn
  // (cuda_check.cuh's injection: the call is not made, an allocation failure is reported). Each
  // run must either throw CudaError naming the injected call, or (where the backend has a fallback,
  // e.g. cuFFT callbacks -> unfused) finish with the right image; afterwards the next call must
  // give the reference image and the device memory in use must be back where it was.
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  std::vector<Problem> problems = {problem(Grid(24, 24), Method::Exact, seed),
                                   problem(Grid(12, 10, 8), Method::Nufft, seed + 10),
                                   problem(Grid(32, 28), Method::Nufft, seed + 20, 3)}; // SENSE
  // Under a sanitizer (under_sanitizer.hpp) the first problem only: ~140 reconstructions, not ~640.
  if (gpu_test::under_sanitizer()) problems.resize(1);
  for (const Problem &p : problems) {
    const Image reference = reconstruct(p.data, p.grid, p.options).image;
    const std::size_t memory_before = cuda::detail::device_memory_in_use();
    const std::int64_t calls_before = cuda::detail::checked_calls();
    reconstruct(p.data, p.grid, p.options);
    const std::int64_t calls = cuda::detail::checked_calls() - calls_before;
    INFO(p.grid.nx() << "x" << p.grid.ny() << "x" << p.grid.nz() << ", " << p.data.coils() << " coil(s), "
                     << calls << " checked calls");
    REQUIRE(calls > 10);
    int thrown = 0, finished = 0;
    for (std::int64_t n = 1; n <= calls; ++n) {
      cuda::detail::inject_fault_at(n);
      try {
        const Image x = reconstruct(p.data, p.grid, p.options).image;
        ++finished; // the injection was absorbed by a fallback, or not reached
        INFO("fault at call " << n << " absorbed");
        CHECK(test::relative_error(x, reference) < 1e-5);
      } catch (const CudaError &e) {
        ++thrown;
        INFO("fault at call " << n << ": " << e.what());
        CHECK(std::string(e.what()).find("[injected]") != std::string::npos);
      }
      cuda::detail::inject_fault_at(0);
    }
    const Image after = reconstruct(p.data, p.grid, p.options).image;
    CHECK(test::relative_error(after, reference) < 1e-5); // float reduction order (as above)
    const std::size_t memory_after = cuda::detail::device_memory_in_use();
    std::printf("injected faults, %lldx%lldx%lld %d coil(s): %lld calls, %d thrown, %d absorbed; device memory "
                "in use %zu -> %zu bytes\n",
                static_cast<long long>(p.grid.nx()), static_cast<long long>(p.grid.ny()),
                static_cast<long long>(p.grid.nz()), p.data.coils(), static_cast<long long>(calls), thrown,
                finished, memory_before, memory_after);
    CHECK(thrown > 0);
    CHECK(memory_after <= memory_before);
  }
}

TEST_CASE("cuda reliability: the device memory ledger counts what is allocated, exactly", "[gpu][reliability]") {
  // What the next case measures with: known allocations in, the same bytes out.
  cuda::detail::reset_device_memory_peak();
  const cuda::detail::DeviceMemoryPeak start = cuda::detail::device_memory_peak();
  CHECK(start.allocated_high == start.allocated_now);
  constexpr std::size_t kA = 3 << 20, kB = 5 << 20;
  void *a = cuda::detail::device_malloc(kA);
  void *b = cuda::detail::device_malloc(kB);
  CHECK(cuda::detail::device_memory_peak().allocated_now == start.allocated_now + kA + kB);
  cuda::detail::device_free(b);
  const cuda::detail::DeviceMemoryPeak during = cuda::detail::device_memory_peak();
  CHECK(during.allocated_now == start.allocated_now + kA);
  CHECK(during.allocated_high == start.allocated_now + kA + kB);
  cuda::detail::device_free(a);
  const cuda::detail::DeviceMemoryPeak end = cuda::detail::device_memory_peak();
  CHECK(end.allocated_now == start.allocated_now);
  CHECK(end.allocated_high == start.allocated_now + kA + kB);
  cuda::detail::reset_device_memory_peak();
  CHECK(cuda::detail::device_memory_peak().allocated_high == start.allocated_now);
}

TEST_CASE("cuda reliability: gpu.memory_limit holds: the measured peak stays under the report's estimate",
          "[gpu][reliability]") {
  // The limit is checked against the estimate (report.device_bytes) before anything is allocated;
  // this measures whether the estimate bounds what the reconstruction really takes, two ways:
  // exactly for what cuda/ allocates (the ledger's high-water mark plus the memory pool's,
  // device.cuh), and device-wide by a thread polling cudaMemGetInfo (which also sees the CUDA
  // libraries' own workspaces, but may miss a short peak). The limit is set to the estimate; the
  // cached gridding resources are released first, so plans and pools are counted as a first call
  // in a process would count them. The last problem has 52 samples a voxel, so that its NUFFT
  // plans' per-sample records outweigh their grids, which a per-sample count that leaves buffers
  // out underestimates once the estimate's 128 MiB of slack no longer covers it (about 1.5 M
  // samples at 64 B a sample; docs/history.md).
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  for (Problem p : {problem(Grid(64, 64, 48), Method::Nufft, seed), problem(Grid(128, 112), Method::Exact, seed + 1),
                    problem(Grid(128, 128), Method::Nufft, seed + 2, 4),
                    problem(Grid(24, 24, 20), Method::Nufft, seed + 3, 1, 600000)}) {
    const std::size_t estimate = reconstruct(p.data, p.grid, p.options).report.device_bytes;
    REQUIRE(estimate > 0);
    p.options.gpu.memory_limit = estimate;
    cuda::detail::release_gridding_cache();
    const std::size_t baseline = cuda::detail::device_memory_in_use();
    cuda::detail::reset_device_memory_peak();
    const cuda::detail::DeviceMemoryPeak before = cuda::detail::device_memory_peak();
    std::atomic<bool> done{false};
    std::size_t polled = baseline;
    std::thread poll([&] {
      while (!done.load()) polled = std::max(polled, cuda::detail::device_memory_in_use());
    });
    ReconResult r;
    try {
      r = reconstruct(p.data, p.grid, p.options);
    } catch (...) {
      done = true;
      poll.join();
      throw;
    }
    done = true;
    poll.join();
    const cuda::detail::DeviceMemoryPeak after = cuda::detail::device_memory_peak();
    const std::size_t allocated = after.allocated_high - before.allocated_now;
    const std::size_t pooled = after.pooled_high - std::min(after.pooled_high, before.pooled_now);
    const std::size_t measured = allocated + pooled, polled_used = polled - baseline;
    std::printf("gpu.memory_limit: %lldx%lldx%lld %d coil(s) %s: estimate %zu bytes; measured peak %zu (cudaMalloc "
                "%zu + pool %zu) = %.2f of the estimate; polled peak above the baseline %zu (%.2f)\n",
                static_cast<long long>(p.grid.nx()), static_cast<long long>(p.grid.ny()),
                static_cast<long long>(p.grid.nz()), p.data.coils(), to_string(p.options.method), estimate, measured,
                allocated, pooled, double(measured) / double(estimate), polled_used,
                double(polled_used) / double(estimate));
    CHECK(r.report.device_bytes == estimate);
    CHECK(measured > 0);
    CHECK(measured <= estimate);
    CHECK(polled_used <= estimate);
  }
}
