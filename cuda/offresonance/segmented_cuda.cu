// Time segmentation on the device (segmented_cuda.hpp): the segmented F and F^H on a NUFFT plan,
// its direct normal, and its Toeplitz normal with SENSE's coils batched.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <complex>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "device.cuh"
#include "mri_backend/tuning.hpp"
#include "nufft/gridding_cuda.hpp"
#include "segmented_cuda.hpp"
#include "sense/sense_cuda.hpp"
#include "toeplitz/normal_common.cuh"
#include "toeplitz/toeplitz_plans.cuh"

namespace mri::cuda::detail {
namespace {

// What one pass's padded grids (coils x segments) may take; the cuFFT work area comes on top.
constexpr std::size_t kBatchBytes = std::size_t{512} << 20;
// What the kernels' Q grids of one batch of pairs may take while the spectra are made (the cuFFT
// work area comes on top, about as much): every pair in one batched adjoint NUFFT and one batched
// FFT where they fit, so that the construction synchronises once, not once per few pairs.
constexpr std::size_t kPairBatchBytes = std::size_t{256} << 20;
// What the batched adjoint's sample vectors and images (coils x segments of each) may take.
constexpr std::size_t kAdjointBatchBytes = std::size_t{256} << 20;

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 conj_mul(float2 a, float2 b) { // conj(a) b
  return make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}
__device__ __forceinline__ void add_to(float2 &acc, float2 v) {
  acc.x += v.x;
  acc.y += v.y;
}
const float2 *f2(const cfloat *p) { return reinterpret_cast<const float2 *>(p); }
float2 *f2(cfloat *p) { return reinterpret_cast<float2 *>(p); }

long long grid_stride_blocks(long long n) {
  return std::min<long long>(mri::cuda::blocks_for(n), 4LL * multiprocessor_count());
}

// out[l M + m] = conj(B[l M + m]) y[m] for every segment l (blockIdx.y).
__global__ void segment_samples_kernel(const float2 *__restrict__ y, const float2 *__restrict__ b, int m,
                                       float2 *__restrict__ out) {
  const long long off = static_cast<long long>(blockIdx.y) * m;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x)
    out[off + i] = conj_mul(b[off + i], y[i]);
}

// out[v] = sum_l conj(E[l N + v]) images[l N + v].
__global__ void combine_segments_kernel(const float2 *__restrict__ images, const float2 *__restrict__ e, int l, int n,
                                        float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  float2 acc = make_float2(0.f, 0.f);
  for (int s = 0; s < l; ++s) add_to(acc, conj_mul(e[static_cast<long long>(s) * n + v], images[static_cast<long long>(s) * n + v]));
  out[v] = acc;
}

// out[(c L + l) M + i] = conj(B[l M + i]) y[c M + i]: coil c = blockIdx.y / L and segment
// l = blockIdx.y % L of a pass.
__global__ void segment_coil_samples_kernel(const float2 *__restrict__ y, const float2 *__restrict__ b, int m,
                                            int segments, float2 *__restrict__ out) {
  const long long coil = blockIdx.y / segments, l = blockIdx.y % segments;
  const float2 *bl = b + l * m, *yc = y + coil * m;
  float2 *o = out + static_cast<long long>(blockIdx.y) * m;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x) o[i] = conj_mul(bl[i], yc[i]);
}

// out[v] (first: =, else +=) sum_c conj(S_c[v]) sum_l conj(E_l[v]) images[(c L + l) N + v] over the
// pass's coils (maps null: one coil without a map).
__global__ void combine_coil_segments_kernel(const float2 *__restrict__ images, const float2 *__restrict__ e,
                                             const float2 *__restrict__ maps, int coils, int segments, int n, bool first,
                                             float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  float2 acc = first ? make_float2(0.f, 0.f) : out[v];
  for (int c = 0; c < coils; ++c) {
    float2 t = make_float2(0.f, 0.f);
    for (int s = 0; s < segments; ++s)
      add_to(t, conj_mul(e[static_cast<long long>(s) * n + v], images[(static_cast<long long>(c) * segments + s) * n + v]));
    add_to(acc, maps ? conj_mul(maps[static_cast<long long>(c) * n + v], t) : t);
  }
  out[v] = acc;
}

// out = x .* e (one segment's modulated image).
__global__ void modulate_kernel(const float2 *__restrict__ x, const float2 *__restrict__ e, int n, float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v < n) out[v] = cmul(x[v], e[v]);
}

// out (first: =, else +=) b .* y.
__global__ void accumulate_samples_kernel(const float2 *__restrict__ y, const float2 *__restrict__ b, int m, bool first,
                                          float2 *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float2 v = cmul(b[i], y[i]);
  if (first)
    out[i] = v;
  else
    add_to(out[i], v);
}

