// The exact field-corrected F and F^H (FieldFourierOperator, offresonance.hpp): the direct sums of
// lib/exact/direct_dft.cpp with the field term 2 pi f(x) t_m added to each pair's phase. The
// float32 separable product of the plain F does not apply (the field term couples voxel and
// sample), so both precisions run the direct sum: Float32 evaluates the phase and its trig in float
// (the pair's phase up to pi n / 2 + 2 pi |f| t keeps about 1e-5 rad), Float64 in double; both sum
// in double.
#include <cmath>
#include <numbers>
#include <string>

#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/kspace.hpp"
#include "mri/offresonance.hpp"
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

// y_m = sum_x v_x exp(-i (k_m . w_x + 2 pi f(x) t_m))
template <class T>
void forward_sum(const Trajectory &t, const std::vector<float> &times, const Grid &g, const std::vector<float> &hz,
                 const cfloat *image, cfloat *samples) {
  const auto voxels = voxel_phases<T>(g, hz);
  const auto M = static_cast<std::int64_t>(t.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t m = 0; m < M; ++m) {
    const KPoint &k = t[static_cast<std::size_t>(m)];
    const T kx = static_cast<T>(k.kx), ky = static_cast<T>(k.ky), kz = static_cast<T>(k.kz);
    const T tm = static_cast<T>(times[static_cast<std::size_t>(m)]);
    double re = 0, im = 0;
    for (std::size_t n = 0; n < voxels.size(); ++n) {
      const VoxelPhase<T> &v = voxels[n];
      const T phase = -(kx * v.x + ky * v.y + kz * v.z + v.field * tm);
      const T cs = std::cos(phase), sn = std::sin(phase);
      const cfloat a = image[n];
      re += static_cast<double>(a.real() * cs - a.imag() * sn);
      im += static_cast<double>(a.real() * sn + a.imag() * cs);
    }
    samples[m] = cfloat(static_cast<float>(re), static_cast<float>(im));
  }
}

// x_n = sum_m y_m exp(+i (k_m . w_n + 2 pi f(n) t_m))
template <class T>
void adjoint_sum(const Trajectory &t, const std::vector<float> &times, const Grid &g, const std::vector<float> &hz,
                 const cfloat *samples, cfloat *image) {
  const auto voxels = voxel_phases<T>(g, hz);
  const std::size_t M = t.size();
  const auto N = static_cast<std::int64_t>(voxels.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t n = 0; n < N; ++n) {
    const VoxelPhase<T> &v = voxels[static_cast<std::size_t>(n)];
    double re = 0, im = 0;
    for (std::size_t m = 0; m < M; ++m) {
      const KPoint &k = t[m];
      const T phase = static_cast<T>(k.kx) * v.x + static_cast<T>(k.ky) * v.y + static_cast<T>(k.kz) * v.z +
                      v.field * static_cast<T>(times[m]);
      const T cs = std::cos(phase), sn = std::sin(phase);
      const cfloat y = samples[m];
      re += static_cast<double>(y.real() * cs - y.imag() * sn);
      im += static_cast<double>(y.real() * sn + y.imag() * cs);
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
  if (options_.backend == Backend::Cuda)
    throw Unsupported("FieldFourierOperator: backend = cuda: the field-corrected exact sums run on the CPU in this build");
  options_.backend = Backend::Cpu;
  vanishes_ = field_->is_zero() || all_zero(times);
  times_ = std::make_shared<const std::vector<float>>(std::move(times));
}

void FieldFourierOperator::forward(const Image &image, std::span<cfloat> samples) const {
  detail::check_image_grid(image, grid_);
  detail::check_sample_count(samples.size(), trajectory_.size());
  if (vanishes_) return FourierOperator(trajectory_, grid_, options_).forward(image, samples);
  if (options_.precision == Precision::Float64)
    forward_sum<double>(trajectory_, *times_, grid_, field_->hz(), image.data(), samples.data());
  else
    forward_sum<float>(trajectory_, *times_, grid_, field_->hz(), image.data(), samples.data());
}

void FieldFourierOperator::adjoint(std::span<const cfloat> samples, Image &image) const {
  detail::check_image_grid(image, grid_);
  detail::check_sample_count(samples.size(), trajectory_.size());
  if (vanishes_) return FourierOperator(trajectory_, grid_, options_).adjoint(samples, image);
  if (options_.precision == Precision::Float64)
    adjoint_sum<double>(trajectory_, *times_, grid_, field_->hz(), samples.data(), image.data());
  else
    adjoint_sum<float>(trajectory_, *times_, grid_, field_->hz(), samples.data(), image.data());
}

} // namespace mri
