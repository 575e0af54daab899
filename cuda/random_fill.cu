#include "random_fill.cuh"

#include "cuda_check.cuh"

namespace mri::cuda::detail {
namespace {

// splitmix64's finaliser of (index, seed): 53 well-mixed bits per element.
__device__ inline double unit(unsigned long long i, unsigned seed) {
  unsigned long long h = (i + 1) * 0x9E3779B97F4A7C15ULL ^ (static_cast<unsigned long long>(seed) << 32);
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBULL;
  h ^= h >> 31;
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

template <class T> __global__ void fill_kernel(T *__restrict__ v, std::size_t n, unsigned seed, T lo, T hi) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    v[i] = lo + static_cast<T>(unit(i, seed)) * (hi - lo);
}

template <class T> void fill(T *v, std::size_t n, unsigned seed, T lo, T hi, cudaStream_t s) {
  if (n == 0) return;
  const std::size_t blocks = (n + 255) / 256;
  fill_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), 256, 0, s>>>(v, n, seed, lo, hi);
  MRI_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void fill_uniform(float *v, std::size_t n, unsigned seed, float lo, float hi, cudaStream_t s) {
  fill(v, n, seed, lo, hi, s);
}
void fill_uniform(double *v, std::size_t n, unsigned seed, double lo, double hi, cudaStream_t s) {
  fill(v, n, seed, lo, hi, s);
}

} // namespace mri::cuda::detail
