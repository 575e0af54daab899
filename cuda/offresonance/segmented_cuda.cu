// Time segmentation on the device (segmented_cuda.hpp): the segmented F and F^H on a NUFFT plan,
// its direct normal, and its Toeplitz normal with SENSE's coils batched.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <complex>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "device.cuh"
#include "mri_backend/tuning.hpp"
#include "nufft/gridding_cuda.hpp"
#include "nufft/gridding_resources.cuh"
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

// Where grid g (= coil x L + segment) of a pass keeps padded voxel (px, py, pz):
// g * grid + px + py * row + pz * plane. Whole: the grids one after another (grid = the padded
// voxels, row = lx, plane = lx ly: offset p + g L); Pruned (2D): rows interleaved, [py][g][px]
// (grid = lx, row = G lx for the pass's G grids), so that each axis is one batched 1D transform.
struct PassLayout {
  long long grid, row, plane;
};
__device__ __forceinline__ long long layout_offset(const PassLayout &s, int px, int py, int pz) {
  return px + py * s.row + pz * s.plane;
}

// Grid blockIdx.y = (coil b, segment s) of a pass: S_b x E_s at the image's voxels, zero at the
// other padded voxels among the first `span` of padded index order (Whole: all of them, as the
// in-place transforms overwrite the zeros; Pruned: the ny rows its x pass transforms in place, the
// buffer's other rows staying zero). maps null: one coil without maps.
__global__ void pad_segments_kernel(const float2 *__restrict__ maps, const float2 *__restrict__ x,
                                    const float2 *__restrict__ e, int segments, Dims d, int n, long long span,
                                    PassLayout s, float2 *__restrict__ w) {
  const int b = blockIdx.y / segments, seg = blockIdx.y % segments;
  float2 *grid = w + static_cast<long long>(blockIdx.y) * s.grid;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < span; p += stride) {
    int px, py, pz;
    padded_coordinates(p, d, px, py, pz);
    float2 v = make_float2(0.f, 0.f);
    if (px < d.nx && py < d.ny && pz < d.nz) {
      const int vox = px + d.nx * (py + d.ny * pz);
      v = cmul(x[vox], e[static_cast<long long>(seg) * n + vox]);
      if (maps) v = cmul(maps[static_cast<long long>(b) * n + vox], v);
    }
    grid[layout_offset(s, px, py, pz)] = v;
  }
}

// Z_l = sum_l' K_ll' X_l' at every frequency p (padded index order) of coils c0 .. c0 + coils - 1
// of the pass, c0 = blockIdx.y * coils (PerCoil: a coil per blockIdx.y; Fused: all in one), in
// place. K holds the pairs l <= l' (l = 0: (0,0), (0,1), ..; l = 1: (1,1), ..), pair j's frequency p
// at j l + p, and K_l'l = conj(K_ll'). Cached: the thread loads its frequency's pairs once for all
// its `coils` coils (registers: L <= 8); else it has one coil (coils is 1: a loop over coils would
// let the compiler hoist the pairs' loads out of it and spill them beyond L = 12). Each coil's
// products in the same order either way.
template <int L, bool Cached>
__global__ void segment_product_kernel(float2 *__restrict__ w, const float2 *__restrict__ k, long long l, Dims d,
                                       PassLayout s, int coils) {
  constexpr int kPairs = L * (L + 1) / 2;
  if constexpr (!Cached) coils = 1;
  const int c0 = static_cast<int>(blockIdx.y) * coils;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < l; p += stride) {
    int px, py, pz;
    padded_coordinates(p, d, px, py, pz);
    const long long base = layout_offset(s, px, py, pz);
    [[maybe_unused]] float2 kk[Cached ? kPairs : 1];
    if constexpr (Cached) {
#pragma unroll
      for (int j = 0; j < kPairs; ++j) kk[j] = k[j * l + p];
    }
    for (int c = c0; c < c0 + coils; ++c) {
      float2 *g = w + base + static_cast<long long>(c) * L * s.grid;
      float2 x[L], z[L];
#pragma unroll
      for (int t = 0; t < L; ++t) {
        x[t] = g[t * s.grid];
        z[t] = make_float2(0.f, 0.f);
      }
      int j = 0;
#pragma unroll
      for (int a = 0; a < L; ++a) {
#pragma unroll
        for (int b = a; b < L; ++b, ++j) {
          float2 kab;
          if constexpr (Cached)
            kab = kk[j];
          else
            kab = k[j * l + p];
          add_to(z[a], cmul(kab, x[b]));
          if (b != a) add_to(z[b], conj_mul(kab, x[a]));
        }
      }
#pragma unroll
      for (int t = 0; t < L; ++t) g[t * s.grid] = z[t];
    }
  }
}

