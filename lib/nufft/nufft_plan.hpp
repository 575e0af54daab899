#pragma once
// The CPU NUFFT plan behind mri::NufftOperator (and Pipe-Menon density compensation, which
// uses its gridding and interpolation without the FFT). Internal to libmri.
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "mri/nufft.hpp"

namespace mri::detail {

// The kernel as W polynomials in s = 2z - 1, z in [0, 1) the fractional offset of the first
// window point: value i of the window (offset u = z - W/2 + i) is sum_d coef[d][i] s^d.
// Fitted at Chebyshev nodes to well below the tolerance (KaiserBessel is analytic in u).
struct KernelPolynomial {
  int width = 0;
  int degree = 0;
  std::vector<double> coef; // (degree + 1) x width, row d = coefficient of s^d
  double max_error = 0;     // measured on a dense set, relative to the kernel's peak (1)
};
KernelPolynomial fit_kernel(const KaiserBessel &kernel, double accuracy);

// Tiles and per-sample window positions of a trajectory on the oversampled grid.
struct GriddingLayout {
  int dims = 2;
  int width = 0;
  std::array<std::int64_t, 3> g{1, 1, 1};    // oversampled grid extents (1 on unused axes)
  std::array<std::int64_t, 3> tile{1, 1, 1}; // tile extents (divide g)
  std::array<std::int64_t, 3> tiles{1, 1, 1};
  std::vector<std::uint32_t> order;          // sorted position -> original sample index
  std::vector<std::uint32_t> position;       // original sample index -> sorted position
  std::vector<std::int32_t> j0;              // 3 per sorted sample: first window point, in [0, g)
  std::vector<double> s;                     // 3 per sorted sample: polynomial variable in [-1, 1)
  // Gather lists: samples whose window reaches tile t are entries[offsets[t] .. offsets[t+1]),
  // each the sorted sample position and its window start relative to the tile's origin.
  struct Entry {
    std::uint32_t sample;
    std::int16_t d[3];
  };
  std::vector<std::int64_t> offsets;
  std::vector<Entry> entries;
  std::int64_t grid_points() const { return g[0] * g[1] * g[2]; }
};

// What a plan runs with for a grid and options: the kernel (from the tolerance or the
// override), the oversampled grid extents (1 on the unused axis of 2D) and the polynomial.
struct NufftChoice {
  KaiserBessel kernel;
  std::array<std::int64_t, 3> g{1, 1, 1};
  KernelPolynomial poly;
};
NufftChoice choose_nufft(const Grid &grid, const NufftOptions &options);
// 1 / Phi(x / g) for the voxel coordinates x of one axis (all 1 when g == 1).
std::vector<double> deapodization(const KaiserBessel &kernel, const Grid &grid, int axis, std::int64_t g);

class NufftPlan {
public:
  NufftPlan(const Trajectory &trajectory, const Grid &grid, const NufftOptions &options);
  ~NufftPlan();
  NufftPlan(const NufftPlan &) = delete;
  NufftPlan &operator=(const NufftPlan &) = delete;

  const Grid &grid() const { return grid_; }
  const Grid &oversampled() const { return oversampled_; }
  const KaiserBessel &kernel() const { return kernel_; }
  const KernelPolynomial &polynomial() const { return poly_; }
  const GriddingLayout &layout() const { return layout_; }
  std::size_t samples() const { return layout_.order.size(); }
  int threads() const { return threads_; }

  void adjoint(const cfloat *samples, cfloat *image, Gridding gridding);
  // `coils` coils, coil-major (coil c's M samples at samples + c M, its image at images + c N):
  // a block of coils per gridding pass (coil_block), each sample's kernel weights evaluated once
  // for the block; every image bitwise equal to adjoint() of its coil.
  void adjoint_coils(const cfloat *samples, int coils, cfloat *images, Gridding gridding);
  // The coils adjoint_coils grids per pass with this gridding (Scatter or Gather).
  int coil_block(Gridding gridding) const;
  void forward(const cfloat *image, cfloat *samples);
  // Gridding alone (no FFT, no deapodization): grid(out) = sum_m kernel(j - t_m) in_m on the
  // oversampled grid, then out_m = sum_j kernel(j - t_m) grid_j. The convolution with the
  // kernel's autocorrelation that Pipe-Menon iterates.
  void grid_then_interpolate(const cfloat *in, cfloat *out, Gridding gridding);

  // Builds the gather (RGA) tile lists if not built yet (the constructor does unless the
  // plan was made for scatter only).
  void ensure_gather_lists();

private:
  struct Impl;
  template <class T> struct Typed;
  Grid grid_, oversampled_;
  KaiserBessel kernel_;
  KernelPolynomial poly_;
  GriddingLayout layout_;
  int threads_ = 1;
  std::size_t value_bytes_ = sizeof(float); // of the grid's real values (the precision)
  std::unique_ptr<Impl> impl_;
  // adjoint, forward and grid_then_interpolate write impl_'s buffers (staging, oversampled grid,
  // FFT), and copies of a NufftOperator share one plan: the calls take this lock, so concurrent
  // calls through copies are serialized instead of racing (tests/concurrency).
  std::mutex run_mutex_;
};

} // namespace mri::detail
