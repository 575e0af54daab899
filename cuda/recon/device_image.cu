// DeviceImage and VectorOps<DeviceImage>: the vector side of the GPU conjugate gradient.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "device.cuh"
#include "device_image.hpp"
#include "device_memory_ledger.cuh"
#include "mri/error.hpp"

namespace mri::cuda {
namespace detail {
bool device_present(); // device.cu
} // namespace detail

namespace {

constexpr int kThreads = 256;      // every kernel here
constexpr int kMaxReduceBlocks = 1024;
constexpr int kPerThread = 8;      // reduction blocks = ceil(n / (kThreads * kPerThread)), capped

// The per-thread stream and reduction scratch: the blocks' partial sums, the arrival counter of
// the one-pass reduction, and the result in mapped pinned host memory (the last block writes the
// scalar straight to the host: one launch and one synchronisation per reduction, no copy).
struct ThreadState {
  cudaStream_t stream = nullptr;
  double2 *partial = nullptr;     // kMaxReduceBlocks
  unsigned *counter = nullptr;    // blocks done; the last block resets it to 0
  double2 *host = nullptr;        // 1, pinned and mapped
  double2 *host_on_device = nullptr;

  ThreadState() {
    if (!detail::device_present()) throw Unsupported("cuda backend: no usable CUDA device");
    MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    partial = static_cast<double2 *>(detail::device_malloc(sizeof(double2) * kMaxReduceBlocks));
    counter = static_cast<unsigned *>(detail::device_malloc(sizeof(unsigned)));
    MRI_CUDA_CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
    MRI_CUDA_CHECK(cudaHostAlloc(&host, sizeof(double2), cudaHostAllocMapped));
    MRI_CUDA_CHECK(cudaHostGetDevicePointer(&host_on_device, host, 0));
  }
  ~ThreadState() { // errors ignored: this may run after the runtime has shut down at exit
    if (stream) cudaStreamSynchronize(stream);
    detail::device_free(partial);
    detail::device_free(counter);
    cudaFreeHost(host);
    if (stream) cudaStreamDestroy(stream);
  }
  ThreadState(const ThreadState &) = delete;
  ThreadState &operator=(const ThreadState &) = delete;
};

ThreadState &thread_state() {
  thread_local std::unique_ptr<ThreadState> state;
  if (!state) state = std::make_unique<ThreadState>();
  return *state;
}

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }
const float2 *dev(const DeviceImage &v) { return reinterpret_cast<const float2 *>(v.data()); }
float2 *dev(DeviceImage &v) { return reinterpret_cast<float2 *>(v.data()); }

void require_same(const DeviceImage &a, const DeviceImage &b, const char *op) {
  if (a.size() != b.size())
    mri::detail::invalid_argument(std::string(op) + ": vector sizes", std::to_string(a.size()) + " vs " +
                                                                         std::to_string(b.size()),
                                  "must be equal");
}

int elementwise_blocks(long long n) {
  return static_cast<int>(
      std::clamp<long long>((n + kThreads - 1) / kThreads, 1, 32LL * detail::multiprocessor_count()));
}
int reduce_blocks(long long n) {
  return static_cast<int>(std::clamp<long long>((n + kThreads * kPerThread - 1) / (kThreads * kPerThread), 1,
                                                kMaxReduceBlocks));
}

// Sum over the block in a fixed order (shuffles, then the warps' sums in order).
__device__ double2 block_sum(double2 v) {
  __shared__ double2 warp_sums[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    v.x += __shfl_down_sync(0xffffffffu, v.x, o);
    v.y += __shfl_down_sync(0xffffffffu, v.y, o);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  double2 s = make_double2(0.0, 0.0);
  if (threadIdx.x == 0)
    for (int w = 0; w < kThreads / 32; ++w) {
      s.x += warp_sums[w].x;
      s.y += warp_sums[w].y;
    }
  return s; // valid in thread 0
}

struct DotOp {
  const float2 *a, *b;
  __device__ void operator()(long long i, double2 &acc) const {
    const float2 x = a[i], y = b[i];
    acc.x += static_cast<double>(x.x) * y.x + static_cast<double>(x.y) * y.y;
    acc.y += static_cast<double>(x.x) * y.y - static_cast<double>(x.y) * y.x;
  }
};
struct Norm2Op {
  const float2 *a;
  __device__ void operator()(long long i, double2 &acc) const {
    const float2 x = a[i];
    acc.x += static_cast<double>(x.x) * x.x + static_cast<double>(x.y) * x.y;
  }
};
struct NonFiniteOp {
  const float2 *a;
  __device__ void operator()(long long i, double2 &acc) const {
    const float2 x = a[i];
    if (!isfinite(x.x) || !isfinite(x.y)) acc.x += 1.0;
  }
};
// x += alpha p, r -= alpha ap (complex float arithmetic, as VectorOps<Image>::axpy), sum |r|^2.
struct UpdateOp {
  float2 alpha;
  const float2 *p, *ap;
  float2 *x, *r;
  __device__ void operator()(long long i, double2 &acc) const {
    const float2 pi = p[i], api = ap[i];
    float2 xi = x[i], ri = r[i];
    xi.x += alpha.x * pi.x - alpha.y * pi.y;
    xi.y += alpha.x * pi.y + alpha.y * pi.x;
    ri.x -= alpha.x * api.x - alpha.y * api.y;
    ri.y -= alpha.x * api.y + alpha.y * api.x;
    x[i] = xi;
    r[i] = ri;
    acc.x += static_cast<double>(ri.x) * ri.x + static_cast<double>(ri.y) * ri.y;
  }
};

// One pass: each block sums its grid-stride share and publishes it; the last block to arrive
// adds the blocks' sums in block order (deterministic for a given n) and writes the scalar to the
// host-mapped result.
template <class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(Op op, long long n, double2 *partial, unsigned *counter, double2 *result) {
  __shared__ bool last;
  double2 acc = make_double2(0.0, 0.0);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) op(i, acc);
  const double2 s = block_sum(acc);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = s;
    __threadfence(); // the partial is visible before the arrival is counted
    last = atomicAdd(counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  double2 t = make_double2(0.0, 0.0);
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    const double2 v = __ldcg(partial + b); // L2, never a stale L1 line
    t.x += v.x;
    t.y += v.y;
  }
  const double2 total = block_sum(t);
  if (threadIdx.x == 0) {
    *result = total;
    *counter = 0; // ready for the next reduction (stream-ordered)
  }
}

// Runs the reduction `op` over n elements on `stream` and returns the sum (blocks the host).
template <class Op> double2 reduce(Op op, long long n, cudaStream_t stream) {
  ThreadState &ts = thread_state();
  const int blocks = reduce_blocks(n);
  reduce_kernel<<<blocks, kThreads, 0, stream>>>(op, n, ts.partial, ts.counter, ts.host_on_device);
  MRI_CUDA_CHECK(cudaGetLastError());
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
  const volatile double2 *h = ts.host;
  return make_double2(h->x, h->y);
}

__global__ void axpy_kernel(float2 a, const float2 *__restrict__ x, float2 *__restrict__ y, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float2 xi = x[i];
    float2 yi = y[i];
    yi.x += a.x * xi.x - a.y * xi.y;
    yi.y += a.x * xi.y + a.y * xi.x;
    y[i] = yi;
  }
}

