#pragma once
// The sparse regularisers' per-sample definitions (mri/sparse.hpp), compiled by the host compiler
// (lib/sparse/) and by nvcc (cuda/sparse/): one definition, not a copy per backend. Complex
// values are read and written as interleaved (re, im) floats, the layout of std::complex<float>
// and of CUDA float2 arrays alike.
//
// Orthogonal wavelets, periodised (Mallat 1999, ch. 7.5): one level of the transform of a line of
// n samples splits its even part m = n - n % 2 into m/2 approximation and m/2 detail samples,
//   a[k] = sum_j h[j] x[(2k + j) mod m],   d[k] = sum_j g[j] x[(2k + j) mod m],
//   g[j] = (-1)^j h[T - 1 - j]   (T taps),
// and keeps an odd last sample x[m] as it is. The level's output line is [a | x[m] if n odd | d]:
// the approximation part of length m/2 + n % 2 is what the next level transforms. Each level is
// orthonormal (the periodised filter bank is, for any even m >= 2; the odd sample is the
// identity), so the whole transform is, for any extent, and its inverse is its adjoint.
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define MRI_HOST_DEVICE __host__ __device__
#else
#define MRI_HOST_DEVICE
#endif

namespace mri::detail {

// Orthonormal low-pass filters (sum h = sqrt 2, sum h^2 = 1): Haar; Daubechies with 2 and 4
// vanishing moments (4 and 8 taps; BART's wavelet is the 4-tap one). Index by the Wavelet enum.
inline constexpr int kWaveletFamilies = 3;
inline constexpr int kMaxWaveletTaps = 8;
struct WaveletFilter {
  int taps;
  double h[kMaxWaveletTaps];
};
inline constexpr WaveletFilter kWaveletFilters[kWaveletFamilies] = {
    {2, {0.70710678118654752, 0.70710678118654752}},
    {4,
     {0.48296291314453414, 0.83651630373780790, 0.22414386804201339, -0.12940952255126037}},
    {8,
     {0.23037781330885523, 0.71484657055254153, 0.63088076792959036, -0.02798376941698385,
      -0.18703481171888114, 0.03084138183598697, 0.03288301166698295, -0.01059740178499728}}};

// An axis is split at a level while its approximation extent is at least this: the coarsest band
// keeps >= 8 samples, the 8-tap filter's length, so no periodised filter wraps onto itself.
inline constexpr std::int64_t kWaveletMinSplitExtent = 16;
// wrap_once below relies on it: a split line has m >= kWaveletMinSplitExtent - 1 > taps samples.
static_assert(kWaveletMinSplitExtent - 1 >= kMaxWaveletTaps);

// The high-pass tap j of a filter with `taps` taps.
MRI_HOST_DEVICE inline double wavelet_high(const double *h, int taps, int j) {
  return (j % 2 == 0 ? 1.0 : -1.0) * h[taps - 1 - j];
}

// i mod m for 0 <= i < 2m: one compare instead of an integer division per filter tap (the
// periodised indices 2k + j and s - j + m stay below 2m because taps <= m at every split).
MRI_HOST_DEVICE inline std::int64_t wrap_once(std::int64_t i, std::int64_t m) { return i >= m ? i - m : i; }

// Output sample i (0 <= i < n) of one forward level on a line read as x[s * stride] (s < n).
MRI_HOST_DEVICE inline void wavelet_forward_sample(const float *x, std::int64_t stride, std::int64_t n,
                                                   std::int64_t i, const double *h, int taps, float &re,
                                                   float &im) {
  const std::int64_t m = n - n % 2, half = m / 2;
  if (n % 2 == 1 && i == half) { // the odd last sample, kept
    re = x[2 * m * stride];
    im = x[2 * m * stride + 1];
    return;
  }
  const bool detail = i >= half + n % 2;
  const std::int64_t k = detail ? i - half - n % 2 : i;
  double ar = 0, ai = 0;
  for (int j = 0; j < taps; ++j) {
    const double c = detail ? wavelet_high(h, taps, j) : h[j];
    const std::int64_t s = wrap_once(2 * k + j, m);
    ar += c * x[2 * s * stride];
    ai += c * x[2 * s * stride + 1];
  }
  re = static_cast<float>(ar);
  im = static_cast<float>(ai);
}

// Output sample s (0 <= s < n) of one inverse level on a line of coefficients read as
// y[i * stride] in the layout above: x[s] = sum over taps j of the parity of s of
// h[j] a[k] + g[j] d[k], k = ((s - j) mod m) / 2.
MRI_HOST_DEVICE inline void wavelet_inverse_sample(const float *y, std::int64_t stride, std::int64_t n,
                                                   std::int64_t s, const double *h, int taps, float &re,
                                                   float &im) {
  const std::int64_t m = n - n % 2, half = m / 2, odd = n % 2;
  if (odd == 1 && s == m) {
    re = y[2 * half * stride];
    im = y[2 * half * stride + 1];
    return;
  }
  double xr = 0, xi = 0;
  for (int j = static_cast<int>(s % 2); j < taps; j += 2) {
    const std::int64_t k = wrap_once(s - j + m, m) / 2;
    const std::int64_t ia = k, id = half + odd + k;
    const double lo = h[j], hi = wavelet_high(h, taps, j);
    xr += lo * y[2 * ia * stride] + hi * y[2 * id * stride];
    xi += lo * y[2 * ia * stride + 1] + hi * y[2 * id * stride + 1];
  }
  re = static_cast<float>(xr);
  im = static_cast<float>(xi);
}

// The approximation extent after one level: m/2 plus the odd sample.
MRI_HOST_DEVICE inline std::int64_t wavelet_approximation_extent(std::int64_t n) { return n / 2 + n % 2; }

// Forward differences along one axis with nothing past the edge: g[v] = x[v + stride] - x[v] for
// pos < extent - 1, 0 at the last index (the Neumann boundary of mri/regularizer.hpp's
// FiniteDifference).
MRI_HOST_DEVICE inline void difference_forward_sample(const float *x, std::int64_t v, std::int64_t pos,
                                                      std::int64_t extent, std::int64_t stride, float &re,
                                                      float &im) {
  if (pos + 1 >= extent) {
    re = im = 0.0f;
    return;
  }
  re = x[2 * (v + stride)] - x[2 * v];
  im = x[2 * (v + stride) + 1] - x[2 * v + 1];
}

// Its adjoint at voxel v, accumulated into (re, im): g[v - stride] (pos >= 1) - g[v] (pos < extent - 1).
MRI_HOST_DEVICE inline void difference_adjoint_add(const float *g, std::int64_t v, std::int64_t pos,
                                                   std::int64_t extent, std::int64_t stride, float &re,
                                                   float &im) {
  if (pos >= 1) {
    re += g[2 * (v - stride)];
    im += g[2 * (v - stride) + 1];
  }
  if (pos + 1 < extent) {
    re -= g[2 * v];
    im -= g[2 * v + 1];
  }
}

// One step of the fast gradient projection on TV denoising's dual (SparseTermOps::prox_image) at
// voxel v, for `count` axes whose duals are stacked in p and q (axis b's at v + b * voxels):
//   w_b = q_b + step (D_b u)_v,   w projected onto the ball of `radius` (the axes as one group when
//   isotropic, each value alone otherwise),   q_b = w_b + momentum (w_b - p_b),   p_b = w_b.
// pos, extent, stride: voxel v's coordinate along axis b, the axis' extent and its stride.
MRI_HOST_DEVICE inline void tv_dual_step_voxel(const float *u, float *p, float *q, std::int64_t v, std::int64_t voxels,
                                               int count, const std::int64_t *pos, const std::int64_t *extent,
                                               const std::int64_t *stride, bool isotropic, float step, float radius,
                                               float momentum) {
  // In float: the projection only rescales a float group, and a double square root per voxel
  // would cost more than the rest of the step.
  float wr[3], wi[3];
  float group2 = 0;
  for (int b = 0; b < count; ++b) {
    float re, im;
    difference_forward_sample(u, v, pos[b], extent[b], stride[b], re, im);
    const std::int64_t s = v + b * voxels;
    wr[b] = q[2 * s] + step * re;
    wi[b] = q[2 * s + 1] + step * im;
    group2 += wr[b] * wr[b] + wi[b] * wi[b];
  }
  for (int b = 0; b < count; ++b) {
    const float norm2 = isotropic ? group2 : wr[b] * wr[b] + wi[b] * wi[b];
    const float scale = norm2 > radius * radius ? radius / sqrtf(norm2) : 1.0f;
    const std::int64_t s = v + b * voxels;
    const float re = wr[b] * scale, im = wi[b] * scale;
    q[2 * s] = re + momentum * (re - p[2 * s]);
    q[2 * s + 1] = im + momentum * (im - p[2 * s + 1]);
    p[2 * s] = re;
    p[2 * s + 1] = im;
  }
}

// The proximal map of t * ||.||_2 on a group of `size` complex values z[v + c * group_stride]
// (c < size), in place: z * max(0, 1 - t / ||z||) (block soft-thresholding; size 1 is the
// complex soft-threshold of l1). Returns ||z|| before the shrink (for the objective).
MRI_HOST_DEVICE inline double shrink_group(float *z, std::int64_t v, std::int64_t group_stride, int size, double t) {
  double norm2 = 0;
  for (int c = 0; c < size; ++c) {
    const std::int64_t u = v + c * group_stride;
    norm2 += static_cast<double>(z[2 * u]) * z[2 * u] + static_cast<double>(z[2 * u + 1]) * z[2 * u + 1];
  }
  const double norm = sqrt(norm2);
  const float scale = norm > t ? static_cast<float>(1.0 - t / norm) : 0.0f;
  for (int c = 0; c < size; ++c) {
    const std::int64_t u = v + c * group_stride;
    z[2 * u] *= scale;
    z[2 * u + 1] *= scale;
  }
  return norm;
}

// The l2 norm of the same group (the objective's term without the shrink).
MRI_HOST_DEVICE inline double group_norm(const float *z, std::int64_t v, std::int64_t group_stride, int size) {
  double norm2 = 0;
  for (int c = 0; c < size; ++c) {
    const std::int64_t u = v + c * group_stride;
    norm2 += static_cast<double>(z[2 * u]) * z[2 * u] + static_cast<double>(z[2 * u + 1]) * z[2 * u + 1];
  }
  return sqrt(norm2);
}

} // namespace mri::detail