// Pair blockIdx.y of a chunk: c[j M + m] = conj(B_l[m]) B_l'[m] w[m] (w null: ones).
__global__ void pair_coefficients_kernel(const float2 *__restrict__ b, const int2 *__restrict__ pairs, int m,
                                         const float *__restrict__ w, float2 *__restrict__ c) {
  const int2 p = pairs[blockIdx.y];
  const float2 *bl = b + static_cast<long long>(p.x) * m, *blp = b + static_cast<long long>(p.y) * m;
  float2 *out = c + static_cast<long long>(blockIdx.y) * m;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x) {
    float2 v = conj_mul(bl[i], blp[i]);
    if (w) v = make_float2(v.x * w[i], v.y * w[i]);
    out[i] = v;
  }
}

// Grid blockIdx.y of a chunk of Q (doubled grid, offset d at index d + n) into circulant order
// (index d mod 2n), times `scale`: the kernel the forward FFT makes a spectrum of.
__global__ void centre_kernel(const float2 *__restrict__ q, Dims d, long long l, float scale, float2 *__restrict__ k) {
  const float2 *src = q + static_cast<long long>(blockIdx.y) * l;
  float2 *dst = k + static_cast<long long>(blockIdx.y) * l;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < l; p += stride) {
    int px, py, pz;
    padded_coordinates(p, d, px, py, pz);
    const long long to = (px + d.lx / 2) % d.lx + static_cast<long long>(d.lx) * ((py + d.ly / 2) % d.ly +
                                                                                 static_cast<long long>(d.ly) * ((pz + d.lz / 2) % d.lz));
    const float2 v = src[p];
    dst[to] = make_float2(v.x * scale, v.y * scale);
  }
}

// Padded grid blockIdx.y = (coil b, segment s) of a pass: S_b x E_s on the image's corner, zero
// elsewhere (every padded voxel written: the in-place transforms overwrite the zeros). maps null:
// one coil without maps.
__global__ void pad_segments_kernel(const float2 *__restrict__ maps, const float2 *__restrict__ x,
                                    const float2 *__restrict__ e, int segments, Dims d, int n, long long l,
                                    float2 *__restrict__ w) {
  const int b = blockIdx.y / segments, s = blockIdx.y % segments;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < l; p += stride) {
    const int vox = padded_source_voxel(p, d);
    float2 v = make_float2(0.f, 0.f);
    if (vox >= 0) {
      v = cmul(x[vox], e[static_cast<long long>(s) * n + vox]);
      if (maps) v = cmul(maps[static_cast<long long>(b) * n + vox], v);
    }
    w[static_cast<long long>(blockIdx.y) * l + p] = v;
  }
}

// Z_l = sum_l' K_ll' X_l' at every frequency of coil blockIdx.y's L spectra, in place; K_ll' for
// l <= l' pair by pair (l = 0: (0,0), (0,1), ..; l = 1: (1,1), ..), K_l'l = conj(K_ll').
template <int L> __global__ void segment_product_kernel(float2 *__restrict__ w, const float2 *__restrict__ k, long long l) {
  float2 *g = w + static_cast<long long>(blockIdx.y) * L * l;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < l; p += stride) {
    float2 x[L], z[L];
#pragma unroll
    for (int s = 0; s < L; ++s) {
      x[s] = g[s * l + p];
      z[s] = make_float2(0.f, 0.f);
    }
    int pair = 0;
#pragma unroll
    for (int a = 0; a < L; ++a) {
      add_to(z[a], cmul(k[pair++ * l + p], x[a]));
#pragma unroll
      for (int b = a + 1; b < L; ++b) {
        const float2 kk = k[pair++ * l + p];
        add_to(z[a], cmul(kk, x[b]));
        add_to(z[b], conj_mul(kk, x[a]));
      }
    }
#pragma unroll
    for (int s = 0; s < L; ++s) g[s * l + p] = z[s];
  }
}

template <int L> void launch_product(float2 *w, const float2 *k, long long l, int coils, cudaStream_t stream) {
  const dim3 blocks(static_cast<unsigned>(grid_stride_blocks(l)), static_cast<unsigned>(coils));
  segment_product_kernel<L><<<blocks, kThreads, 0, stream>>>(w, k, l);
  MRI_CUDA_CHECK(cudaGetLastError());
}

template <int... Ls>
void product_for(int segments, float2 *w, const float2 *k, long long l, int coils, cudaStream_t stream,
                 std::integer_sequence<int, Ls...>) {
  const bool ran = ((segments == Ls + 1 ? (launch_product<Ls + 1>(w, k, l, coils, stream), true) : false) || ...);
  if (!ran) mri::detail::invalid_argument("segments", segments, "must be in [1, 16] for the device's Toeplitz product");
}

