// The coil-batched SENSE Toeplitz operator (sense_toeplitz.hpp).
#include "device.cuh"
#include "toeplitz/normal_common.cuh"
#include "sense_toeplitz.hpp"
#include "toeplitz/toeplitz_plans.cuh"
#include "mri_backend/tuning.hpp"

namespace mri::cuda::detail {
namespace {

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 conj_mul(float2 a, float2 b) { // conj(a) b
  return make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}

// Padded grid blockIdx.y of the pass: S_c x on the image's corner, zero elsewhere (the in-place
// transforms overwrite the zeros, so every voxel is written each pass).
__global__ void pad_coils_kernel(const float2 *__restrict__ maps, const float2 *__restrict__ x, Dims d, int n,
                                 long long l, float2 *__restrict__ w) {
  const int b = blockIdx.y;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < l; p += stride) {
    const int vox = padded_source_voxel(p, d);
    w[static_cast<long long>(b) * l + p] = vox >= 0 ? cmul(maps[static_cast<long long>(b) * n + vox], x[vox]) : make_float2(0.f, 0.f);
  }
}

__global__ void multiply_coils_kernel(float2 *__restrict__ w, const float *__restrict__ k, long long l) {
  float2 *grid = w + static_cast<long long>(blockIdx.y) * l;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < l; p += stride) {
    const float kp = k[p];
    const float2 v = grid[p];
    grid[p] = make_float2(v.x * kp, v.y * kp);
  }
}

// out[v] (first pass: =, else +=) sum_b conj(S_b[v]) W_b[p(v)], + lambda R^H R x in the last pass
// (reg != kRegNone).
__global__ void crop_combine_kernel(const float2 *__restrict__ w, const float2 *__restrict__ maps,
                                    const float2 *__restrict__ x, Dims d, int n, long long l, int count, bool first,
                                    int reg, float lambda, float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  int ix, iy, iz;
  image_coordinates(v, d, ix, iy, iz);
  const long long p = padded_index(ix, iy, iz, d);
  float2 acc = first ? make_float2(0.f, 0.f) : out[v];
  for (int b = 0; b < count; ++b) {
    const float2 t = conj_mul(maps[static_cast<long long>(b) * n + v], w[static_cast<long long>(b) * l + p]);
    acc.x += t.x;
    acc.y += t.y;
  }
  if (reg != mri::detail::kRegNone) add_regularizer_voxel(reg, lambda, x, v, ix, iy, iz, d, acc);
  out[v] = acc;
}

const float2 *f2(const cfloat *p) { return reinterpret_cast<const float2 *>(p); }

} // namespace

struct SenseToeplitz::Impl {
  const DeviceCoils *coils;
  const QOperator *toeplitz;
  int batch;
  Dims dims;
  cudaStream_t stream;
  std::shared_ptr<PlanSet> full, rest; // plans of `batch` grids and of the last pass's remainder
  DeviceBuffer<float2> w;              // batch padded grids
  cudaEvent_t event;

  Impl(const DeviceCoils &c, const QOperator &t, int b)
      : coils(&c), toeplitz(&t), batch(b), dims(dims_of(c.grid(), c.grid().doubled())),
        stream(as_stream(t.stream())) {
    const Grid padded = c.grid().doubled();
    const int remainder = c.count() % b;
    full = acquire_plans(padded, ToeplitzFft::Unfused, stream, b);
    if (remainder) rest = acquire_plans(padded, ToeplitzFft::Unfused, stream, remainder);
    w = DeviceBuffer<float2>(static_cast<std::size_t>(b) * static_cast<std::size_t>(padded.voxels()));
    event = make_event();
  }
  ~Impl() {
    if (event) cudaEventDestroy(event);
  }

  // Coils c0 .. c0 + count - 1 into out (= on the first pass, += after; last adds the regulariser).
  void pass(const float2 *x, int c0, int count, bool last, float2 *out) const {
    const int n = static_cast<int>(coils->grid().voxels());
    const auto l = static_cast<long long>(coils->grid().doubled().voxels());
    const float2 *maps = f2(coils->maps()) + static_cast<long long>(c0) * n;
    PlanSet &plans = count == batch ? *full : *rest;
    plans.set_stream(stream);
    const dim3 spread(static_cast<unsigned>(std::min<long long>(mri::cuda::blocks_for(l), 4LL * multiprocessor_count())),
                      static_cast<unsigned>(count));
    pad_coils_kernel<<<spread, kThreads, 0, stream>>>(maps, x, dims, n, l, w.get());
    MRI_CUDA_CHECK(cudaGetLastError());
    auto *buf = reinterpret_cast<cufftComplex *>(w.get());
    MRI_CUFFT_CHECK(cufftExecC2C(plans.fwd, buf, buf, CUFFT_FORWARD));
    multiply_coils_kernel<<<spread, kThreads, 0, stream>>>(w.get(), toeplitz->device_spectrum(), l);
    MRI_CUDA_CHECK(cudaGetLastError());
    MRI_CUFFT_CHECK(cufftExecC2C(plans.inv, buf, buf, CUFFT_INVERSE));
    const bool regularize = last && coils->regularizer() != Regularizer::None && coils->lambda() != 0.0f;
    crop_combine_kernel<<<mri::cuda::blocks_for(n), kThreads, 0, stream>>>(
        w.get(), maps, x, dims, n, l, count, c0 == 0,
        regularize ? static_cast<int>(coils->regularizer()) : mri::detail::kRegNone, coils->lambda(), out);
    MRI_CUDA_CHECK(cudaGetLastError());
  }
};

SenseToeplitz::SenseToeplitz(const DeviceCoils &coils, const QOperator &toeplitz, int batch) {
  if (batch < 1 || batch > coils.count())
    mri::detail::invalid_argument("batch", batch, "must be in [1, " + std::to_string(coils.count()) + "] (the coils)");
  if (toeplitz.grid() != coils.grid())
    mri::detail::invalid_argument("toeplitz.grid().voxels()", toeplitz.grid().voxels(),
                                  "must be the maps' grid (" + std::to_string(coils.grid().voxels()) + " voxels)");
  impl_ = std::make_unique<Impl>(coils, toeplitz, batch);
}
SenseToeplitz::~SenseToeplitz() = default;
SenseToeplitz::SenseToeplitz(SenseToeplitz &&) noexcept = default;
SenseToeplitz &SenseToeplitz::operator=(SenseToeplitz &&) noexcept = default;

int SenseToeplitz::batch() const { return impl_->batch; }

DeviceImage SenseToeplitz::domain_vector() const {
  return DeviceImage(impl_->coils->grid(), static_cast<StreamHandle>(impl_->stream));
}

void SenseToeplitz::apply(const DeviceImage &x, DeviceImage &out) const {
  const Impl &im = *impl_;
  check_image(x, im.coils->grid(), "x");
  check_image(out, im.coils->grid(), "out");
  if (x.data() == out.data()) mri::detail::invalid_argument("out", "x", "must not alias the input");
  join(as_stream(x.stream()), im.stream, im.event);
  const int coils = im.coils->count();
  for (int c0 = 0; c0 < coils; c0 += im.batch) {
    const int count = std::min(im.batch, coils - c0);
    im.pass(f2(x.data()), c0, count, c0 + count == coils, reinterpret_cast<float2 *>(out.data()));
  }
  join(im.stream, as_stream(out.stream()), im.event);
}

} // namespace mri::cuda::detail
