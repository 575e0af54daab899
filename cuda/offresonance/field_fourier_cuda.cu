// The exact field-corrected F^H D and F on the device (field_fourier_cuda.hpp states the sums, the
// phase and why the field needs a sine and cosine per pair).
//
// Adjoint: a thread owns kFieldVoxels consecutive voxels of one row (x), their coordinates and
// field offsets f(x) - f0 in registers; a block stages kFieldStage samples at a time in shared
// memory as (k_x / n_x, k_y / n_y, k_z / n_z, t) and the coefficient times exp(2 pi i f0 t). Per
// sample the row's y/z phase is formed once; per pair two multiply-adds (the x term and the field
// term), then the sine and cosine and the four multiply-adds of the complex product.
// Forward: a thread owns kFieldSamples samples (strided by the block, so the loads coalesce), a
// block stages kFieldStage voxels (x, y, z, f - f0) and their values; per pair one multiply and
// three multiply-adds for the phase, then the trig and the product. exp(-2 pi i f0 t) multiplies
// each result in double at the end.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "device.cuh"
#include "device_buffer.cuh"
#include "exact/fhd_plan.cuh"
#include "field_fourier_cuda.hpp"
#include "mri/error.hpp"
#include "mri/kspace.hpp"
#include "recon/device_image.hpp"

namespace mri::cuda::detail {
namespace {

constexpr int kFieldThreads = 128; // threads per block
constexpr int kFieldVoxels = 8;    // adjoint: voxels along x per thread
constexpr int kFieldSamples = 4;   // forward: samples per thread
constexpr int kFieldStage = 256;   // samples (adjoint) or voxels (forward) per shared-memory tile
// The split partial sums (double2 per split and output value) stay below this.
constexpr std::size_t kPartialBudget = std::size_t{256} << 20;

struct DRecord {
  double x, y, z, w;
};

// The trig of a phase in turns, and the types a kernel forms the phase and tile sums in.
struct SfuTrigFn {
  using Real = float;
  using Rec = float4;
  using Cplx = float2;
  static __device__ __forceinline__ void sincos_turns(float t, float &s, float &c) {
    __sincosf(kTwoPi * reduce_turns(t), &s, &c); // the SFU is accurate on [-pi, pi] only
  }
};
struct AccurateTrigFn {
  using Real = float;
  using Rec = float4;
  using Cplx = float2;
  static __device__ __forceinline__ void sincos_turns(float t, float &s, float &c) { sincospif(2.0f * t, &s, &c); }
};
struct DoubleTrigFn {
  using Real = double;
  using Rec = DRecord;
  using Cplx = double2;
  static __device__ __forceinline__ void sincos_turns(double t, double &s, double &c) { sincospi(2.0 * t, &s, &c); }
};

struct GridShape {
  int nx = 1, ny = 1, nz = 1, voxels = 1;
  int x0 = 0, y0 = 0, z0 = 0; // coordinate of index 0 per axis
};

// ---------------------------------------------------------------------------------------
// Setup passes (double arithmetic, rounded once)

__global__ void sample_records_kernel(const KPoint *__restrict__ k, const float *__restrict__ t, int m, double sx,
                                      double sy, double sz, double f0, float4 *__restrict__ rec,
                                      float2 *__restrict__ demod) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const KPoint p = k[i];
  rec[i] = make_float4(static_cast<float>(p.kx * sx), static_cast<float>(p.ky * sy), static_cast<float>(p.kz * sz), t[i]);
  double s, c;
  sincospi(2.0 * f0 * static_cast<double>(t[i]), &s, &c);
  demod[i] = make_float2(static_cast<float>(c), static_cast<float>(s));
}

__global__ void sample_records_f64_kernel(const KPoint *__restrict__ k, const float *__restrict__ t, int m, double sx,
                                          double sy, double sz, double f0, DRecord *__restrict__ rec,
                                          double2 *__restrict__ demod) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const KPoint p = k[i];
  rec[i] = DRecord{p.kx * sx, p.ky * sy, p.kz * sz, static_cast<double>(t[i])};
  double s, c;
  sincospi(2.0 * f0 * static_cast<double>(t[i]), &s, &c);
  demod[i] = make_double2(c, s);
}