// out[v] (first pass: =, else +=) sum_b conj(S_b[v]) sum_s conj(E_s[v]) W_(b,s)[p(v)], + lambda R^H R x
// (reg != kRegNone: the last pass). maps null: one coil without maps.
__global__ void crop_combine_segments_kernel(const float2 *__restrict__ w, const float2 *__restrict__ maps,
                                             const float2 *__restrict__ e, const float2 *__restrict__ x, Dims d, int n,
                                             long long l, int coils, int segments, bool first, int reg, float lambda,
                                             float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  int ix, iy, iz;
  image_coordinates(v, d, ix, iy, iz);
  const long long p = padded_index(ix, iy, iz, d);
  float2 acc = first ? make_float2(0.f, 0.f) : out[v];
  for (int b = 0; b < coils; ++b) {
    float2 coil = make_float2(0.f, 0.f);
    for (int s = 0; s < segments; ++s)
      add_to(coil, conj_mul(e[static_cast<long long>(s) * n + v], w[(static_cast<long long>(b) * segments + s) * l + p]));
    add_to(acc, maps ? conj_mul(maps[static_cast<long long>(b) * n + v], coil) : coil);
  }
  if (reg != mri::detail::kRegNone) add_regularizer_voxel(reg, lambda, x, v, ix, iy, iz, d, acc);
  out[v] = acc;
}

// The tables of make_segment_tables (lib/offresonance/segmentation.cpp) from the fit, in double as
// there, each entry rounded to float once: B[l M + m] = b_l(t_m) exp(-2 pi i f0 t_m) with b = P e(t),
// e_j(t) = exp(-2 pi i fit_hz[j] t) (bins == 0: the Hanning windows around the centres), one
// thread per (sample, segment blockIdx.y).
constexpr double kTwoPi = 6.283185307179586476925286766559;

__device__ __forceinline__ double2 polar_turns(double hz, double t) { // exp(-2 pi i hz t), as std::polar
  if (hz == 0) return make_double2(1.0, 0.0);
  double s, c;
  sincos(-kTwoPi * hz * t, &s, &c);
  return make_double2(c, s);
}

__global__ void sample_coefficients_kernel(const float *__restrict__ times, int m, const double2 *__restrict__ projector,
                                           const double *__restrict__ fit_hz, int bins, const double *__restrict__ centres,
                                           double f0, float2 *__restrict__ b) {
  const int l = blockIdx.y;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += gridDim.x * blockDim.x) {
    const double t = times[i];
    double2 acc = make_double2(0.0, 0.0);
    if (bins > 0) {
      for (int j = 0; j < bins; ++j) {
        const double2 p = projector[static_cast<long long>(l) * bins + j], e = polar_turns(fit_hz[j], t);
        acc = make_double2(acc.x + (p.x * e.x - p.y * e.y), acc.y + (p.x * e.y + p.y * e.x));
      }
    } else {
      const double u = (t - centres[l]) / (centres[1] - centres[0]);
      acc.x = fabs(u) < 1 ? 0.5 * (1 + cos(kTwoPi / 2 * u)) : 0.0; // as the host's std::cos(pi u)
    }
    const double2 d = polar_turns(f0, t);
    b[static_cast<long long>(l) * m + i] =
        make_float2(static_cast<float>(acc.x * d.x - acc.y * d.y), static_cast<float>(acc.x * d.y + acc.y * d.x));
  }
}

// E[l N + v] = exp(-2 pi i (f(v) - f0) tau_l), segment blockIdx.y.
__global__ void voxel_phases_kernel(const float *__restrict__ hz, int n, const double *__restrict__ centres, double f0,
                                    float2 *__restrict__ e) {
  const int l = blockIdx.y;
  for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
    double s, c;
    sincos(-kTwoPi * (static_cast<double>(hz[v]) - f0) * centres[l], &s, &c);
    e[static_cast<long long>(l) * n + v] = make_float2(static_cast<float>(c), static_cast<float>(s));
  }
}

template <class T> DeviceBuffer<T> upload(std::span<const T> host, cudaStream_t stream) {
  DeviceBuffer<T> d(std::max<std::size_t>(host.size(), 1));
  if (!host.empty())
    MRI_CUDA_CHECK(cudaMemcpyAsync(d.get(), host.data(), host.size_bytes(), cudaMemcpyHostToDevice, stream));
  return d;
}

} // namespace

// ---------------------------------------------------------------------------------------
// SegmentedFieldDevice

struct SegmentedFieldDevice::Impl {
  Grid grid;
  int segments = 1;
  std::size_t m = 0;
  std::shared_ptr<NufftDevicePlan> nufft;
  Gridding gridding = Gridding::Gather;
  cudaStream_t stream = nullptr;
  DeviceBuffer<float2> b, e;              // L x M, L x N
  mutable DeviceBuffer<float2> ls, li;    // the adjoint's L weighted sample vectors and L images
  mutable DeviceBuffer<float2> one_image; // the forward's modulated image
  mutable DeviceBuffer<float2> one_samples;

  int n() const { return static_cast<int>(grid.voxels()); }
};

