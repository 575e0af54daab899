#pragma once
// The sparse terms' transforms and proximal maps on device images, as plain C++ (no CUDA types):
// SparseOps<DeviceImage>, the same table as the host's SparseOps<Image> (mri/sparse.hpp), so that
// the proximal solvers run on either vector type. Every sample is computed by the per-sample
// definitions of mri/detail/sparse_stencil.hpp, the ones the host uses: the two backends differ
// only in float rounding order.
//
// Streams: every operation is enqueued on the stream of its output (or, for the reductions, of
// z); shrink and group_norm_sum synchronise that stream to return their sum. Reductions are
// deterministic: a block count fixed by the size alone, per-block partial sums in double, and the
// blocks' sums added in block order.
#include <array>
#include <cstdint>

#include "mri/grid.hpp"
#include "mri/sparse.hpp"
#include "recon/device_image.hpp"

namespace mri {

template <> struct SparseOps<cuda::DeviceImage> {
  using Vec = cuda::DeviceImage;
  // A vector on `grid` on the stream of `like` (contents unspecified).
  static Vec make(const Grid &grid, const Vec &like);
  // c = Psi x and x = Psi^H c, level by level (see SparseOps<Image>); x and c may be one vector.
  static void wavelet_forward(const WaveletLevels &levels, const Vec &x, Vec &c);
  static void wavelet_inverse(const WaveletLevels &levels, const Vec &c, Vec &x);
  // out[(i + shift) mod n] = x[i] per axis (shift in [0, n)); out must not alias x.
  static void circular_shift(const Vec &x, const std::array<std::int64_t, 3> &shift, Vec &out);
  // g = (D_a x) stacked over the axes of `axes` (resolved); x = sum_a D_a^H g_a.
  static void gradient_forward(const Grid &grid, unsigned axes, const Vec &x, Vec &g);
  static void gradient_adjoint(const Grid &grid, unsigned axes, const Vec &g, Vec &x);
  // One step of TV denoising's dual iteration at every voxel (see SparseOps<Image>), on q's stream.
  static void tv_dual_step(const Grid &grid, unsigned axes, bool isotropic, const Vec &u, double step, double radius,
                           double momentum, Vec &p, Vec &q);
  // Block soft-thresholding of the groups outside `keep`, in place; returns the sum of their
  // norms before the shrink (double accumulation).
  static double shrink(Vec &z, const Grid &base, int group_size, const KeepBox &keep, double t);
  static double group_norm_sum(const Vec &z, const Grid &base, int group_size, const KeepBox &keep);
};

} // namespace mri