template <int L>
void launch_product(float2 *w, const float2 *k, long long l, Dims d, PassLayout s, int coils, bool fused,
                    cudaStream_t stream) {
  // Fused beyond kRegisterPairs pairs runs as PerCoil (see segment_product_kernel)
  const unsigned x = static_cast<unsigned>(grid_stride_blocks(l));
  if constexpr (L * (L + 1) / 2 <= SegmentedToeplitzDevice::kRegisterPairs) {
    if (fused) {
      segment_product_kernel<L, true><<<dim3(x, 1), kThreads, 0, stream>>>(w, k, l, d, s, coils);
      MRI_CUDA_CHECK(cudaGetLastError());
      return;
    }
  }
  segment_product_kernel<L, false><<<dim3(x, static_cast<unsigned>(coils)), kThreads, 0, stream>>>(w, k, l, d, s, 1);
  MRI_CUDA_CHECK(cudaGetLastError());
}

template <int... Ls>
void product_for(int segments, float2 *w, const float2 *k, long long l, Dims d, PassLayout s, int coils, bool fused,
                 cudaStream_t stream, std::integer_sequence<int, Ls...>) {
  const bool ran =
      ((segments == Ls + 1 ? (launch_product<Ls + 1>(w, k, l, d, s, coils, fused, stream), true) : false) || ...);
  if (!ran) mri::detail::invalid_argument("segments", segments, "must be in [1, 16] for the device's Toeplitz product");
}