namespace {

// The plan and the buffers of `segments` segments (the tables allocated, not filled).
void set_up(SegmentedFieldDevice::Impl &p, int segments, std::shared_ptr<NufftDevicePlan> nufft, const Grid &grid,
            std::size_t samples, Gridding gridding) {
  if (!nufft) mri::detail::invalid_argument("nufft", "null", "needs a device NUFFT plan");
  const auto L = static_cast<std::size_t>(segments);
  const auto N = static_cast<std::size_t>(grid.voxels());
  p.grid = grid;
  p.segments = segments;
  p.m = samples;
  p.nufft = std::move(nufft);
  p.gridding = gridding;
  p.stream = as_stream(p.nufft->stream());
  p.b = DeviceBuffer<float2>(L * samples);
  p.e = DeviceBuffer<float2>(L * N);
  p.ls = DeviceBuffer<float2>(L * samples);
  p.li = DeviceBuffer<float2>(L * N);
  p.one_image = DeviceBuffer<float2>(N);
  p.one_samples = DeviceBuffer<float2>(samples);
}

} // namespace

SegmentedFieldDevice::SegmentedFieldDevice(const TimeSegmentation &s, std::shared_ptr<NufftDevicePlan> nufft,
                                           const Grid &grid, std::size_t samples, Gridding gridding)
    : impl_(std::make_unique<Impl>()) {
  const auto L = static_cast<std::size_t>(s.segments);
  const auto N = static_cast<std::size_t>(grid.voxels());
  if (s.segments < 1 || s.sample_coefficients.size() != L * samples)
    mri::detail::invalid_argument("segmentation.sample_coefficients.size()", s.sample_coefficients.size(),
                                  "must be segments x samples = " + std::to_string(L * samples));
  if (s.voxel_phases.size() != L * N)
    mri::detail::invalid_argument("segmentation.voxel_phases.size()", s.voxel_phases.size(),
                                  "must be segments x voxels = " + std::to_string(L * N));
  Impl &p = *impl_;
  set_up(p, s.segments, std::move(nufft), grid, samples, gridding);
  MRI_CUDA_CHECK(cudaMemcpyAsync(p.b.get(), s.sample_coefficients.data(), L * samples * sizeof(float2),
                                 cudaMemcpyHostToDevice, p.stream));
  MRI_CUDA_CHECK(cudaMemcpyAsync(p.e.get(), s.voxel_phases.data(), L * N * sizeof(float2), cudaMemcpyHostToDevice, p.stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(p.stream)); // the host tables may go on return
}

SegmentedFieldDevice::SegmentedFieldDevice(const TimeSegmentation &fit, std::span<const float> times,
                                           std::span<const float> field_hz, std::shared_ptr<NufftDevicePlan> nufft,
                                           const Grid &grid, Gridding gridding)
    : impl_(std::make_unique<Impl>()) {
  const auto L = static_cast<std::size_t>(fit.segments);
  const std::size_t J = fit.fit_hz.size();
  if (fit.segments < 1 || fit.centres.size() != L)
    mri::detail::invalid_argument("segmentation.segments", fit.segments, "must be >= 1 with one centre each (fit_segmentation)");
  if (fit.projector.size() != L * J || (J == 0 && (fit.interpolator != SegmentInterpolator::Hanning || L < 2)))
    mri::detail::invalid_argument("segmentation.projector.size()", fit.projector.size(),
                                  "must be segments x fit_hz.size() (fit_segmentation's)");
  if (field_hz.size() != static_cast<std::size_t>(grid.voxels()))
    mri::detail::invalid_argument("field_hz.size()", field_hz.size(), "must be grid.voxels() = " + std::to_string(grid.voxels()));
  if (times.empty()) mri::detail::invalid_argument("times.size()", 0, "the tables need the samples' times");
  Impl &p = *impl_;
  set_up(p, fit.segments, std::move(nufft), grid, times.size(), gridding);
  static_assert(sizeof(std::complex<double>) == sizeof(double2));
  const auto t_dev = upload(times, p.stream), hz_dev = upload(field_hz, p.stream);
  const auto fit_hz_dev = upload(std::span<const double>(fit.fit_hz), p.stream),
             centres_dev = upload(std::span<const double>(fit.centres), p.stream);
  const auto projector_dev = upload(
      std::span<const double2>(reinterpret_cast<const double2 *>(fit.projector.data()), fit.projector.size()), p.stream);
  const int m = static_cast<int>(times.size()), n = p.n();
  sample_coefficients_kernel<<<dim3(static_cast<unsigned>(grid_stride_blocks(m)), static_cast<unsigned>(L)), kThreads, 0,
                               p.stream>>>(t_dev.get(), m, projector_dev.get(), fit_hz_dev.get(), static_cast<int>(J),
                                           centres_dev.get(), fit.reference_hz, p.b.get());
  MRI_CUDA_CHECK(cudaGetLastError());
  voxel_phases_kernel<<<dim3(static_cast<unsigned>(grid_stride_blocks(n)), static_cast<unsigned>(L)), kThreads, 0, p.stream>>>(
      hz_dev.get(), n, centres_dev.get(), fit.reference_hz, p.e.get());
  MRI_CUDA_CHECK(cudaGetLastError());
  MRI_CUDA_CHECK(cudaStreamSynchronize(p.stream)); // the uploads go on return
}

SegmentedFieldDevice::~SegmentedFieldDevice() = default;
SegmentedFieldDevice::SegmentedFieldDevice(SegmentedFieldDevice &&) noexcept = default;
SegmentedFieldDevice &SegmentedFieldDevice::operator=(SegmentedFieldDevice &&) noexcept = default;

int SegmentedFieldDevice::segments() const { return impl_->segments; }
const Grid &SegmentedFieldDevice::grid() const { return impl_->grid; }
std::size_t SegmentedFieldDevice::samples() const { return impl_->m; }
StreamHandle SegmentedFieldDevice::stream() const { return impl_->stream; }
const cfloat *SegmentedFieldDevice::device_sample_coefficients() const {
  return reinterpret_cast<const cfloat *>(impl_->b.get());
}
const cfloat *SegmentedFieldDevice::device_voxel_phases() const { return reinterpret_cast<const cfloat *>(impl_->e.get()); }

namespace {
std::vector<cfloat> download(const float2 *device, std::size_t count, cudaStream_t stream) {
  std::vector<cfloat> host(count);
  MRI_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, count * sizeof(float2), cudaMemcpyDeviceToHost, stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}
} // namespace

std::vector<cfloat> SegmentedFieldDevice::sample_coefficients() const {
  return download(impl_->b.get(), static_cast<std::size_t>(impl_->segments) * impl_->m, impl_->stream);
}
std::vector<cfloat> SegmentedFieldDevice::voxel_phases() const {
  return download(impl_->e.get(), static_cast<std::size_t>(impl_->segments) * static_cast<std::size_t>(impl_->n()),
                  impl_->stream);
}

void SegmentedFieldDevice::adjoint_device(const cfloat *samples, cfloat *image) const {
  const Impl &p = *impl_;
  const int m = static_cast<int>(p.m), n = p.n();
  const dim3 blocks(static_cast<unsigned>(grid_stride_blocks(m)), static_cast<unsigned>(p.segments));
  segment_samples_kernel<<<blocks, kThreads, 0, p.stream>>>(f2(samples), p.b.get(), m, p.ls.get());
  MRI_CUDA_CHECK(cudaGetLastError());
  p.nufft->adjoint_coils_device(reinterpret_cast<const cfloat *>(p.ls.get()), p.segments,
                                reinterpret_cast<cfloat *>(p.li.get()), p.gridding);
  combine_segments_kernel<<<mri::cuda::blocks_for(n), kThreads, 0, p.stream>>>(p.li.get(), p.e.get(), p.segments, n,
                                                                               f2(image));
  MRI_CUDA_CHECK(cudaGetLastError());
}

int SegmentedFieldDevice::adjoint_batch(const Grid &grid, std::size_t samples, int segments, int coils) {
  const std::size_t per_coil =
      static_cast<std::size_t>(segments) * (samples + static_cast<std::size_t>(grid.voxels())) * sizeof(float2);
  return static_cast<int>(std::clamp<std::size_t>(kAdjointBatchBytes / std::max<std::size_t>(per_coil, 1), 1,
                                                  static_cast<std::size_t>(std::max(1, coils))));
}

void SegmentedFieldDevice::adjoint_coils_device(const cfloat *samples, int coils, const cfloat *maps, cfloat *image) const {
  const Impl &p = *impl_;
  if (coils < 1 || (!maps && coils != 1))
    mri::detail::invalid_argument("coils", coils, "must be >= 1, and 1 without maps");
  const int m = static_cast<int>(p.m), n = p.n();
  const int batch = adjoint_batch(p.grid, p.m, p.segments, coils);
  const auto vectors = static_cast<std::size_t>(batch) * static_cast<std::size_t>(p.segments);
  p.ls.grow(vectors * p.m);
  p.li.grow(vectors * static_cast<std::size_t>(n));
  for (int c0 = 0; c0 < coils; c0 += batch) {
    const int count = std::min(batch, coils - c0);
    const dim3 blocks(static_cast<unsigned>(grid_stride_blocks(m)), static_cast<unsigned>(count * p.segments));
    segment_coil_samples_kernel<<<blocks, kThreads, 0, p.stream>>>(f2(samples) + static_cast<std::size_t>(c0) * p.m,
                                                                   p.b.get(), m, p.segments, p.ls.get());
    MRI_CUDA_CHECK(cudaGetLastError());
    p.nufft->adjoint_coils_device(reinterpret_cast<const cfloat *>(p.ls.get()), count * p.segments,
                                  reinterpret_cast<cfloat *>(p.li.get()), p.gridding);
    combine_coil_segments_kernel<<<mri::cuda::blocks_for(n), kThreads, 0, p.stream>>>(
        p.li.get(), p.e.get(), maps ? f2(maps) + static_cast<std::size_t>(c0) * n : nullptr, count, p.segments, n,
        c0 == 0, f2(image));
    MRI_CUDA_CHECK(cudaGetLastError());
  }
}

void SegmentedFieldDevice::forward_device(const cfloat *image, cfloat *samples) const {
  const Impl &p = *impl_;
  const int m = static_cast<int>(p.m), n = p.n();
  for (int s = 0; s < p.segments; ++s) {
    modulate_kernel<<<mri::cuda::blocks_for(n), kThreads, 0, p.stream>>>(f2(image), p.e.get() + static_cast<std::size_t>(s) * n,
                                                                        n, p.one_image.get());
    MRI_CUDA_CHECK(cudaGetLastError());
    p.nufft->forward_device(reinterpret_cast<const cfloat *>(p.one_image.get()),
                            reinterpret_cast<cfloat *>(p.one_samples.get()));
    accumulate_samples_kernel<<<mri::cuda::blocks_for(m), kThreads, 0, p.stream>>>(
        p.one_samples.get(), p.b.get() + static_cast<std::size_t>(s) * p.m, m, s == 0, f2(samples));
    MRI_CUDA_CHECK(cudaGetLastError());
  }
}

// ---------------------------------------------------------------------------------------
// SegmentedDirectNormal

struct SegmentedDirectNormal::Impl {
  const SegmentedFieldDevice *op = nullptr;
  Dims dims{};
  DeviceBuffer<float2> y;
  DeviceBuffer<float> weights;
  bool weighted = false;
  cudaEvent_t event = nullptr;
  ~Impl() {
    if (event) cudaEventDestroy(event);
  }
};

SegmentedDirectNormal::SegmentedDirectNormal(const SegmentedFieldDevice &op, std::span<const float> weights)
    : impl_(std::make_unique<Impl>()) {
  Impl &p = *impl_;
  const std::vector<float> w = checked_weights(weights, op.samples());
  p.op = &op;
  p.dims = dims_of(op.grid(), op.grid());
  p.y = DeviceBuffer<float2>(op.samples());
  p.weighted = !w.empty();
  if (p.weighted) {
    p.weights = DeviceBuffer<float>(w.size());
    MRI_CUDA_CHECK(cudaMemcpy(p.weights.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  p.event = make_event();
}
SegmentedDirectNormal::~SegmentedDirectNormal() = default;
SegmentedDirectNormal::SegmentedDirectNormal(SegmentedDirectNormal &&) noexcept = default;
SegmentedDirectNormal &SegmentedDirectNormal::operator=(SegmentedDirectNormal &&) noexcept = default;

const Grid &SegmentedDirectNormal::grid() const { return impl_->op->grid(); }
DeviceImage SegmentedDirectNormal::domain_vector() const { return DeviceImage(grid(), impl_->op->stream()); }
void SegmentedDirectNormal::apply(const DeviceImage &in, DeviceImage &out) const {
  apply_regularized(in, out, Regularizer::None, 0);
}

void SegmentedDirectNormal::apply_regularized(const DeviceImage &in, DeviceImage &out, Regularizer r, double lambda) const {
  const RegularizerTerm reg = regularizer_term(r, lambda);
  const Impl &p = *impl_;
  check_image(in, grid(), "in");
  check_image(out, grid(), "out");
  if (in.data() == out.data()) mri::detail::invalid_argument("out", "in", "must not alias the input");
  const cudaStream_t s = as_stream(p.op->stream());
  join(as_stream(in.stream()), s, p.event);
  cfloat *y = reinterpret_cast<cfloat *>(p.y.get());
  p.op->forward_device(in.data(), y);
  const int m = static_cast<int>(p.op->samples());
  if (p.weighted) {
    weight_kernel<<<mri::cuda::blocks_for(m), kThreads, 0, s>>>(p.y.get(), p.weights.get(), m);
    MRI_CUDA_CHECK(cudaGetLastError());
  }
  p.op->adjoint_device(y, out.data());
  if (reg.regularizer != mri::detail::kRegNone) {
    const int n = static_cast<int>(grid().voxels());
    add_regularizer_kernel<<<mri::cuda::blocks_for(n), kThreads, 0, s>>>(f2(in.data()), p.dims, n, reg.regularizer,
                                                                        reg.lambda, f2(out.data()));
    MRI_CUDA_CHECK(cudaGetLastError());
  }
  join(s, as_stream(out.stream()), p.event);
}

// ---------------------------------------------------------------------------------------
// SegmentedToeplitzDevice

struct SegmentedToeplitzDevice::Impl {
  const SegmentedFieldDevice *op = nullptr;
  const DeviceCoils *coils = nullptr;
  RegularizerTerm reg;
  Grid grid, padded;
  Dims dims{};
  int segments = 1, coil_count = 1, batch = 1;
  cudaStream_t stream = nullptr;
  DeviceBuffer<float2> spectra; // pairs x padded voxels
  DeviceBuffer<float2> w;       // batch x segments padded grids
  std::shared_ptr<PlanSet> full, rest;
  double kernel_seconds = 0;
  cudaEvent_t event = nullptr;
  ~Impl() {
    if (event) cudaEventDestroy(event);
  }

  long long l() const { return padded.voxels(); }
  int pairs() const { return segments * (segments + 1) / 2; }

  void make_kernels(const KPoint *points, std::span<const float> weights, const NufftOptions &nufft, Gridding gridding) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t m = op->samples();
    const long long L = l();
    std::vector<int2> table;
    for (int a = 0; a < segments; ++a)
      for (int b = a; b < segments; ++b) table.push_back(make_int2(a, b));
    DeviceBuffer<int2> pairs_dev(table.size());
    MRI_CUDA_CHECK(cudaMemcpyAsync(pairs_dev.get(), table.data(), table.size() * sizeof(int2), cudaMemcpyHostToDevice, stream));
    DeviceBuffer<float> w_dev(weights.size());
    if (!weights.empty())
      MRI_CUDA_CHECK(cudaMemcpyAsync(w_dev.get(), weights.data(), weights.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
    MRI_CUDA_CHECK(cudaStreamSynchronize(stream)); // the host table and weights may go
    // Q of the doubled k on the doubled grid: exp(i 2 pi k d / n) = exp(i 2 pi (2k) d / (2n)); an
    // axis of extent 1 has d = 0 only.
    const auto doubled_k = [&](int a) { return grid.extent(a) > 1 ? 2.0f : 0.0f; };
    const auto q_plan = make_device_nufft_plan(points, m, padded, nufft, {doubled_k(0), doubled_k(1), doubled_k(2)});
    const cudaStream_t qs = as_stream(q_plan->stream());
    const int chunk = pair_chunk(grid, segments);
    DeviceBuffer<float2> c(static_cast<std::size_t>(chunk) * m), q(static_cast<std::size_t>(chunk) * L);
    spectra = DeviceBuffer<float2>(static_cast<std::size_t>(pairs()) * L);
    const float scale = 1.0f / static_cast<float>(L);
    for (int i = 0; i < pairs(); i += chunk) {
      const int count = std::min(chunk, pairs() - i);
      const dim3 cb(static_cast<unsigned>(grid_stride_blocks(static_cast<long long>(m))), static_cast<unsigned>(count));
      pair_coefficients_kernel<<<cb, kThreads, 0, qs>>>(op_b(), pairs_dev.get() + i, static_cast<int>(m),
                                                        weights.empty() ? nullptr : w_dev.get(), c.get());
      MRI_CUDA_CHECK(cudaGetLastError());
      q_plan->adjoint_coils_device(reinterpret_cast<const cfloat *>(c.get()), count, reinterpret_cast<cfloat *>(q.get()),
                                   gridding);
      float2 *k = spectra.get() + static_cast<std::size_t>(i) * L;
      const dim3 kb(static_cast<unsigned>(grid_stride_blocks(L)), static_cast<unsigned>(count));
      centre_kernel<<<kb, kThreads, 0, qs>>>(q.get(), dims, L, scale, k);
      MRI_CUDA_CHECK(cudaGetLastError());
      const std::shared_ptr<PlanSet> plans = acquire_plans(padded, ToeplitzFft::Unfused, qs, count);
      plans->set_stream(qs);
      MRI_CUFFT_CHECK(cufftExecC2C(plans->fwd, reinterpret_cast<cufftComplex *>(k), reinterpret_cast<cufftComplex *>(k),
                                   CUFFT_FORWARD));
      MRI_CUDA_CHECK(cudaStreamSynchronize(qs)); // c and q are rewritten by the next chunk
    }
    kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const float2 *op_b() const { return f2(op->device_sample_coefficients()); }
  const float2 *op_e() const { return f2(op->device_voxel_phases()); }

  // Coils c0 .. c0 + count - 1 into out (= on the first pass, += after; last adds the regulariser).
  void pass(const float2 *x, int c0, int count, bool last, float2 *out) const {
    const int n = static_cast<int>(grid.voxels());
    const long long L = l();
    const float2 *maps = coils ? f2(coils->maps()) + static_cast<long long>(c0) * n : nullptr;
    PlanSet &plans = count == batch ? *full : *rest;
    plans.set_stream(stream);
    const int grids = count * segments;
    pad_segments_kernel<<<dim3(static_cast<unsigned>(grid_stride_blocks(L)), static_cast<unsigned>(grids)), kThreads, 0,
                          stream>>>(maps, x, op_e(), segments, dims, n, L, w.get());
    MRI_CUDA_CHECK(cudaGetLastError());
    auto *buf = reinterpret_cast<cufftComplex *>(w.get());
    MRI_CUFFT_CHECK(cufftExecC2C(plans.fwd, buf, buf, CUFFT_FORWARD));
    product_for(segments, w.get(), spectra.get(), L, count, stream, std::make_integer_sequence<int, kMaxSegments>{});
    MRI_CUFFT_CHECK(cufftExecC2C(plans.inv, buf, buf, CUFFT_INVERSE));
    crop_combine_segments_kernel<<<mri::cuda::blocks_for(n), kThreads, 0, stream>>>(
        w.get(), maps, op_e(), x, dims, n, L, count, segments, c0 == 0, last ? reg.regularizer : mri::detail::kRegNone,
        reg.lambda, out);
    MRI_CUDA_CHECK(cudaGetLastError());
  }
};

std::size_t SegmentedToeplitzDevice::bytes(const Grid &grid, int segments, int coil_batch) {
  const auto padded = static_cast<std::size_t>(grid.doubled().voxels());
  const auto pairs = static_cast<std::size_t>(segments) * static_cast<std::size_t>(segments + 1) / 2;
  const std::size_t grids = 2 * static_cast<std::size_t>(coil_batch) * static_cast<std::size_t>(segments); // + work area
  return (pairs + grids + 2 * static_cast<std::size_t>(pair_chunk(grid, segments))) * padded * sizeof(float2);
}

int SegmentedToeplitzDevice::pair_chunk(const Grid &grid, int segments) {
  const auto pairs = static_cast<std::size_t>(segments) * static_cast<std::size_t>(segments + 1) / 2;
  const std::size_t per_pair = static_cast<std::size_t>(grid.doubled().voxels()) * sizeof(float2);
  return static_cast<int>(std::clamp<std::size_t>(kPairBatchBytes / per_pair, 1, std::max<std::size_t>(pairs, 1)));
}

int SegmentedToeplitzDevice::coil_batch_for(const Grid &grid, int segments, int coils) {
  const std::size_t per_coil =
      static_cast<std::size_t>(segments) * static_cast<std::size_t>(grid.doubled().voxels()) * sizeof(float2);
  return static_cast<int>(std::clamp<std::size_t>(kBatchBytes / per_coil, 1, static_cast<std::size_t>(std::max(1, coils))));
}

SegmentedToeplitzDevice::SegmentedToeplitzDevice(const SegmentedFieldDevice &op, const KPoint *points,
                                                 std::span<const float> weights, const NufftOptions &nufft,
                                                 Gridding gridding, const DeviceCoils *coils, Regularizer r, double lambda)
    : impl_(std::make_unique<Impl>()) {
  if (op.segments() > kMaxSegments)
    throw Unsupported("SegmentedToeplitzDevice: " + std::to_string(op.segments()) + " segments; the device's product is built for at most " +
                      std::to_string(kMaxSegments) + " (use the direct normal)");
  const std::vector<float> w = checked_weights(weights, op.samples());
  Impl &p = *impl_;
  p.op = &op;
  p.coils = coils;
  p.reg = regularizer_term(r, lambda);
  p.grid = op.grid();
  p.padded = p.grid.doubled();
  p.dims = dims_of(p.grid, p.padded);
  p.segments = op.segments();
  p.coil_count = coils ? coils->count() : 1;
  p.batch = coil_batch_for(p.grid, p.segments, p.coil_count);
  p.stream = as_stream(op.stream());
  p.event = make_event();
  p.make_kernels(points, w, nufft, gridding);
  p.w = DeviceBuffer<float2>(static_cast<std::size_t>(p.batch) * p.segments * static_cast<std::size_t>(p.l()));
  p.full = acquire_plans(p.padded, ToeplitzFft::Unfused, p.stream, p.batch * p.segments);
  if (const int remainder = p.coil_count % p.batch)
    p.rest = acquire_plans(p.padded, ToeplitzFft::Unfused, p.stream, remainder * p.segments);
}
SegmentedToeplitzDevice::~SegmentedToeplitzDevice() = default;
SegmentedToeplitzDevice::SegmentedToeplitzDevice(SegmentedToeplitzDevice &&) noexcept = default;
SegmentedToeplitzDevice &SegmentedToeplitzDevice::operator=(SegmentedToeplitzDevice &&) noexcept = default;

int SegmentedToeplitzDevice::coil_batch() const { return impl_->batch; }
double SegmentedToeplitzDevice::kernel_seconds() const { return impl_->kernel_seconds; }
const Grid &SegmentedToeplitzDevice::grid() const { return impl_->grid; }
DeviceImage SegmentedToeplitzDevice::domain_vector() const { return DeviceImage(impl_->grid, impl_->stream); }

void SegmentedToeplitzDevice::apply(const DeviceImage &x, DeviceImage &out) const {
  const Impl &p = *impl_;
  check_image(x, p.grid, "x");
  check_image(out, p.grid, "out");
  if (x.data() == out.data()) mri::detail::invalid_argument("out", "x", "must not alias the input");
  join(as_stream(x.stream()), p.stream, p.event);
  for (int c0 = 0; c0 < p.coil_count; c0 += p.batch) {
    const int count = std::min(p.batch, p.coil_count - c0);
    p.pass(f2(x.data()), c0, count, c0 + count == p.coil_count, f2(out.data()));
  }
  join(p.stream, as_stream(out.stream()), p.event);
}

} // namespace mri::cuda::detail