template <class Rec>
__global__ void voxel_records_kernel(const float *__restrict__ hz, GridShape g, double f0, Rec *__restrict__ vox) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= g.voxels) return;
  const int ix = n % g.nx, rest = n / g.nx;
  const int iy = rest % g.ny, iz = rest / g.ny;
  using R = decltype(vox->x);
  vox[n] = Rec{static_cast<R>(ix + g.x0), static_cast<R>(iy + g.y0), static_cast<R>(iz + g.z0),
               static_cast<R>(static_cast<double>(hz[n]) - f0)};
}

// ---------------------------------------------------------------------------------------
// The sums

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ double2 cmul(double2 a, double2 b) {
  return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 to_cplx(float2 v, const float2 *) { return v; }
__device__ __forceinline__ double2 to_cplx(float2 v, const double2 *) { return make_double2(v.x, v.y); }

template <class Trig> struct AdjointArgs {
  const typename Trig::Rec *rec;   // M sample records
  const typename Trig::Cplx *demod; // M: exp(2 pi i f0 t)
  const float2 *c;                 // M coefficients
  const typename Trig::Rec *vox;   // voxels: x, y, z, f - f0
  int m;
  GridShape g;
  int tiles_x, tiles;
  int per_split; // samples per blockIdx.y, a multiple of kFieldStage
  double2 *partial; // splits x voxels (splits > 1)
  float2 *out;      // voxels (splits == 1)
};

template <class Trig> __global__ void __launch_bounds__(kFieldThreads) field_adjoint_kernel(AdjointArgs<Trig> a) {
  using Real = typename Trig::Real;
  using Rec = typename Trig::Rec;
  using Cplx = typename Trig::Cplx;
  __shared__ Rec srec[kFieldStage];
  __shared__ Cplx sc[kFieldStage];
  const int tile = blockIdx.x * kFieldThreads + threadIdx.x;
  const bool active = tile < a.tiles;
  const int t = active ? tile : 0;
  const int bx = t % a.tiles_x, rest = t / a.tiles_x;
  const int iy = rest % a.g.ny, iz = rest / a.g.ny;
  const int ix0 = bx * kFieldVoxels;
  const int row = (iz * a.g.ny + iy) * a.g.nx;
  Real xs[kFieldVoxels], fs[kFieldVoxels];
#pragma unroll
  for (int j = 0; j < kFieldVoxels; ++j) {
    const int ix = min(ix0 + j, a.g.nx - 1); // a voxel past the row's end repeats the last, unstored
    const Rec v = a.vox[row + ix];
    xs[j] = static_cast<Real>(ix0 + j + a.g.x0);
    fs[j] = v.w;
  }
  const Real y = static_cast<Real>(iy + a.g.y0), z = static_cast<Real>(iz + a.g.z0);

  const long long begin = static_cast<long long>(blockIdx.y) * a.per_split;
  const int b0 = static_cast<int>(min(begin, static_cast<long long>(a.m)));
  const int e0 = static_cast<int>(min(begin + a.per_split, static_cast<long long>(a.m)));
  double accr[kFieldVoxels], acci[kFieldVoxels];
#pragma unroll
  for (int j = 0; j < kFieldVoxels; ++j) accr[j] = acci[j] = 0;

  for (int b = b0; b < e0; b += kFieldStage) {
    const int count = min(kFieldStage, e0 - b);
    __syncthreads(); // the previous tile is consumed
    for (int q = threadIdx.x; q < count; q += kFieldThreads) {
      srec[q] = a.rec[b + q];
      sc[q] = cmul(to_cplx(a.c[b + q], a.demod), a.demod[b + q]);
    }
    __syncthreads();
    Real pr[kFieldVoxels], pi[kFieldVoxels];
#pragma unroll
    for (int j = 0; j < kFieldVoxels; ++j) pr[j] = pi[j] = 0;
#pragma unroll 2
    for (int s = 0; s < count; ++s) {
      const Rec r = srec[s];
      const Cplx v = sc[s];
      const Real base = fma(r.y, y, r.z * z);
#pragma unroll
      for (int j = 0; j < kFieldVoxels; ++j) {
        Real sn, cs;
        Trig::sincos_turns(fma(r.x, xs[j], fma(r.w, fs[j], base)), sn, cs);
        pr[j] = fma(v.x, cs, fma(-v.y, sn, pr[j]));
        pi[j] = fma(v.x, sn, fma(v.y, cs, pi[j]));
      }
    }
#pragma unroll
    for (int j = 0; j < kFieldVoxels; ++j) {
      accr[j] += pr[j];
      acci[j] += pi[j];
    }
  }

  if (!active) return;
#pragma unroll
  for (int j = 0; j < kFieldVoxels; ++j) {
    if (ix0 + j >= a.g.nx) break;
    const int n = row + ix0 + j;
    if (a.partial)
      a.partial[static_cast<std::size_t>(blockIdx.y) * a.g.voxels + n] = make_double2(accr[j], acci[j]);
    else
      a.out[n] = make_float2(static_cast<float>(accr[j]), static_cast<float>(acci[j]));
  }
}

template <class Trig> struct ForwardArgs {
  const typename Trig::Rec *rec;    // M sample records
  const typename Trig::Cplx *demod; // M: exp(2 pi i f0 t)
  const typename Trig::Rec *vox;    // voxels: x, y, z, f - f0
  const float2 *image;
  int m, voxels;
  int per_split;    // voxels per blockIdx.y, a multiple of kFieldStage
  double2 *partial; // splits x M (splits > 1)
  float2 *out;      // M (splits == 1)
};

template <class Trig> __global__ void __launch_bounds__(kFieldThreads) field_forward_kernel(ForwardArgs<Trig> a) {
  using Real = typename Trig::Real;
  using Rec = typename Trig::Rec;
  using Cplx = typename Trig::Cplx;
  __shared__ Rec svox[kFieldStage];
  __shared__ Cplx sval[kFieldStage];
  const int first = blockIdx.x * kFieldThreads * kFieldSamples + threadIdx.x;
  Real kx[kFieldSamples], ky[kFieldSamples], kz[kFieldSamples], tm[kFieldSamples];
#pragma unroll
  for (int s = 0; s < kFieldSamples; ++s) {
    const Rec r = a.rec[min(first + s * kFieldThreads, a.m - 1)]; // past the end: repeats the last, unstored
    kx[s] = r.x, ky[s] = r.y, kz[s] = r.z, tm[s] = r.w;
  }
  const long long begin = static_cast<long long>(blockIdx.y) * a.per_split;
  const int v0 = static_cast<int>(min(begin, static_cast<long long>(a.voxels)));
  const int v1 = static_cast<int>(min(begin + a.per_split, static_cast<long long>(a.voxels)));
  double accr[kFieldSamples], acci[kFieldSamples];
#pragma unroll
  for (int s = 0; s < kFieldSamples; ++s) accr[s] = acci[s] = 0;

  for (int b = v0; b < v1; b += kFieldStage) {
    const int count = min(kFieldStage, v1 - b);
    __syncthreads();
    for (int q = threadIdx.x; q < count; q += kFieldThreads) {
      svox[q] = a.vox[b + q];
      sval[q] = to_cplx(a.image[b + q], a.demod);
    }
    __syncthreads();
    Real pr[kFieldSamples], pi[kFieldSamples];
#pragma unroll
    for (int s = 0; s < kFieldSamples; ++s) pr[s] = pi[s] = 0;
#pragma unroll 2
    for (int q = 0; q < count; ++q) {
      const Rec w = svox[q];
      const Cplx v = sval[q];
#pragma unroll
      for (int s = 0; s < kFieldSamples; ++s) {
        Real sn, cs;
        Trig::sincos_turns(-fma(kx[s], w.x, fma(ky[s], w.y, fma(kz[s], w.z, tm[s] * w.w))), sn, cs);
        pr[s] = fma(v.x, cs, fma(-v.y, sn, pr[s]));
        pi[s] = fma(v.x, sn, fma(v.y, cs, pi[s]));
      }
    }
#pragma unroll
    for (int s = 0; s < kFieldSamples; ++s) {
      accr[s] += pr[s];
      acci[s] += pi[s];
    }
  }

#pragma unroll
  for (int s = 0; s < kFieldSamples; ++s) {
    const int m = first + s * kFieldThreads;
    if (m >= a.m) break;
    if (a.partial) {
      a.partial[static_cast<std::size_t>(blockIdx.y) * a.m + m] = make_double2(accr[s], acci[s]);
    } else {
      // exp(-2 pi i f0 t_m) times the sum, in double
      const double2 d = make_double2(a.demod[m].x, -a.demod[m].y);
      const double2 y = cmul(make_double2(accr[s], acci[s]), d);
      a.out[m] = make_float2(static_cast<float>(y.x), static_cast<float>(y.y));
    }
  }
}

// out[i] = sum over the splits of partial[s * n + i] in split order (times conj(demod[i]) when
// demod is set: the forward's f0 factor), rounded to float.
template <class Cplx>
__global__ void add_splits_kernel(const double2 *__restrict__ partial, int splits, int n, const Cplx *__restrict__ demod,
                                  float2 *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double re = 0, im = 0;
  for (int s = 0; s < splits; ++s) {
    const double2 v = partial[static_cast<std::size_t>(s) * n + i];
    re += v.x;
    im += v.y;
  }
  if (demod) {
    const double2 d = make_double2(demod[i].x, -demod[i].y);
    const double2 y = cmul(make_double2(re, im), d);
    re = y.x;
    im = y.y;
  }
  out[i] = make_float2(static_cast<float>(re), static_cast<float>(im));
}

// Splits of `work` items over blockIdx.y so that `blocks` blocks per split fill the device
// (kBlocksPerSm resident blocks an SM, two waves), each split at least one stage long, and the
// partial sums (splits x outputs double2) within kPartialBudget.
int choose_splits(long long blocks, long long work, long long outputs, int sms) {
  constexpr long long kBlocksPerSm = 8;
  const long long target = 2 * kBlocksPerSm * sms;
  long long splits = (target + blocks - 1) / blocks;
  splits = std::min(splits, (work + kFieldStage - 1) / kFieldStage);
  splits = std::min<long long>(splits, static_cast<long long>(kPartialBudget / (sizeof(double2) * std::max(1LL, outputs))));
  return static_cast<int>(std::max(1LL, splits));
}
int per_split(long long work, int splits) {
  const long long per = (work + splits - 1) / splits;
  return static_cast<int>((per + kFieldStage - 1) / kFieldStage * kFieldStage);
}

} // namespace

