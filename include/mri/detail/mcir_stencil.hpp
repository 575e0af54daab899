#pragma once
// ImageWarp's per-voxel definitions (mri/mcir.hpp), compiled by the host compiler (lib/mcir/) and
// by nvcc (cuda/mcir/): one definition of the interpolation's corners and weights and of the
// Jacobian weight for both backends.
#include <cmath>
#include <cstdint>

#if !defined(MRI_HOST_DEVICE)
#if defined(__CUDACC__)
#define MRI_HOST_DEVICE __host__ __device__
#else
#define MRI_HOST_DEVICE
#endif
#endif

namespace mri::detail::mcir {

// The clamp-to-edge trilinear stencil of a position p (array coordinates) on a grid of extents n:
// per axis the lower and upper index and the fraction t, as detail::motion::trilinear forms them
// (same clamping, same arithmetic, so the forward below equals mri::warp on real values bitwise).
struct Stencil {
  std::int64_t i0[3], i1[3];
  float t[3];
};

MRI_HOST_DEVICE inline Stencil stencil_at(const std::int64_t (&n)[3], const float (&p)[3]) {
  Stencil s{};
  for (int a = 0; a < 3; ++a) {
    float q = p[a] < 0.0f ? 0.0f : p[a];
    q = q > float(n[a] - 1) ? float(n[a] - 1) : q;
    s.i0[a] = static_cast<std::int64_t>(q); // q >= 0: truncation is floor
    s.i1[a] = s.i0[a] + 1 < n[a] ? s.i0[a] + 1 : s.i0[a];
    s.t[a] = q - float(s.i0[a]);
  }
  return s;
}

// The 8 corners (x fastest in corner order: corner k takes i1 along axis a when bit a of k is set)
// and their weights prod_a (t_a or 1 - t_a): the interpolation's row, what the adjoint scatters.
MRI_HOST_DEVICE inline std::int64_t corner_index(const Stencil &s, const std::int64_t (&n)[3], int k) {
  const std::int64_t x = (k & 1) ? s.i1[0] : s.i0[0];
  const std::int64_t y = (k & 2) ? s.i1[1] : s.i0[1];
  const std::int64_t z = (k & 4) ? s.i1[2] : s.i0[2];
  return x + n[0] * (y + n[1] * z);
}
MRI_HOST_DEVICE inline float corner_weight(const Stencil &s, int k) {
  const float wx = (k & 1) ? s.t[0] : 1.0f - s.t[0];
  const float wy = (k & 2) ? s.t[1] : 1.0f - s.t[1];
  const float wz = (k & 4) ? s.t[2] : 1.0f - s.t[2];
  return wx * wy * wz;
}

// The forward's value at the stencil, one real component of the image (stride 2 over interleaved
// complex values; 1 over a real array): the nested lerps of detail::motion::trilinear.
MRI_HOST_DEVICE inline float interpolate(const float *f, std::int64_t stride, const Stencil &s,
                                         const std::int64_t (&n)[3]) {
  const auto at = [&](int k) { return f[stride * corner_index(s, n, k)]; };
  const float c00 = at(0) + s.t[0] * (at(1) - at(0));
  const float c10 = at(2) + s.t[0] * (at(3) - at(2));
  const float c01 = at(4) + s.t[0] * (at(5) - at(4));
  const float c11 = at(6) + s.t[0] * (at(7) - at(6));
  const float c0 = c00 + s.t[1] * (c10 - c00);
  const float c1 = c01 + s.t[1] * (c11 - c01);
  return c0 + s.t[2] * (c1 - c0);
}

// One-sided at the border, central inside: d f / d axis at index i of extent n (stride between
// neighbours); 0 on an axis of extent 1.
MRI_HOST_DEVICE inline float difference(const float *f, std::int64_t v, std::int64_t stride, std::int64_t i,
                                        std::int64_t n) {
  if (n < 2)
    return 0.0f;
  if (i == 0)
    return f[v + stride] - f[v];
  if (i == n - 1)
    return f[v] - f[v - stride];
  return 0.5f * (f[v + stride] - f[v - stride]);
}

// |det(I + grad u)| at voxel (x, y, z): the local volume ratio of v -> v + u(v) (mass
// conservation's change of variables); on a 2D grid the 2x2 determinant (w has no effect there).
MRI_HOST_DEVICE inline float jacobian_weight(const float *u, const float *v, const float *w, const std::int64_t (&n)[3],
                                             std::int64_t x, std::int64_t y, std::int64_t z) {
  const std::int64_t idx = x + n[0] * (y + n[1] * z), sx = 1, sy = n[0], sz = n[0] * n[1];
  const float *c[3] = {u, v, w};
  const std::int64_t stride[3] = {sx, sy, sz}, i[3] = {x, y, z};
  float j[3][3];
  for (int r = 0; r < 3; ++r)
    for (int a = 0; a < 3; ++a)
      j[r][a] = (r == a ? 1.0f : 0.0f) + difference(c[r], idx, stride[a], i[a], n[a]);
  if (n[2] == 1) {
    const float d2 = j[0][0] * j[1][1] - j[0][1] * j[1][0];
    return d2 < 0.0f ? -d2 : d2;
  }
  const float d3 = j[0][0] * (j[1][1] * j[2][2] - j[1][2] * j[2][1]) -
                   j[0][1] * (j[1][0] * j[2][2] - j[1][2] * j[2][0]) +
                   j[0][2] * (j[1][0] * j[2][1] - j[1][1] * j[2][0]);
  return d3 < 0.0f ? -d3 : d3;
}

} // namespace mri::detail::mcir