// out[v] (first pass: =, else +=) sum_b conj(S_b[v]) sum_s conj(E_s[v]) W_(b,s)[p(v)], + lambda R^H R x
// (reg != kRegNone: the last pass). maps null: one coil without maps.
__global__ void crop_combine_segments_kernel(const float2 *__restrict__ w, PassLayout lay, const float2 *__restrict__ maps,
                                             const float2 *__restrict__ e, const float2 *__restrict__ x, Dims d, int n,
                                             int coils, int segments, bool first, int reg, float lambda,
                                             float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  int ix, iy, iz;
  image_coordinates(v, d, ix, iy, iz);
  const long long p = layout_offset(lay, ix, iy, iz);
  float2 acc = first ? make_float2(0.f, 0.f) : out[v];
  for (int b = 0; b < coils; ++b) {
    float2 coil = make_float2(0.f, 0.f);
    for (int s = 0; s < segments; ++s)
      add_to(coil, conj_mul(e[static_cast<long long>(s) * n + v], w[p + (static_cast<long long>(b) * segments + s) * lay.grid]));
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

// count values from the gridding plans' stream-ordered pool on `stream` (freed there in stream
// order: no cudaMalloc, and no cudaFree with its implicit device synchronisation, per reconstruction).
template <class T> DeviceBuffer<T> pooled(std::size_t count, cudaStream_t stream) {
  DeviceBuffer<T> d;
  d.allocate(count, plan_pool(), stream);
  return d;
}
// b holds at least count values (pooled on `stream`; contents undefined after a reallocation).
template <class T> void grow_pooled(DeviceBuffer<T> &b, std::size_t count, cudaStream_t stream) {
  if (b.size() < count) b.allocate(count, plan_pool(), stream);
}

template <class T> DeviceBuffer<T> upload(std::span<const T> host, cudaStream_t stream) {
  DeviceBuffer<T> d = pooled<T>(std::max<std::size_t>(host.size(), 1), stream);
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
  // The L segments' (and coils') adjoints in batched inverse transforms: within float rounding of
  // one transform each (NufftDevicePlan::set_batched_fft), fewer launches for the L-fold vectors.
  p.nufft->set_batched_fft(true);
  p.gridding = gridding;
  p.stream = as_stream(p.nufft->stream());
  p.b = pooled<float2>(L * samples, p.stream);
  p.e = pooled<float2>(L * N, p.stream);
  p.ls = pooled<float2>(L * samples, p.stream);
  p.li = pooled<float2>(L * N, p.stream);
  p.one_image = pooled<float2>(N, p.stream);
  p.one_samples = pooled<float2>(samples, p.stream);
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
  grow_pooled(p.ls, vectors * p.m, p.stream);
  grow_pooled(p.li, vectors * static_cast<std::size_t>(n), p.stream);
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
  const cudaStream_t s = as_stream(op.stream());
  p.y = pooled<float2>(op.samples(), s);
  p.weighted = !w.empty();
  if (p.weighted) { // the pageable copy returns once w is staged
    p.weights = pooled<float>(w.size(), s);
    MRI_CUDA_CHECK(cudaMemcpyAsync(p.weights.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice, s));
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

namespace {

// Pruned's 1D plans over G row-interleaved grids of lx x ly ([py][g][px]), sharing one work area:
// `row` transforms along x the first `rows` rows of every grid (contiguous: rows x G of lx values,
// distance lx), `column` along y every (g, px) column (stride G lx, distance 1).
struct PrunedPlans {
  int device = 0, lx = 0, ly = 0, rows = 0, grids = 0;
  cufftHandle row = 0, column = 0;
  bool has_row = false, has_column = false;
  void *work = nullptr;
  cudaStream_t stream = nullptr;

  PrunedPlans() = default;
  PrunedPlans(const PrunedPlans &) = delete;
  PrunedPlans &operator=(const PrunedPlans &) = delete;
  ~PrunedPlans() {
    if (has_row) cufftDestroy(row);
    if (has_column) cufftDestroy(column);
    device_free(work);
  }
  void set_stream(cudaStream_t s) {
    if (s == stream) return;
    MRI_CUFFT_CHECK(cufftSetStream(row, s));
    MRI_CUFFT_CHECK(cufftSetStream(column, s));
    stream = s;
  }
};

// A 1D C2C plan of `batch` transforms of n points, `stride` apart, `distance` between transforms,
// without its own work area; returns the work size it needs.
std::size_t plan_strided(cufftHandle &h, bool &has, int n, int stride, int distance, int batch) {
  MRI_CUFFT_CHECK(cufftCreate(&h));
  has = true;
  MRI_CUFFT_CHECK(cufftSetAutoAllocation(h, 0));
  int size[1] = {n}, embed[1] = {n};
  std::size_t work = 0;
  MRI_CUFFT_CHECK(cufftMakePlanMany(h, 1, size, embed, stride, distance, embed, stride, distance, CUFFT_C2C, batch, &work));
  return work;
}

std::shared_ptr<PrunedPlans> make_pruned_plans(int lx, int ly, int rows, int grids) {
  auto p = std::make_shared<PrunedPlans>();
  MRI_CUDA_CHECK(cudaGetDevice(&p->device));
  p->lx = lx, p->ly = ly, p->rows = rows, p->grids = grids;
  const std::size_t work = std::max(plan_strided(p->row, p->has_row, lx, 1, lx, rows * grids),
                                    plan_strided(p->column, p->has_column, ly, grids * lx, 1, grids * lx));
  if (work > 0) p->work = device_malloc(work);
  MRI_CUFFT_CHECK(cufftSetWorkArea(p->row, p->work));
  MRI_CUFFT_CHECK(cufftSetWorkArea(p->column, p->work));
  return p;
}

// The kept pruned plan sets, as toeplitz_plans.cu keeps its own (planning costs far more than an
// application): one set serves operators on one stream only. Deliberately never destroyed (at
// process exit cuFFT may be torn down before static destructors run).
std::mutex g_pruned_mutex;
auto &g_pruned = *new std::vector<std::shared_ptr<PrunedPlans>>();
constexpr std::size_t kMaxCachedPruned = 8;

std::shared_ptr<PrunedPlans> acquire_pruned_plans(int lx, int ly, int rows, int grids, cudaStream_t stream) {
  int device = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  std::shared_ptr<PrunedPlans> set;
  {
    std::lock_guard lock(g_pruned_mutex);
    for (auto &s : g_pruned)
      if (s->device == device && s->lx == lx && s->ly == ly && s->rows == rows && s->grids == grids &&
          (s.use_count() == 1 || s->stream == stream)) {
        set = s;
        break;
      }
  }
  if (!set) {
    set = make_pruned_plans(lx, ly, rows, grids);
    std::lock_guard lock(g_pruned_mutex);
    if (g_pruned.size() >= kMaxCachedPruned) {
      const auto unused = std::find_if(g_pruned.begin(), g_pruned.end(), [](auto &s) { return s.use_count() == 1; });
      if (unused != g_pruned.end()) g_pruned.erase(unused);
    }
    if (g_pruned.size() < kMaxCachedPruned) g_pruned.push_back(set);
  }
  set->set_stream(stream);
  return set;
}

bool prunable(const Grid &grid) { return grid.dims() == 2 && grid.nx() > 1 && grid.ny() > 1 && grid.nz() == 1; }

// Padded grids a coil takes in a pass: its L transforms' (and with Pruned the pad's L).
std::size_t grids_per_coil(int segments, bool pruned) { return static_cast<std::size_t>(segments) * (pruned ? 2 : 1); }

int batch_for(const Grid &grid, int segments, int coils, bool pruned) {
  const std::size_t per_coil =
      grids_per_coil(segments, pruned) * static_cast<std::size_t>(grid.doubled().voxels()) * sizeof(float2);
  return static_cast<int>(std::clamp<std::size_t>(kBatchBytes / per_coil, 1, static_cast<std::size_t>(std::max(1, coils))));
}

// Stage boundaries of one pass (apply_timed): events recorded before the pad and after each stage.
struct StageMarks {
  cudaEvent_t at[6] = {};
};

} // namespace

struct SegmentedToeplitzDevice::Impl {
  const SegmentedFieldDevice *op = nullptr;
  const DeviceCoils *coils = nullptr;
  RegularizerTerm reg;
  Grid grid, padded;
  Dims dims{};
  int segments = 1, coil_count = 1, batch = 1;
  SegmentedToeplitzPaths paths;
  cudaStream_t stream = nullptr;
  DeviceBuffer<float2> spectra; // pairs x padded voxels
  DeviceBuffer<float2> w;       // batch x segments padded grids: the transforms' (in place)
  DeviceBuffer<float2> z;       // Pruned: the pad's grids (rows >= ny zero), the y pass's input
  std::shared_ptr<PlanSet> full, rest;               // Whole: plans of batch and of the remainder's grids
  std::shared_ptr<PrunedPlans> pruned_full, pruned_rest; // Pruned: the same
  double kernel_seconds = 0;
  cudaEvent_t event = nullptr;
  ~Impl() {
    if (event) cudaEventDestroy(event);
  }

  long long l() const { return padded.voxels(); }
  int pairs() const { return segments * (segments + 1) / 2; }
  bool pruned() const { return paths.fft == SegmentedFft::Pruned || paths.fft == SegmentedFft::PrunedInPlace; }
  bool pad_buffer() const { return paths.fft == SegmentedFft::Pruned; } // z: the pad's own grids

  // The spectra, on `stream` (pool memory; the kernels' NUFFT plan and its buffers on the plan's
  // stream, waited for at the end).
  void make_kernels(const KPoint *points, std::span<const float> weights, const NufftOptions &nufft, Gridding gridding) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t m = op->samples();
    const long long L = l();
    spectra.allocate(static_cast<std::size_t>(pairs()) * static_cast<std::size_t>(L), plan_pool(), stream);
    // The pair table and the weights up on `stream` before the kernels' plan starts its setup on
    // its own stream (a pageable copy waits for its stream's work first); the host's copies may go
    // on return. Freed on `stream` when this returns, after the wait on qs below.
    std::vector<int2> table;
    for (int a = 0; a < segments; ++a)
      for (int b = a; b < segments; ++b) table.push_back(make_int2(a, b));
    DeviceBuffer<int2> pairs_dev;
    pairs_dev.allocate(table.size(), plan_pool(), stream);
    MRI_CUDA_CHECK(cudaMemcpyAsync(pairs_dev.get(), table.data(), table.size() * sizeof(int2), cudaMemcpyHostToDevice, stream));
    DeviceBuffer<float> w_dev;
    if (!weights.empty()) {
      w_dev.allocate(weights.size(), plan_pool(), stream);
      MRI_CUDA_CHECK(
          cudaMemcpyAsync(w_dev.get(), weights.data(), weights.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
    }
    // Q of the doubled k on the doubled grid: exp(i 2 pi k d / n) = exp(i 2 pi (2k) d / (2n)); an
    // axis of extent 1 has d = 0 only.
    const auto doubled_k = [&](int a) { return grid.extent(a) > 1 ? 2.0f : 0.0f; };
    const auto q_plan = make_device_nufft_plan(points, m, padded, nufft, {doubled_k(0), doubled_k(1), doubled_k(2)});
    q_plan->set_batched_fft(true); // the kernel pairs' adjoints, as the segments' above
    const cudaStream_t qs = as_stream(q_plan->stream());
    join(stream, qs, event); // the allocations and uploads above before their use on qs
    // qs's work done before the buffers above are freed on `stream`, also when something throws
    struct WaitOnExit {
      cudaStream_t s;
      ~WaitOnExit() { cudaStreamSynchronize(s); }
    } wait_qs{qs};
    // freed on qs (stream order) before q_plan goes
    const int chunk = pair_chunk(grid, segments);
    DeviceBuffer<float2> c, q;
    c.allocate(static_cast<std::size_t>(chunk) * m, plan_pool(), qs);
    q.allocate(static_cast<std::size_t>(chunk) * static_cast<std::size_t>(L), plan_pool(), qs);
    const float scale = 1.0f / static_cast<float>(L);
    std::shared_ptr<PlanSet> plans; // held until the transforms are done
    for (int i = 0; i < pairs(); i += chunk) { // chunks in stream order on qs: c and q reused
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
      if (!plans || plans->batch != count) plans = acquire_plans(padded, ToeplitzFft::Unfused, qs, count);
      plans->set_stream(qs);
      MRI_CUFFT_CHECK(cufftExecC2C(plans->fwd, reinterpret_cast<cufftComplex *>(k), reinterpret_cast<cufftComplex *>(k),
                                   CUFFT_FORWARD));
    }
    MRI_CUDA_CHECK(cudaStreamSynchronize(qs)); // the spectra done before any application on `stream`
    kernel_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const float2 *op_b() const { return f2(op->device_sample_coefficients()); }
  const float2 *op_e() const { return f2(op->device_voxel_phases()); }

  // The transforms' buffers and plans for `batch` coils per pass (and the remainder's).
  void make_passes() {
    const std::size_t grids = static_cast<std::size_t>(batch) * static_cast<std::size_t>(segments) * static_cast<std::size_t>(l());
    w.allocate(grids, plan_pool(), stream);
    const int remainder = coil_count % batch;
    if (!pruned()) {
      full = acquire_plans(padded, ToeplitzFft::Unfused, stream, batch * segments);
      if (remainder) rest = acquire_plans(padded, ToeplitzFft::Unfused, stream, remainder * segments);
      return;
    }
    if (pad_buffer()) {
      z.allocate(grids, plan_pool(), stream);
      MRI_CUDA_CHECK(cudaMemsetAsync(z.get(), 0, grids * sizeof(float2), stream));
    }
    pruned_full = acquire_pruned_plans(dims.lx, dims.ly, dims.ny, batch * segments, stream);
    if (remainder) pruned_rest = acquire_pruned_plans(dims.lx, dims.ly, dims.ny, remainder * segments, stream);
  }

  void mark(const StageMarks *marks, int i) const {
    if (marks) MRI_CUDA_CHECK(cudaEventRecord(marks->at[i], stream));
  }

  // Coils c0 .. c0 + count - 1 into out (= on the first pass, += after; last adds the regulariser).
  // Pruned: the pad fills the first ny rows of z's grids (a remainder pass, whose G grids lie
  // otherwise in z than the full passes', all its rows: z's rows beyond the full layout's first ny
  // are then written with zeros only, so the full passes find them zero); x pass on them in place,
  // y pass z -> w; the product on w; y pass on w, x pass on its first ny rows (all the crop reads).
  // PrunedInPlace: the same with w for z, the pad writing every row.
  void pass(const float2 *x, int c0, int count, bool last, float2 *out, const StageMarks *marks) const {
    const int n = static_cast<int>(grid.voxels());
    const long long L = l();
    const float2 *maps = coils ? f2(coils->maps()) + static_cast<long long>(c0) * n : nullptr;
    const int grids = count * segments;
    const bool whole_batch = count == batch;
    const PassLayout layout = pruned() ? PassLayout{dims.lx, static_cast<long long>(grids) * dims.lx, 0}
                                       : PassLayout{L, dims.lx, static_cast<long long>(dims.lx) * dims.ly};
    const long long span = pad_buffer() && whole_batch ? static_cast<long long>(dims.lx) * dims.ny : L;
    float2 *padded_in = pad_buffer() ? z.get() : w.get();
    auto *wc = reinterpret_cast<cufftComplex *>(w.get());
    auto *zc = reinterpret_cast<cufftComplex *>(padded_in);
    mark(marks, 0);
    pad_segments_kernel<<<dim3(static_cast<unsigned>(grid_stride_blocks(span)), static_cast<unsigned>(grids)), kThreads, 0,
                          stream>>>(maps, x, op_e(), segments, dims, n, span, layout, padded_in);
    MRI_CUDA_CHECK(cudaGetLastError());
    mark(marks, 1);
    if (pruned()) {
      PrunedPlans &plans = whole_batch ? *pruned_full : *pruned_rest;
      plans.set_stream(stream);
      MRI_CUFFT_CHECK(cufftExecC2C(plans.row, zc, zc, CUFFT_FORWARD));
      MRI_CUFFT_CHECK(cufftExecC2C(plans.column, zc, wc, CUFFT_FORWARD));
    } else {
      PlanSet &plans = whole_batch ? *full : *rest;
      plans.set_stream(stream);
      MRI_CUFFT_CHECK(cufftExecC2C(plans.fwd, wc, wc, CUFFT_FORWARD));
    }
    mark(marks, 2);
    product_for(segments, w.get(), spectra.get(), L, dims, layout, count, paths.product == SegmentedProduct::Fused, stream,
                std::make_integer_sequence<int, kMaxSegments>{});
    mark(marks, 3);
    if (pruned()) {
      PrunedPlans &plans = whole_batch ? *pruned_full : *pruned_rest;
      MRI_CUFFT_CHECK(cufftExecC2C(plans.column, wc, wc, CUFFT_INVERSE));
      MRI_CUFFT_CHECK(cufftExecC2C(plans.row, wc, wc, CUFFT_INVERSE));
    } else {
      PlanSet &plans = whole_batch ? *full : *rest;
      MRI_CUFFT_CHECK(cufftExecC2C(plans.inv, wc, wc, CUFFT_INVERSE));
    }
    mark(marks, 4);
    crop_combine_segments_kernel<<<mri::cuda::blocks_for(n), kThreads, 0, stream>>>(
        w.get(), layout, maps, op_e(), x, dims, n, count, segments, c0 == 0,
        last ? reg.regularizer : mri::detail::kRegNone, reg.lambda, out);
    MRI_CUDA_CHECK(cudaGetLastError());
    mark(marks, 5);
  }

  void run(const DeviceImage &x, DeviceImage &out, const std::function<void(const StageMarks *)> &after_pass,
           const StageMarks *marks) const {
    check_image(x, grid, "x");
    check_image(out, grid, "out");
    if (x.data() == out.data()) mri::detail::invalid_argument("out", "x", "must not alias the input");
    join(as_stream(x.stream()), stream, event);
    for (int c0 = 0; c0 < coil_count; c0 += batch) {
      const int count = std::min(batch, coil_count - c0);
      pass(f2(x.data()), c0, count, c0 + count == coil_count, f2(out.data()), marks);
      if (after_pass) after_pass(marks);
    }
    join(stream, as_stream(out.stream()), event);
  }
};

std::size_t SegmentedToeplitzDevice::bytes(const Grid &grid, int segments, int coil_batch) {
  const auto padded = static_cast<std::size_t>(grid.doubled().voxels());
  const auto pairs = static_cast<std::size_t>(segments) * static_cast<std::size_t>(segments + 1) / 2;
  const bool pruned = resolve({}, grid).fft == SegmentedFft::Pruned; // Auto's: with the pad's grids
  // the pass's grids (+ the pad's with Pruned) and the cuFFT work area, about one set more
  const std::size_t grids = (grids_per_coil(segments, pruned) + static_cast<std::size_t>(segments)) *
                            static_cast<std::size_t>(coil_batch);
  return (pairs + grids + 2 * static_cast<std::size_t>(pair_chunk(grid, segments))) * padded * sizeof(float2);
}

int SegmentedToeplitzDevice::pair_chunk(const Grid &grid, int segments) {
  const auto pairs = static_cast<std::size_t>(segments) * static_cast<std::size_t>(segments + 1) / 2;
  const std::size_t per_pair = static_cast<std::size_t>(grid.doubled().voxels()) * sizeof(float2);
  return static_cast<int>(std::clamp<std::size_t>(kPairBatchBytes / per_pair, 1, std::max<std::size_t>(pairs, 1)));
}

int SegmentedToeplitzDevice::coil_batch_for(const Grid &grid, int segments, int coils) {
  return batch_for(grid, segments, coils, resolve({}, grid).fft == SegmentedFft::Pruned);
}

SegmentedToeplitzPaths SegmentedToeplitzDevice::resolve(SegmentedToeplitzPaths paths, const Grid &grid) {
  if (paths.fft == SegmentedFft::Auto)
    paths.fft = prunable(grid) ? SegmentedFft::Pruned : SegmentedFft::Whole;
  else if (paths.fft != SegmentedFft::Whole && !prunable(grid))
    paths.fft = SegmentedFft::Whole; // the pruned paths are 2D only
  if (paths.product == SegmentedProduct::Auto) paths.product = SegmentedProduct::Fused;
  return paths;
}

SegmentedToeplitzDevice::SegmentedToeplitzDevice(const SegmentedFieldDevice &op, const KPoint *points,
                                                 std::span<const float> weights, const NufftOptions &nufft,
                                                 Gridding gridding, const DeviceCoils *coils, Regularizer r, double lambda,
                                                 SegmentedToeplitzPaths paths)
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
  p.paths = resolve(paths, p.grid);
  p.coil_count = coils ? coils->count() : 1;
  if (paths.coil_batch < 0) mri::detail::invalid_argument("paths.coil_batch", paths.coil_batch, "must be >= 0 (0: by memory)");
  p.batch = paths.coil_batch > 0 ? std::min(paths.coil_batch, p.coil_count)
                                 : batch_for(p.grid, p.segments, p.coil_count, p.pad_buffer());
  p.stream = as_stream(op.stream());
  p.event = make_event();
  p.make_kernels(points, w, nufft, gridding);
  p.make_passes();
}
SegmentedToeplitzDevice::~SegmentedToeplitzDevice() = default;
SegmentedToeplitzDevice::SegmentedToeplitzDevice(SegmentedToeplitzDevice &&) noexcept = default;
SegmentedToeplitzDevice &SegmentedToeplitzDevice::operator=(SegmentedToeplitzDevice &&) noexcept = default;

int SegmentedToeplitzDevice::coil_batch() const { return impl_->batch; }
SegmentedToeplitzPaths SegmentedToeplitzDevice::paths() const { return impl_->paths; }
double SegmentedToeplitzDevice::kernel_seconds() const { return impl_->kernel_seconds; }
const Grid &SegmentedToeplitzDevice::grid() const { return impl_->grid; }
DeviceImage SegmentedToeplitzDevice::domain_vector() const { return DeviceImage(impl_->grid, impl_->stream); }

void SegmentedToeplitzDevice::apply(const DeviceImage &x, DeviceImage &out) const { impl_->run(x, out, {}, nullptr); }

SegmentedStageTimes SegmentedToeplitzDevice::apply_timed(const DeviceImage &x, DeviceImage &out) const {
  StageMarks marks;
  for (cudaEvent_t &e : marks.at) MRI_CUDA_CHECK(cudaEventCreate(&e));
  SegmentedStageTimes t;
  double *stage[5] = {&t.pad, &t.forward, &t.product, &t.inverse, &t.crop};
  const auto add = [&](const StageMarks *m) {
    MRI_CUDA_CHECK(cudaEventSynchronize(m->at[5]));
    for (int i = 0; i < 5; ++i) {
      float ms = 0;
      MRI_CUDA_CHECK(cudaEventElapsedTime(&ms, m->at[i], m->at[i + 1]));
      *stage[i] += ms;
    }
  };
  try {
    impl_->run(x, out, add, &marks);
  } catch (...) {
    for (cudaEvent_t e : marks.at) cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : marks.at) cudaEventDestroy(e);
  return t;
}

} // namespace mri::cuda::detail