const char *to_string(FieldKernel kernel) {
  switch (kernel) {
  case FieldKernel::SfuTrig: return "field-sfu-trig";
  case FieldKernel::Accurate: return "field-accurate-trig";
  case FieldKernel::Double: return "field-double";
  }
  return "?";
}

FieldKernel field_kernel(KernelPolicy policy, Precision precision) {
  const KernelPolicy resolved = resolve_policy(policy, precision); // throws for float32 policies in float64
  if (precision == Precision::Float64) return FieldKernel::Double;
  switch (resolved) {
  case KernelPolicy::Auto:
  case KernelPolicy::Tuned:
  case KernelPolicy::SfuTrig:
  case KernelPolicy::ConstantChunked: return FieldKernel::SfuTrig;
  case KernelPolicy::Register:
  case KernelPolicy::Gather:
  case KernelPolicy::ScatterAtomic: return FieldKernel::Accurate;
  case KernelPolicy::SeparableGemm: return FieldKernel::Double;
  }
  mri::detail::invalid_argument("policy", static_cast<int>(policy), "is not a KernelPolicy");
}

struct FieldFourierPlan::Impl {
  Grid grid;
  GridShape shape;
  std::size_t m = 0;
  double f0 = 0;
  cudaStream_t stream = nullptr;
  int sms = 1;
  DeviceBuffer<KPoint> k;     // M, kept for the double records
  DeviceBuffer<float> times;  // M
  DeviceBuffer<float> hz;     // voxels
  DeviceBuffer<float4> rec;   // M: k_a / n_a, t
  DeviceBuffer<float2> demod; // M: exp(2 pi i f0 t)
  DeviceBuffer<float4> vox;   // voxels: x, y, z, f - f0
  DeviceBuffer<DRecord> rec64, vox64; // the same in double, made on the first Double call
  DeviceBuffer<double2> demod64;
  DeviceBuffer<double2> partial;
  DeviceBuffer<float2> io_samples, io_image; // host calls and benchmarks

