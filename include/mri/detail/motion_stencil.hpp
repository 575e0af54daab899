#pragma once
// The motion estimator's per-voxel definitions (Bruhn et al.'s combined local-global optical flow
// with the volume-conserving term of the GPU motion paper: mri/motion.hpp; docs/architecture.md,
// Sources), compiled by the host compiler (lib/motion/, float and double) and by nvcc
// (cuda/motion/motion_*.cu): one definition of each formula, not a copy per backend or per
// precision. The backends differ only in how they load neighbours (the CUDA memory policies) and
// how they loop.
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define MRI_HOST_DEVICE __host__ __device__
#else
#define MRI_HOST_DEVICE
#endif

namespace mri::detail::motion {

// Channels of the motion tensor J = K_rho * (g g^T), g = (Ix, Iy, Iz, It): the 10 unique
// products. After fold_warp_offset, channels kXT, kYT, kZT hold j - J3 w0 (see there).
enum Channel : int { kXX, kXY, kXZ, kXT, kYY, kYZ, kYT, kZZ, kZT, kTT, kChannels };

// Clamp-to-edge trilinear interpolation of `f` (extent n, x fastest) at array position p.
template <class T, class Index>
MRI_HOST_DEVICE inline T trilinear(const T *f, Index nx, Index ny, Index nz, T px, T py, T pz) {
  const T p[3] = {px, py, pz};
  const Index n[3] = {nx, ny, nz};
  Index i0[3], i1[3];
  T t[3];
  for (int a = 0; a < 3; ++a) {
    T q = p[a] < T(0) ? T(0) : p[a];
    q = q > T(n[a] - 1) ? T(n[a] - 1) : q;
    i0[a] = static_cast<Index>(q); // q >= 0: truncation is floor
    i1[a] = i0[a] + 1 < n[a] ? i0[a] + 1 : i0[a];
    t[a] = q - T(i0[a]);
  }
  const auto at = [&](Index x, Index y, Index z) { return f[x + nx * (y + ny * z)]; };
  const T c00 =
      at(i0[0], i0[1], i0[2]) + t[0] * (at(i1[0], i0[1], i0[2]) - at(i0[0], i0[1], i0[2]));
  const T c10 =
      at(i0[0], i1[1], i0[2]) + t[0] * (at(i1[0], i1[1], i0[2]) - at(i0[0], i1[1], i0[2]));
  const T c01 =
      at(i0[0], i0[1], i1[2]) + t[0] * (at(i1[0], i0[1], i1[2]) - at(i0[0], i0[1], i1[2]));
  const T c11 =
      at(i0[0], i1[1], i1[2]) + t[0] * (at(i1[0], i1[1], i1[2]) - at(i0[0], i1[1], i1[2]));
  const T c0 = c00 + t[1] * (c10 - c00);
  const T c1 = c01 + t[1] * (c11 - c01);
  return c0 + t[2] * (c1 - c0);
}

// Position on a grid of extent `from` of voxel i of a grid of extent `to` covering the same field
// of view (voxel centres aligned: odd and non-power-of-two pyramids need no special case).
template <class T, class Index>
MRI_HOST_DEVICE inline T resample_position(Index i, Index to, Index from) {
  return (T(i) + T(0.5)) * T(from) / T(to) - T(0.5);
}

// Spatial derivative along one axis at position i of n (the GPU motion paper's section 4.1: zero
// at the border).
// forward: f[i+1] - f[i]; central: (f[i+1] - f[i-1]) / 2.
template <class T, class Index>
MRI_HOST_DEVICE inline T derivative(const T *f, Index v, Index stride, Index i, Index n,
                                    bool central) {
  if (central)
    return i > 0 && i + 1 < n ? T(0.5) * (f[v + stride] - f[v - stride]) : T(0);
  return i + 1 < n ? f[v + stride] - f[v] : T(0);
}

// The 10 products of g = (Ix, Iy, Iz, It) in Channel order.
template <class T>
MRI_HOST_DEVICE inline void tensor_products(T ix, T iy, T iz, T it, T (&j)[kChannels]) {
  j[kXX] = ix * ix, j[kXY] = ix * iy, j[kXZ] = ix * iz, j[kXT] = ix * it;
  j[kYY] = iy * iy, j[kYZ] = iy * iz, j[kYT] = iy * it;
  j[kZZ] = iz * iz, j[kZT] = iz * it, j[kTT] = it * it;
}

// Each warp linearises around the field w0 it starts from, so the data term is
// (w - w0, 1)^T J (w - w0, 1) in the total field w; its gradient is J3 w + (j - J3 w0), j = J's
// time column. Folding w0 into j lets the solver work on the total field (the smoothness and
// divergence terms act on the total field: the GPU motion paper's repeated warping, section 3.2).
template <class T> MRI_HOST_DEVICE inline void fold_warp_offset(T (&j)[kChannels], T u, T v, T w) {
  j[kXT] -= j[kXX] * u + j[kXY] * v + j[kXZ] * w;
  j[kYT] -= j[kXY] * u + j[kYY] * v + j[kYZ] * w;
  j[kZT] -= j[kXZ] * u + j[kYZ] * v + j[kZZ] * w;
}

// The Charbonnier data term's lagged-diffusivity weight psi'(e) = 1 / sqrt(1 + e / eps^2)
// (mri/motion.hpp, MotionDataTerm) at a voxel, e = (d, 1)^T J (d, 1) the linearised residual of
// the displacement d = w - w0 from the warp's start, J the unfolded tensor (all 10 channels,
// kTT = K_rho * It^2 included). e >= 0 in exact arithmetic (J is a Gaussian sum of outer
// products); rounding below zero is clamped.
template <class T>
MRI_HOST_DEVICE inline T charbonnier_weight(const T (&j)[kChannels], T du, T dv, T dw,
                                            T inv_eps2) {
  T e = j[kXX] * du * du + j[kYY] * dv * dv + j[kZZ] * dw * dw +
        T(2) * (j[kXY] * du * dv + j[kXZ] * du * dw + j[kYZ] * dv * dw) +
        T(2) * (j[kXT] * du + j[kYT] * dv + j[kZT] * dw) + j[kTT];
  e = e > T(0) ? e : T(0);
  using std::sqrt; // float and double overloads, host and device
  return T(1) / sqrt(T(1) + e * inv_eps2);
}

// A voxel's array indices and the volume's extents (Index: int64 on the CPU; int on the GPU,
// where 64-bit index arithmetic costs registers the memory-bound sweep needs for loads in flight).
template <class Index> struct VoxelPosition {
  Index pos[3];
  Index extent[3];
};

// The colour of a voxel in the SOR's multicolour ordering. Without the divergence term the stencil
// is the 6-neighbourhood: red-black (2 colours, (x + y + z) mod 2). The divergence term also
// couples each voxel to the diagonal neighbours q + e_a - e_c, which red-black puts in the voxel's
// own colour; (x + 2y + 3z) mod 4 gives every offset of the stencil (+-1, +-2, +-3, mod 4) another
// colour, so each colour pass is an exact block Gauss-Seidel step, in place and race-free.
MRI_HOST_DEVICE inline int voxel_colour(std::int64_t x, std::int64_t y, std::int64_t z,
                                        int colours) {
  return colours == 2 ? int((x + y + z) & 1) : int((x + 2 * y + 3 * z) & 3);
}
inline int sor_colours(double gamma) { return gamma > 0 ? 4 : 2; }

// One point-coupled update of the field at a voxel (the GPU motion paper's eq. 6 with the
// divergence term).
// The gradient of E/2 with respect to w(q) is
//   r = J3 w + j + alpha sum_{n in N(q)} (w(q) - w(n)) + gamma (lo_c d(q - e_c) - hi_c d(q))_c,
// with d(p) = sum_a [p + e_a inside] (w_a(p + e_a) - w_a(p)) the forward-difference divergence
// (zero across the border, so the energy needs no boundary condition) and lo_c / hi_c whether the
// neighbour q -/+ e_c exists. The update is w <- w - omega M^-1 r with a 3x3 block M:
//   SOR:    the voxel's exact block, M = J3 + alpha |N| I + gamma (diag(lo) + hi hi^T): block
//           Gauss-Seidel, convergent for 0 < omega < 2 (the paper's eq. 9 solves one component at a
//           time; the block keeps it convergent where J3's off-diagonal products dominate);
//   Jacobi: M = J3 + (alpha |N| + 6 gamma) I, which dominates half the operator (2M - A is
//           diagonally dominant: a Laplacian row sums to 2|N| alpha, a grad div row to <= 12
//           gamma), so the paper's simultaneous update converges; with the exact block the
//           checkerboard modes of grad div grow (eigenvalue 12 gamma against a block eigenvalue of
//           4 gamma).
// load(c, dx, dy, dz): component c at q + (dx, dy, dz); only called for offsets inside the volume.
// j: channels kXX..kZT of the folded tensor at q. Interior: the caller knows q has all 26
// neighbours, so the border tests fold away at compile time (the GPU sweep's interior blocks).
// The voxel's values, its gradient r of E/2 (above) and its neighbourhood: what clg_update and the
// Euler-Lagrange residual -r (the multigrid's, lib/motion/multigrid.cpp) are computed from.
template <class T> struct ClgGradient {
  T w0[3];
  T r[3];
  bool lo[3], hi[3];
  int neighbours;
};
template <bool Interior = false, class T, class Index, class Load>
MRI_HOST_DEVICE inline ClgGradient<T> clg_gradient(const T *j, const Load &load,
                                                   const VoxelPosition<Index> &q, T alpha,
                                                   T gamma) {
  ClgGradient<T> g;
  bool(&lo)[3] = g.lo;
  bool(&hi)[3] = g.hi;
  for (int a = 0; a < 3; ++a) {
    lo[a] = Interior || q.pos[a] > 0;
    hi[a] = Interior || q.pos[a] + 1 < q.extent[a];
  }
  T(&w0)[3] = g.w0;
  for (int c = 0; c < 3; ++c)
    w0[c] = load(c, 0, 0, 0);
  const auto nb = [&](int c, int a, int s) { // component c at q + s e_a
    return load(c, a == 0 ? s : 0, a == 1 ? s : 0, a == 2 ? s : 0);
  };
  T lap[3] = {0, 0, 0};
  int neighbours = 0;
  for (int a = 0; a < 3; ++a) {
    neighbours += int(lo[a]) + int(hi[a]);
    for (int c = 0; c < 3; ++c) {
      if (lo[a])
        lap[c] += w0[c] - nb(c, a, -1);
      if (hi[a])
        lap[c] += w0[c] - nb(c, a, +1);
    }
  }
  g.neighbours = neighbours;
  T div_q = 0; // d(q)
  for (int a = 0; a < 3; ++a)
    if (hi[a])
      div_q += nb(a, a, +1) - w0[a];
  T(&r)[3] = g.r;
  r[0] = j[kXX] * w0[0] + j[kXY] * w0[1] + j[kXZ] * w0[2] + j[kXT];
  r[1] = j[kXY] * w0[0] + j[kYY] * w0[1] + j[kYZ] * w0[2] + j[kYT];
  r[2] = j[kXZ] * w0[0] + j[kYZ] * w0[1] + j[kZZ] * w0[2] + j[kZT];
  for (int c = 0; c < 3; ++c) {
    T div_back = 0; // d(q - e_c): its forward differences start at q - e_c
    if (lo[c])
      for (int a = 0; a < 3; ++a) {
        if (a != c && !hi[a])
          continue; // (q - e_c) + e_a outside: that difference is zero
        const int dx = (a == 0) - (c == 0), dy = (a == 1) - (c == 1), dz = (a == 2) - (c == 2);
        div_back += load(a, dx, dy, dz) - nb(a, c, -1);
      }
    r[c] += alpha * lap[c] + gamma * ((lo[c] ? div_back : T(0)) - (hi[c] ? div_q : T(0)));
  }
  return g;
}

template <bool Interior = false, class T, class Index, class Load>
MRI_HOST_DEVICE inline void clg_update(const T *j, const Load &load, const VoxelPosition<Index> &q,
                                       T alpha, T gamma, T omega, bool jacobi, T (&out)[3]) {
  const ClgGradient<T> g = clg_gradient<Interior>(j, load, q, alpha, gamma);
  const T(&w0)[3] = g.w0;
  const T(&r)[3] = g.r;
  const bool(&lo)[3] = g.lo;
  const bool(&hi)[3] = g.hi;
  const int neighbours = g.neighbours;
  const T d = alpha * T(neighbours) + (jacobi ? T(6) * gamma : T(0));
  T m[3][3] = {
      {j[kXX] + d, j[kXY], j[kXZ]}, {j[kXY], j[kYY] + d, j[kYZ]}, {j[kXZ], j[kYZ], j[kZZ] + d}};
  if (!jacobi)
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        m[a][b] += gamma * (T(a == b && lo[a]) + T(hi[a] && hi[b]));
  // M^-1 r by the adjugate: M is symmetric positive definite (alpha > 0 or J3 > 0).
  const T c00 = m[1][1] * m[2][2] - m[1][2] * m[1][2], c01 = m[0][2] * m[1][2] - m[0][1] * m[2][2],
          c02 = m[0][1] * m[1][2] - m[0][2] * m[1][1], c11 = m[0][0] * m[2][2] - m[0][2] * m[0][2],
          c12 = m[0][1] * m[0][2] - m[0][0] * m[1][2], c22 = m[0][0] * m[1][1] - m[0][1] * m[0][1];
  const T det = m[0][0] * c00 + m[0][1] * c01 + m[0][2] * c02;
  const T s = det > T(0) ? omega / det : T(0); // det == 0 only without data and smoothness
  out[0] = w0[0] - s * (c00 * r[0] + c01 * r[1] + c02 * r[2]);
  out[1] = w0[1] - s * (c01 * r[0] + c11 * r[1] + c12 * r[2]);
  out[2] = w0[2] - s * (c02 * r[0] + c12 * r[1] + c22 * r[2]);
}

} // namespace mri::detail::motion