__global__ void xpay_kernel(const float2 *__restrict__ x, float2 b, float2 *__restrict__ y, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float2 xi = x[i], yi = y[i];
    y[i] = make_float2(xi.x + (b.x * yi.x - b.y * yi.y), xi.y + (b.x * yi.y + b.y * yi.x));
  }
}

float2 to_float2(std::complex<double> z) {
  return make_float2(static_cast<float>(z.real()), static_cast<float>(z.imag()));
}

} // namespace

StreamHandle default_stream() { return thread_state().stream; }

DeviceMemory device_memory() {
  DeviceMemory m;
  MRI_CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

StreamTimer::StreamTimer(StreamHandle stream) : stream_(stream ? stream : default_stream()) {
  cudaEvent_t a = nullptr, b = nullptr;
  MRI_CUDA_CHECK(cudaEventCreate(&a));
  MRI_CUDA_CHECK(cudaEventCreate(&b));
  start_ = a;
  stop_ = b;
}
StreamTimer::~StreamTimer() {
  cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}
void StreamTimer::start() { MRI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(start_), as_stream(stream_))); }
double StreamTimer::stop_ms() {
  MRI_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(stop_), as_stream(stream_)));
  MRI_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  float ms = 0;
  MRI_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)));
  return ms;
}

double measure_copy_bandwidth(std::size_t bytes, int repeats) {
  void *a = detail::device_malloc(bytes), *b = detail::device_malloc(bytes);
  MRI_CUDA_CHECK(cudaMemset(a, 1, bytes));
  StreamTimer timer;
  std::vector<double> ms;
  for (int r = 0; r <= repeats; ++r) { // the first is a warm-up
    timer.start();
    MRI_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, as_stream(default_stream())));
    const double t = timer.stop_ms();
    if (r > 0) ms.push_back(t);
  }
  detail::device_free(a);
  detail::device_free(b);
  std::sort(ms.begin(), ms.end());
  return 2.0 * static_cast<double>(bytes) / (ms[ms.size() / 2] * 1e-3);
}

