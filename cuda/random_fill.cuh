#pragma once
// Pseudo-random device buffers for the benchmarks' inputs (never timed on zeros): a hash of each
// element's index and the seed, uniform in [lo, hi). One definition for every benchmark entry of
// the plugin (the cuFFT pair, the ZGEMM throughput, the motion sweep).
#include <cuda_runtime.h>

#include <cstddef>

namespace mri::cuda::detail {

// n values of v (complex buffers: 2 per element) on stream s; the launch is checked.
void fill_uniform(float *v, std::size_t n, unsigned seed, float lo, float hi, cudaStream_t s);
void fill_uniform(double *v, std::size_t n, unsigned seed, double lo, double hi, cudaStream_t s);

} // namespace mri::cuda::detail
