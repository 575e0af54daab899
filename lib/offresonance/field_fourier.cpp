// The exact field-corrected F and F^H (FieldFourierOperator, offresonance.hpp): the direct sums of
// lib/exact/direct_dft.cpp with the field term 2 pi f(x) t_m added to each pair's phase. The
// float32 separable product of the plain F does not apply (the field term couples voxel and
// sample), so both precisions run the direct sum: Float64 in double; Float32 evaluates the phase
// and its sine and cosine in float (a pair's phase up to pi n / 2 + 2 pi |f| t keeps about 1e-5 rad)
// by a branch-free polynomial the compiler vectorises, sums chunks of 256 terms in float and
// those in double. backend = Cuda: the plugin's DeviceFieldFourier (cuda/offresonance/).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "backend.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/kspace.hpp"
#include "mri/offresonance.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "operator_checks.hpp"

namespace mri {
namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;

// Per-voxel phase terms: 2 pi x_a / n_a per axis and 2 pi f(x).
template <class T> struct VoxelPhase {
  T x, y, z, field;
};

template <class T> std::vector<VoxelPhase<T>> voxel_phases(const Grid &g, const std::vector<float> &hz) {
  std::vector<VoxelPhase<T>> v(static_cast<std::size_t>(g.voxels()));
  for (std::int64_t i = 0; i < g.voxels(); ++i) {
    const std::int64_t ix = i % g.nx(), iy = (i / g.nx()) % g.ny(), iz = i / (g.nx() * g.ny());
    v[static_cast<std::size_t>(i)] = {static_cast<T>(kTwoPi * static_cast<double>(g.coordinate(0, ix)) / static_cast<double>(g.nx())),
                                      static_cast<T>(kTwoPi * static_cast<double>(g.coordinate(1, iy)) / static_cast<double>(g.ny())),
                                      static_cast<T>(kTwoPi * static_cast<double>(g.coordinate(2, iz)) / static_cast<double>(g.nz())),
                                      static_cast<T>(kTwoPi * static_cast<double>(hz[static_cast<std::size_t>(i)]))};
  }
  return v;
}

// sin and cos of a float phase |p| < 2^21, branch-free so that the loops below vectorise: p reduced
// by 2 pi (Cody-Waite: 2 pi = hi + lo, hi = 201/32 exact in 8 bits, so n hi is exact for |n| < 2^15),
// folded into [-pi/2, pi/2] (sin(pi - r) = sin r, cos(pi - r) = -cos r), then the Taylor series to
// x^11 / x^12, whose truncation there is below 6e-8 (float's epsilon).
inline void sincos_float(float p, float &s, float &c) {
  constexpr float kInvTwoPi = 0.159154943f, kHi = 6.28125f, kLo = 1.93530717e-3f;
  constexpr float kPi = 3.14159265f, kHalfPi = 1.57079633f, kRound = 12582912.0f; // 1.5 * 2^23
  const float n = (p * kInvTwoPi + kRound) - kRound; // round to nearest
  float r = (p - n * kHi) - n * kLo;
  const bool fold = std::fabs(r) > kHalfPi;
  r = fold ? (r < 0 ? -kPi : kPi) - r : r;
  const float x2 = r * r;
  s = r * (1 + x2 * (-1.f / 6 + x2 * (1.f / 120 + x2 * (-1.f / 5040 + x2 * (1.f / 362880 + x2 * (-1.f / 39916800))))));
  const float cp = 1 + x2 * (-0.5f + x2 * (1.f / 24 + x2 * (-1.f / 720 + x2 * (1.f / 40320 + x2 * (-1.f / 3628800 + x2 * (1.f / 479001600))))));
  c = fold ? -cp : cp;
}

// Float32 sums run in chunks of this many terms in float, added into double: the float error stays
// ~ eps sqrt(256) relative whatever M or N (as the separable float32 path's chunks).
constexpr std::size_t kChunk = 256;

// Struct-of-arrays copies of the per-pair factors, for the vectorised float loops.
struct SampleArrays {
  std::vector<float> kx, ky, kz, t;
};
SampleArrays sample_arrays(const Trajectory &tr, const std::vector<float> &times) {
  SampleArrays a;
  for (std::size_t m = 0; m < tr.size(); ++m) {
    a.kx.push_back(tr[m].kx);
    a.ky.push_back(tr[m].ky);
    a.kz.push_back(tr[m].kz);
    a.t.push_back(times[m]);
  }
  return a;
}

// y_m = sum_x v_x exp(-i (k_m . w_x + 2 pi f(x) t_m)), in double.
void forward_sum_f64(const Trajectory &t, const std::vector<float> &times, const Grid &g, const std::vector<float> &hz,
                     const cfloat *image, cfloat *samples) {
  const auto voxels = voxel_phases<double>(g, hz);
  const auto M = static_cast<std::int64_t>(t.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t m = 0; m < M; ++m) {
    const KPoint &k = t[static_cast<std::size_t>(m)];
    const double tm = times[static_cast<std::size_t>(m)];
    double re = 0, im = 0;
    for (std::size_t n = 0; n < voxels.size(); ++n) {
      const VoxelPhase<double> &v = voxels[n];
      const double phase = -(k.kx * v.x + k.ky * v.y + k.kz * v.z + v.field * tm);
      const double cs = std::cos(phase), sn = std::sin(phase);
      const cfloat a = image[n];
      re += a.real() * cs - a.imag() * sn;
      im += a.real() * sn + a.imag() * cs;
    }
    samples[m] = cfloat(static_cast<float>(re), static_cast<float>(im));
  }
}

// x_n = sum_m y_m exp(+i (k_m . w_n + 2 pi f(n) t_m)), in double.
void adjoint_sum_f64(const Trajectory &t, const std::vector<float> &times, const Grid &g, const std::vector<float> &hz,
                     const cfloat *samples, cfloat *image) {
  const auto voxels = voxel_phases<double>(g, hz);
  const std::size_t M = t.size();
  const auto N = static_cast<std::int64_t>(voxels.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t n = 0; n < N; ++n) {
    const VoxelPhase<double> &v = voxels[static_cast<std::size_t>(n)];
    double re = 0, im = 0;
    for (std::size_t m = 0; m < M; ++m) {
      const KPoint &k = t[m];
      const double phase = k.kx * v.x + k.ky * v.y + k.kz * v.z + v.field * times[m];
      const double cs = std::cos(phase), sn = std::sin(phase);
      const cfloat y = samples[m];
      re += y.real() * cs - y.imag() * sn;
      im += y.real() * sn + y.imag() * cs;
    }
    image[n] = cfloat(static_cast<float>(re), static_cast<float>(im));
  }
}

// The float32 forward: per sample, the voxels in chunks (phase and trig in float, sincos_float).
void forward_sum_f32(const Trajectory &t, const std::vector<float> &times, const Grid &g, const std::vector<float> &hz,
                     const cfloat *image, cfloat *samples) {
  const auto voxels = voxel_phases<float>(g, hz);
  const std::size_t N = voxels.size();
  std::vector<float> wx(N), wy(N), wz(N), wf(N), ar(N), ai(N);
  for (std::size_t n = 0; n < N; ++n) {
    wx[n] = voxels[n].x, wy[n] = voxels[n].y, wz[n] = voxels[n].z, wf[n] = voxels[n].field;
    ar[n] = image[n].real(), ai[n] = image[n].imag();
  }
  const auto M = static_cast<std::int64_t>(t.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t m = 0; m < M; ++m) {
    const KPoint &k = t[static_cast<std::size_t>(m)];
    const float kx = k.kx, ky = k.ky, kz = k.kz, tm = times[static_cast<std::size_t>(m)];
    double re = 0, im = 0;
    for (std::size_t n0 = 0; n0 < N; n0 += kChunk) {
      const std::size_t n1 = std::min(N, n0 + kChunk);
      float cre = 0, cim = 0;
#pragma omp simd reduction(+ : cre, cim)
      for (std::size_t n = n0; n < n1; ++n) {
        float sn, cs;
        sincos_float(-(kx * wx[n] + ky * wy[n] + kz * wz[n] + wf[n] * tm), sn, cs);
        cre += ar[n] * cs - ai[n] * sn;
        cim += ar[n] * sn + ai[n] * cs;
      }
      re += cre;
      im += cim;
    }
    samples[m] = cfloat(static_cast<float>(re), static_cast<float>(im));
  }
}

// The float32 adjoint: per voxel, the samples in chunks.
void adjoint_sum_f32(const Trajectory &t, const std::vector<float> &times, const Grid &g, const std::vector<float> &hz,
                     const cfloat *samples, cfloat *image) {
  const auto voxels = voxel_phases<float>(g, hz);
  const SampleArrays a = sample_arrays(t, times);
  const std::size_t M = t.size();
  std::vector<float> yr(M), yi(M);
  for (std::size_t m = 0; m < M; ++m) yr[m] = samples[m].real(), yi[m] = samples[m].imag();
  const auto N = static_cast<std::int64_t>(voxels.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t n = 0; n < N; ++n) {
    const VoxelPhase<float> &v = voxels[static_cast<std::size_t>(n)];
    double re = 0, im = 0;
    for (std::size_t m0 = 0; m0 < M; m0 += kChunk) {
      const std::size_t m1 = std::min(M, m0 + kChunk);
      float cre = 0, cim = 0;
#pragma omp simd reduction(+ : cre, cim)
      for (std::size_t m = m0; m < m1; ++m) {
        float sn, cs;
        sincos_float(a.kx[m] * v.x + a.ky[m] * v.y + a.kz[m] * v.z + v.field * a.t[m], sn, cs);
        cre += yr[m] * cs - yi[m] * sn;
        cim += yr[m] * sn + yi[m] * cs;
      }
      re += cre;
      im += cim;
    }
    image[n] = cfloat(static_cast<float>(re), static_cast<float>(im));
  }
}

bool all_zero(const std::vector<float> &v) {
  for (float x : v)
    if (x != 0) return false;
  return true;
}

} // namespace