DeviceImage::DeviceImage(const Grid &grid, StreamHandle stream)
    : grid_(grid), size_(static_cast<std::size_t>(grid.voxels())), stream_(stream ? stream : default_stream()) {
  data_ = static_cast<cfloat *>(detail::device_malloc(size_ * sizeof(cfloat)));
}

DeviceImage::DeviceImage(const Image &host, StreamHandle stream) : DeviceImage(host.grid(), stream) {
  upload(host.data());
}

DeviceImage::~DeviceImage() { release(); }

DeviceImage::DeviceImage(DeviceImage &&o) noexcept
    : grid_(o.grid_), size_(std::exchange(o.size_, 0)), data_(std::exchange(o.data_, nullptr)), stream_(o.stream_) {}

DeviceImage &DeviceImage::operator=(DeviceImage &&o) noexcept {
  if (this != &o) {
    release();
    grid_ = o.grid_;
    size_ = std::exchange(o.size_, 0);
    data_ = std::exchange(o.data_, nullptr);
    stream_ = o.stream_;
  }
  return *this;
}

void DeviceImage::release() noexcept {
  // cudaFree waits for work in flight on the buffer; errors at process exit are ignored.
  detail::device_free(data_);
  data_ = nullptr;
  size_ = 0;
}

void DeviceImage::upload(const cfloat *host) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(data_, host, size_ * sizeof(cfloat), cudaMemcpyHostToDevice, as_stream(stream_)));
  MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
}

void DeviceImage::download(cfloat *host) const {
  MRI_CUDA_CHECK(cudaMemcpyAsync(host, data_, size_ * sizeof(cfloat), cudaMemcpyDeviceToHost, as_stream(stream_)));
  MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_)));
}

Image DeviceImage::to_host() const {
  Image out(grid_);
  download(out.data());
  return out;
}

} // namespace mri::cuda

namespace mri {

using cuda::DeviceImage;
using namespace cuda; // the helpers above

void VectorOps<DeviceImage>::copy(const DeviceImage &from, DeviceImage &to) {
  if (to.size() != from.size() || to.grid() != from.grid()) to = DeviceImage(from.grid(), from.stream());
  MRI_CUDA_CHECK(cudaMemcpyAsync(to.data(), from.data(), from.size() * sizeof(cfloat), cudaMemcpyDeviceToDevice,
                                 as_stream(to.stream())));
}

std::complex<double> VectorOps<DeviceImage>::dot(const DeviceImage &a, const DeviceImage &b) {
  require_same(a, b, "dot");
  const double2 s = reduce(DotOp{dev(a), dev(b)}, static_cast<long long>(a.size()), as_stream(a.stream()));
  return {s.x, s.y};
}

double VectorOps<DeviceImage>::norm2(const DeviceImage &a) {
  return reduce(Norm2Op{dev(a)}, static_cast<long long>(a.size()), as_stream(a.stream())).x;
}

void VectorOps<DeviceImage>::axpy(std::complex<double> alpha, const DeviceImage &x, DeviceImage &y) {
  require_same(x, y, "axpy");
  const auto n = static_cast<long long>(x.size());
  axpy_kernel<<<elementwise_blocks(n), kThreads, 0, as_stream(y.stream())>>>(to_float2(alpha), dev(x), dev(y), n);
  MRI_CUDA_CHECK(cudaGetLastError());
}

void VectorOps<DeviceImage>::xpay(const DeviceImage &x, std::complex<double> beta, DeviceImage &y) {
  require_same(x, y, "xpay");
  const auto n = static_cast<long long>(x.size());
  xpay_kernel<<<elementwise_blocks(n), kThreads, 0, as_stream(y.stream())>>>(dev(x), to_float2(beta), dev(y), n);
  MRI_CUDA_CHECK(cudaGetLastError());
}

void VectorOps<DeviceImage>::zero(DeviceImage &v) {
  MRI_CUDA_CHECK(cudaMemsetAsync(v.data(), 0, v.size() * sizeof(cfloat), as_stream(v.stream())));
}

bool VectorOps<DeviceImage>::all_finite(const DeviceImage &v) {
  return reduce(NonFiniteOp{dev(v)}, static_cast<long long>(v.size()), as_stream(v.stream())).x == 0.0;
}

double VectorOps<DeviceImage>::update_norm2(std::complex<double> alpha, const DeviceImage &p, const DeviceImage &ap,
                                            DeviceImage &x, DeviceImage &r) {
  require_same(p, ap, "update_norm2");
  require_same(p, x, "update_norm2");
  require_same(p, r, "update_norm2");
  return reduce(UpdateOp{to_float2(alpha), dev(p), dev(ap), dev(x), dev(r)}, static_cast<long long>(p.size()),
                as_stream(r.stream()))
      .x;
}

} // namespace mri