  void make_double_records() {
    if (rec64.size() > 0) return;
    const int mi = static_cast<int>(m);
    rec64 = DeviceBuffer<DRecord>(m);
    demod64 = DeviceBuffer<double2>(m);
    vox64 = DeviceBuffer<DRecord>(static_cast<std::size_t>(shape.voxels));
    sample_records_f64_kernel<<<blocks_for(mi, 256), 256, 0, stream>>>(k.get(), times.get(), mi, 1.0 / grid.nx(),
                                                                       1.0 / grid.ny(), 1.0 / grid.nz(), f0, rec64.get(),
                                                                       demod64.get());
    MRI_CUDA_CHECK_LAUNCH("sample_records_f64_kernel");
    voxel_records_kernel<DRecord><<<blocks_for(shape.voxels, 256), 256, 0, stream>>>(hz.get(), shape, f0, vox64.get());
    MRI_CUDA_CHECK_LAUNCH("voxel_records_kernel<double>");
  }

  double2 *partials(int splits, long long outputs) {
    if (splits <= 1) return nullptr;
    return partial.grow(static_cast<std::size_t>(splits) * static_cast<std::size_t>(outputs));
  }

  template <class Trig>
  void adjoint(const typename Trig::Rec *r, const typename Trig::Cplx *d, const typename Trig::Rec *v, const float2 *c,
               float2 *out) {
    const int tiles_x = (shape.nx + kFieldVoxels - 1) / kFieldVoxels;
    const long long tiles = static_cast<long long>(tiles_x) * shape.ny * shape.nz;
    const long long blocks = (tiles + kFieldThreads - 1) / kFieldThreads;
    const int splits = choose_splits(blocks, static_cast<long long>(m), shape.voxels, sms);
    AdjointArgs<Trig> a{r, d, c, v, static_cast<int>(m), shape, tiles_x, static_cast<int>(tiles),
                        per_split(static_cast<long long>(m), splits), partials(splits, shape.voxels), out};
    field_adjoint_kernel<Trig><<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(splits)), kFieldThreads, 0, stream>>>(a);
    MRI_CUDA_CHECK_LAUNCH("field_adjoint_kernel");
    if (splits > 1) {
      add_splits_kernel<float2><<<blocks_for(shape.voxels, 256), 256, 0, stream>>>(a.partial, splits, shape.voxels,
                                                                                  nullptr, out);
      MRI_CUDA_CHECK_LAUNCH("add_splits_kernel");
    }
  }

  template <class Trig>
  void forward(const typename Trig::Rec *r, const typename Trig::Cplx *d, const typename Trig::Rec *v,
               const float2 *image, float2 *out) {
    const long long per_block = static_cast<long long>(kFieldThreads) * kFieldSamples;
    const long long blocks = (static_cast<long long>(m) + per_block - 1) / per_block;
    const int splits = choose_splits(blocks, shape.voxels, static_cast<long long>(m), sms);
    ForwardArgs<Trig> a{r, d, v, image, static_cast<int>(m), shape.voxels, per_split(shape.voxels, splits),
                        partials(splits, static_cast<long long>(m)), out};
    field_forward_kernel<Trig><<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(splits)), kFieldThreads, 0, stream>>>(a);
    MRI_CUDA_CHECK_LAUNCH("field_forward_kernel");
    if (splits > 1) {
      add_splits_kernel<typename Trig::Cplx><<<blocks_for(static_cast<long long>(m), 256), 256, 0, stream>>>(
          a.partial, splits, static_cast<int>(m), d, out);
      MRI_CUDA_CHECK_LAUNCH("add_splits_kernel");
    }
  }

  void run_adjoint(FieldKernel kernel, const float2 *c, float2 *out) {
    switch (kernel) {
    case FieldKernel::SfuTrig: return adjoint<SfuTrigFn>(rec.get(), demod.get(), vox.get(), c, out);
    case FieldKernel::Accurate: return adjoint<AccurateTrigFn>(rec.get(), demod.get(), vox.get(), c, out);
    case FieldKernel::Double:
      make_double_records();
      return adjoint<DoubleTrigFn>(rec64.get(), demod64.get(), vox64.get(), c, out);
    }
    mri::detail::invalid_argument("kernel", static_cast<int>(kernel), "is not a FieldKernel");
  }
  void run_forward(FieldKernel kernel, const float2 *image, float2 *out) {
    switch (kernel) {
    case FieldKernel::SfuTrig: return forward<SfuTrigFn>(rec.get(), demod.get(), vox.get(), image, out);
    case FieldKernel::Accurate: return forward<AccurateTrigFn>(rec.get(), demod.get(), vox.get(), image, out);
    case FieldKernel::Double:
      make_double_records();
      return forward<DoubleTrigFn>(rec64.get(), demod64.get(), vox64.get(), image, out);
    }
    mri::detail::invalid_argument("kernel", static_cast<int>(kernel), "is not a FieldKernel");
  }

  // A host buffer of n float2 through `buffer` on the device.
  float2 *staged(DeviceBuffer<float2> &buffer, std::size_t n) { return buffer.grow(n); }

  template <class Run> double time_ms(Run &&run, int repetitions) {
    Event start(true), stop(true);
    run(); // warm-up: records, partial buffers
    std::vector<float> times_ms;
    for (int r = 0; r < std::max(1, repetitions); ++r) {
      MRI_CUDA_CHECK(cudaEventRecord(start.get(), stream));
      run();
      MRI_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
      MRI_CUDA_CHECK(cudaEventSynchronize(stop.get()));
      float ms = 0;
      MRI_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      times_ms.push_back(ms);
    }
    std::nth_element(times_ms.begin(), times_ms.begin() + static_cast<std::ptrdiff_t>(times_ms.size() / 2), times_ms.end());
    return times_ms[times_ms.size() / 2];
  }
};