FieldFourierOperator::FieldFourierOperator(Trajectory trajectory, Grid grid, std::shared_ptr<const FieldMap> field,
                                           std::vector<float> times, OperatorOptions options)
    : trajectory_(std::move(trajectory).wrapped(grid)), grid_(grid), field_(std::move(field)), options_(options) {
  if (trajectory_.empty()) detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  if (!field_) detail::invalid_argument("field", "null", "needs a field map");
  if (field_->grid() != grid_)
    detail::invalid_argument("field.grid().voxels()", field_->grid().voxels(),
                             "must be on the operator's grid (" + std::to_string(grid_.voxels()) + " voxels; FieldMap::resampled)");
  if (times.size() != trajectory_.size())
    detail::invalid_argument("sample_times.size()", times.size(), "must equal trajectory.size() = " + std::to_string(trajectory_.size()));
  detail::check_sample_times(times, trajectory_.size());
  options_.backend = detail::resolve_backend(options_.backend, "FieldFourierOperator");
  vanishes_ = field_->is_zero() || all_zero(times);
  times_ = std::make_shared<const std::vector<float>>(std::move(times));
  if (options_.backend == Backend::Cuda) {
    const detail::CudaBackend &cuda = *detail::cuda_plugin().backend; // resolve_backend checked it
    options_.policy = cuda.resolve_policy(options_.policy, options_.precision);
    device_plan_ = cuda.field_fourier(trajectory_, grid_, *field_, *times_);
  }
}

