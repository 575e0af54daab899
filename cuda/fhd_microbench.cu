// The hardware bound the F^H D benchmarks are measured against: sustained __sincosf
// throughput. Each thread runs kSfu.chains independent chains of __sincosf (MUFU.SIN +
// MUFU.COS) with one FMA feeding the next argument, so the special function units, not the
// FMA pipe (1 FMUL + 1 FFMA per sincos) or latency, limit the kernel.
#include <algorithm>
#include <vector>

#include "fhd_plan.cuh"

namespace mri::cuda::detail {
namespace {

struct SfuLaunch {
  int threads = 256;
  int blocks_per_sm = 8;
  int chains = 8;
  int iterations = 4096;
};
inline constexpr SfuLaunch kSfu{};

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

} // namespace

SincosThroughput measure_sincos_throughput(int repeats) {
  int device = 0, sms = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  MRI_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int blocks = sms * kSfu.blocks_per_sm;
  DeviceBuffer<float> sink(static_cast<std::size_t>(blocks));
  Stream stream;
  Event start(true), stop(true);
  sincos_throughput_kernel<<<blocks, kSfu.threads, 0, stream.get()>>>(sink.get(), kSfu.iterations); // warm-up
  MRI_CUDA_CHECK_LAUNCH("sincos_throughput_kernel");
  std::vector<float> ms(static_cast<std::size_t>(std::max(1, repeats)));
  for (float &t : ms) {
    MRI_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
    sincos_throughput_kernel<<<blocks, kSfu.threads, 0, stream.get()>>>(sink.get(), kSfu.iterations);
    MRI_CUDA_CHECK_LAUNCH("sincos_throughput_kernel");
    MRI_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
    MRI_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&t, start.get(), stop.get()));
  }
  std::sort(ms.begin(), ms.end());
  const double median_s = ms[ms.size() / 2] * 1e-3;
  const double sincos = static_cast<double>(blocks) * kSfu.threads * kSfu.chains * kSfu.iterations;
  SincosThroughput r;
  r.ops_per_launch = 2.0 * sincos;
  r.median_seconds = median_s;
  r.ops_per_second = r.ops_per_launch / median_s;
  return r;
}

} // namespace mri::cuda::detail