FieldFourierPlan::FieldFourierPlan(const Trajectory &trajectory, const Grid &grid, std::span<const float> hz,
                                   std::span<const float> times, void *stream)
    : impl_(std::make_unique<Impl>()) {
  if (trajectory.empty()) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  trajectory.check_within(grid);
  if (hz.size() != static_cast<std::size_t>(grid.voxels()))
    mri::detail::invalid_argument("field.size()", hz.size(), "must equal grid.voxels() = " + std::to_string(grid.voxels()));
  if (times.size() != trajectory.size())
    mri::detail::invalid_argument("sample_times.size()", times.size(),
                                  "must equal trajectory.size() = " + std::to_string(trajectory.size()));
  mri::detail::check_sample_times(times, trajectory.size());
  for (std::size_t i = 0; i < hz.size(); ++i)
    if (!std::isfinite(hz[i])) mri::detail::invalid_argument("field[" + std::to_string(i) + "]", hz[i], "must be finite (Hz)");
  constexpr auto kMaxIndex = static_cast<std::size_t>(std::numeric_limits<int>::max());
  if (trajectory.size() > kMaxIndex || static_cast<std::size_t>(grid.voxels()) > kMaxIndex)
    throw Unsupported("FieldFourierPlan: " + std::to_string(trajectory.size()) + " samples on " +
                      std::to_string(grid.voxels()) + " voxels: the field-corrected sums index both in 32 bits");
  if (!device_present()) throw Unsupported("FieldFourierPlan: no usable CUDA device");
  Impl &p = *impl_;
  p.grid = grid;
  p.m = trajectory.size();
  p.shape = GridShape{static_cast<int>(grid.nx()), static_cast<int>(grid.ny()), static_cast<int>(grid.nz()),
                      static_cast<int>(grid.voxels()), static_cast<int>(grid.coordinate(0, 0)),
                      static_cast<int>(grid.coordinate(1, 0)), static_cast<int>(grid.coordinate(2, 0))};
  const auto [lo, hi] = std::minmax_element(hz.begin(), hz.end());
  p.f0 = 0.5 * (static_cast<double>(*lo) + static_cast<double>(*hi));
  p.stream = static_cast<cudaStream_t>(stream ? stream : default_stream());
  int device = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  MRI_CUDA_CHECK(cudaDeviceGetAttribute(&p.sms, cudaDevAttrMultiProcessorCount, device));

  p.k = DeviceBuffer<KPoint>(p.m);
  p.times = DeviceBuffer<float>(p.m);
  p.hz = DeviceBuffer<float>(hz.size());
  p.rec = DeviceBuffer<float4>(p.m);
  p.demod = DeviceBuffer<float2>(p.m);
  p.vox = DeviceBuffer<float4>(hz.size());
  MRI_CUDA_CHECK(cudaMemcpyAsync(p.k.get(), trajectory.data(), p.m * sizeof(KPoint), cudaMemcpyHostToDevice, p.stream));
  MRI_CUDA_CHECK(cudaMemcpyAsync(p.times.get(), times.data(), p.m * sizeof(float), cudaMemcpyHostToDevice, p.stream));
  MRI_CUDA_CHECK(cudaMemcpyAsync(p.hz.get(), hz.data(), hz.size() * sizeof(float), cudaMemcpyHostToDevice, p.stream));
  const int mi = static_cast<int>(p.m);
  sample_records_kernel<<<blocks_for(mi, 256), 256, 0, p.stream>>>(p.k.get(), p.times.get(), mi, 1.0 / grid.nx(),
                                                                  1.0 / grid.ny(), 1.0 / grid.nz(), p.f0, p.rec.get(),
                                                                  p.demod.get());
  MRI_CUDA_CHECK_LAUNCH("sample_records_kernel");
  voxel_records_kernel<float4><<<blocks_for(p.shape.voxels, 256), 256, 0, p.stream>>>(p.hz.get(), p.shape, p.f0, p.vox.get());
  MRI_CUDA_CHECK_LAUNCH("voxel_records_kernel<float>");
  MRI_CUDA_CHECK(cudaStreamSynchronize(p.stream)); // the host arrays may go on return
}