void FieldFourierOperator::forward(const Image &image, std::span<cfloat> samples) const {
  detail::check_image_grid(image, grid_);
  detail::check_sample_count(samples.size(), trajectory_.size());
  if (device_plan_) return device_plan_->forward(options_.precision, image.data(), samples.data());
  if (vanishes_) return FourierOperator(trajectory_, grid_, options_).forward(image, samples);
  if (options_.precision == Precision::Float64)
    forward_sum_f64(trajectory_, *times_, grid_, field_->hz(), image.data(), samples.data());
  else
    forward_sum_f32(trajectory_, *times_, grid_, field_->hz(), image.data(), samples.data());
}

void FieldFourierOperator::adjoint(std::span<const cfloat> samples, Image &image) const {
  detail::check_image_grid(image, grid_);
  detail::check_sample_count(samples.size(), trajectory_.size());
  if (device_plan_) return device_plan_->adjoint(options_.policy, samples.data(), image.data());
  if (vanishes_) return FourierOperator(trajectory_, grid_, options_).adjoint(samples, image);
  if (options_.precision == Precision::Float64)
    adjoint_sum_f64(trajectory_, *times_, grid_, field_->hz(), samples.data(), image.data());
  else
    adjoint_sum_f32(trajectory_, *times_, grid_, field_->hz(), samples.data(), image.data());
}

} // namespace mri
