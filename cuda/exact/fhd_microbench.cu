// The hardware bounds the F^H D benchmarks are measured against, on the card as it runs (its
// clock under load included):
// - sustained __sincosf throughput. Each thread runs kSfu.chains independent chains of
//   __sincosf (MUFU.SIN + MUFU.COS) with one FMA feeding the next argument, so the special
//   function units, not the FMA pipe (1 FMUL + 1 FFMA per sincos) or latency, limit the kernel.
// - sustained mma.sync m16n8k16 (float16 in, float accumulate) throughput, the bound of the
//   tensor-core Dirichlet spectrum (dirichlet_spectrum.cu): kHmma.chains independent accumulator
//   tiles per warp, 16 warps per SM, nothing else in the loop.
// - sustained FFMA throughput, the bound of Tuned (2 FFMA per pair, 152 of its 162 SASS
//   instructions per sample on the FP32 pipe): kFfma.chains independent FFMA chains per thread,
//   enough warps and chains that neither latency nor issue from one warp limits it.
#include <algorithm>
#include <vector>

#include "device.cuh"
#include "fhd_plan.cuh"
#include "mma_sync.cuh"

namespace mri::cuda::detail {
namespace {

// Launch shape of a throughput microbenchmark: independent chains per thread, iterations each.
struct MicroLaunch {
  int threads, blocks_per_sm, chains, iterations;
};
inline constexpr MicroLaunch kSfu{256, 8, 8, 4096};
inline constexpr MicroLaunch kFfma{256, 8, 16, 8192};
inline constexpr MicroLaunch kHmma{256, 2, 8, 4096};

__global__ void __launch_bounds__(kSfu.threads) sincos_throughput_kernel(float *sink, int iterations) {
  float x[kSfu.chains];
#pragma unroll
  for (int j = 0; j < kSfu.chains; ++j) x[j] = 1e-3f * static_cast<float>(threadIdx.x + 37 * j);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < kSfu.chains; ++j) {
      float s, c;
      __sincosf(x[j], &s, &c);
      x[j] = fmaf(c, 0.5f, s); // stays in [-1.2, 1.2]
    }
  }
  float acc = 0.f;
#pragma unroll
  for (int j = 0; j < kSfu.chains; ++j) acc += x[j];
  if (acc == 12345.f) sink[blockIdx.x] = acc; // never true in practice; keeps the work alive
}

__global__ void __launch_bounds__(kFfma.threads) ffma_throughput_kernel(float *sink, int iterations, float a, float b) {
  float x[kFfma.chains];
#pragma unroll
  for (int j = 0; j < kFfma.chains; ++j) x[j] = 1e-3f * static_cast<float>(threadIdx.x + 37 * j);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < kFfma.chains; ++j) x[j] = fmaf(x[j], a, b); // a = 0.5: stays bounded
  }
  float acc = 0.f;
#pragma unroll
  for (int j = 0; j < kFfma.chains; ++j) acc += x[j];
  if (acc == 12345.f) sink[blockIdx.x] = acc; // never true in practice; keeps the work alive
}

__global__ void __launch_bounds__(kHmma.threads) hmma_throughput_kernel(float *sink, int iterations) {
  const std::uint32_t x = 0x1c001c00u + (threadIdx.x & 7); // float16 pairs near 2^-8: sums stay finite
  const std::uint32_t a[4] = {x, x ^ 1u, x ^ 2u, x ^ 3u};
  float acc[kHmma.chains][4] = {};
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < kHmma.chains; ++j) mma_16816(acc[j], a, x + j, x ^ static_cast<std::uint32_t>(j));
  }
  float total = 0.f;
#pragma unroll
  for (int j = 0; j < kHmma.chains; ++j) total += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
  if (total == 12345.f) sink[blockIdx.x] = total; // never true in practice; keeps the work alive
}

// Median seconds of `repeats` launches of `launch(stream)` after one warm-up.
template <class Launch> double median_launch_seconds(int repeats, Launch launch) {
  Stream stream;
  Event start(true), stop(true);
  launch(stream.get()); // warm-up
  std::vector<float> ms(static_cast<std::size_t>(std::max(1, repeats)));
  for (float &t : ms) {
    MRI_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
    launch(stream.get());
    MRI_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
    MRI_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&t, start.get(), stop.get()));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1e-3;
}

// Threads x chains x iterations of one launch of shape l over the current device.
double work_items(const MicroLaunch &l) {
  return static_cast<double>(multiprocessor_count()) * l.blocks_per_sm * l.threads * l.chains * l.iterations;
}

// Median seconds of `repeats` launches of kernel(sink, l.iterations, args...) on l's grid.
template <class... Args>
double time_launches(const MicroLaunch &l, int repeats, void (*kernel)(float *, int, Args...), Args... args) {
  const int blocks = multiprocessor_count() * l.blocks_per_sm;
  DeviceBuffer<float> sink(static_cast<std::size_t>(blocks));
  return median_launch_seconds(repeats, [&](cudaStream_t stream) {
    kernel<<<blocks, l.threads, 0, stream>>>(sink.get(), l.iterations, args...);
    check(cudaGetLastError(), "launch of a throughput microbenchmark kernel", __FILE__, __LINE__);
  });
}

} // namespace

SincosThroughput measure_sincos_throughput(int repeats) {
  SincosThroughput r;
  r.median_seconds = time_launches(kSfu, repeats, sincos_throughput_kernel);
  r.ops_per_launch = 2.0 * work_items(kSfu); // MUFU.SIN + MUFU.COS per sincos
  r.ops_per_second = r.ops_per_launch / r.median_seconds;
  return r;
}

FfmaThroughput measure_ffma_throughput(int repeats) {
  FfmaThroughput r;
  r.median_seconds = time_launches(kFfma, repeats, ffma_throughput_kernel, 0.5f, 0.25f);
  r.ffma_per_second = work_items(kFfma) / r.median_seconds;
  r.implied_sm_clock_hz = r.ffma_per_second / (multiprocessor_count() * 128.0); // 128 FP32 lanes per SM (sm_90)
  return r;
}

HmmaThroughput measure_hmma_throughput(int repeats) {
  HmmaThroughput r;
  r.median_seconds = time_launches(kHmma, repeats, hmma_throughput_kernel);
  // work_items counts threads x chains x iterations: a warp's 32 threads issue one mma together.
  r.macs_per_second = work_items(kHmma) / 32 * (16 * 8 * 16) / r.median_seconds;
  return r;
}

} // namespace mri::cuda::detail