FieldFourierPlan::~FieldFourierPlan() = default;
FieldFourierPlan::FieldFourierPlan(FieldFourierPlan &&) noexcept = default;
FieldFourierPlan &FieldFourierPlan::operator=(FieldFourierPlan &&) noexcept = default;

std::size_t FieldFourierPlan::samples() const { return impl_->m; }
const Grid &FieldFourierPlan::grid() const { return impl_->grid; }
double FieldFourierPlan::reference_hz() const { return impl_->f0; }
void *FieldFourierPlan::stream() const { return impl_->stream; }

void FieldFourierPlan::adjoint_device(FieldKernel kernel, const cfloat *samples, cfloat *image) {
  impl_->run_adjoint(kernel, reinterpret_cast<const float2 *>(samples), reinterpret_cast<float2 *>(image));
}
void FieldFourierPlan::forward_device(FieldKernel kernel, const cfloat *image, cfloat *samples) {
  impl_->run_forward(kernel, reinterpret_cast<const float2 *>(image), reinterpret_cast<float2 *>(samples));
}

void FieldFourierPlan::adjoint(FieldKernel kernel, const cfloat *samples, cfloat *image) {
  Impl &p = *impl_;
  const auto n = static_cast<std::size_t>(p.shape.voxels);
  float2 *s = p.staged(p.io_samples, p.m), *x = p.staged(p.io_image, n);
  MRI_CUDA_CHECK(cudaMemcpyAsync(s, samples, p.m * sizeof(float2), cudaMemcpyHostToDevice, p.stream));
  p.run_adjoint(kernel, s, x);
  MRI_CUDA_CHECK(cudaMemcpyAsync(image, x, n * sizeof(float2), cudaMemcpyDeviceToHost, p.stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(p.stream));
}

void FieldFourierPlan::forward(FieldKernel kernel, const cfloat *image, cfloat *samples) {
  Impl &p = *impl_;
  const auto n = static_cast<std::size_t>(p.shape.voxels);
  float2 *s = p.staged(p.io_samples, p.m), *x = p.staged(p.io_image, n);
  MRI_CUDA_CHECK(cudaMemcpyAsync(x, image, n * sizeof(float2), cudaMemcpyHostToDevice, p.stream));
  p.run_forward(kernel, x, s);
  MRI_CUDA_CHECK(cudaMemcpyAsync(samples, s, p.m * sizeof(float2), cudaMemcpyDeviceToHost, p.stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(p.stream));
}

void FieldFourierPlan::synchronize() { MRI_CUDA_CHECK(cudaStreamSynchronize(impl_->stream)); }

void FieldFourierPlan::upload_samples(const cfloat *host) {
  Impl &p = *impl_;
  MRI_CUDA_CHECK(cudaMemcpyAsync(p.staged(p.io_samples, p.m), host, p.m * sizeof(float2), cudaMemcpyHostToDevice, p.stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(p.stream));
}
void FieldFourierPlan::upload_image(const cfloat *host) {
  Impl &p = *impl_;
  const auto n = static_cast<std::size_t>(p.shape.voxels);
  MRI_CUDA_CHECK(cudaMemcpyAsync(p.staged(p.io_image, n), host, n * sizeof(float2), cudaMemcpyHostToDevice, p.stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(p.stream));
}

double FieldFourierPlan::time_adjoint_ms(FieldKernel kernel, int repetitions) {
  Impl &p = *impl_;
  float2 *s = p.staged(p.io_samples, p.m), *x = p.staged(p.io_image, static_cast<std::size_t>(p.shape.voxels));
  return p.time_ms([&] { p.run_adjoint(kernel, s, x); }, repetitions);
}
double FieldFourierPlan::time_forward_ms(FieldKernel kernel, int repetitions) {
  Impl &p = *impl_;
  float2 *s = p.staged(p.io_samples, p.m), *x = p.staged(p.io_image, static_cast<std::size_t>(p.shape.voxels));
  return p.time_ms([&] { p.run_forward(kernel, x, s); }, repetitions);
}

} // namespace mri::cuda::detail
