// SparseOps<Image>: the sparse terms' transforms and proximal maps on host images, each sample
// computed by the definitions of mri/detail/sparse_stencil.hpp that the CUDA backend shares.
// Loops are OpenMP-parallel over disjoint outputs; the sums of norms are reduced per fixed chunk
// of voxels, then over the chunks in order, so their value does not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "mri/detail/sparse_stencil.hpp"
#include "mri/error.hpp"
#include "mri/sparse.hpp"

namespace mri {
namespace {

// Lines along y and z are gathered this many x columns at a time: contiguous reads of a strided
// axis, and as many lines transformed per gather.
constexpr std::int64_t kColumnChunk = 16;
// Voxels per partial sum of the norm reductions.
constexpr std::int64_t kReductionChunk = 4096;

std::int64_t axis_stride(const Grid &grid, int axis) {
  return axis == 0 ? 1 : axis == 1 ? grid.nx() : grid.nx() * grid.ny();
}

void ensure_grid(Image &v, const Grid &grid) {
  if (v.grid() != grid) v = Image(grid);
}

void require_grid(const Image &v, const Grid &grid, const char *name) {
  if (v.grid() != grid)
    detail::invalid_argument(name, v.size(), "the image is not on the grid of the operation");
}

// The lines along `axis` inside the box [0, box): task t is a group of `width` adjacent lines
// starting at voxel `base` (width > 1 only across x, for axes y and z).
struct LineGroup {
  std::int64_t base;
  std::int64_t width;
};

struct LineGroups {
  const Grid &grid;
  int axis;
  std::array<std::int64_t, 3> box;

  std::int64_t chunks_x() const { return axis == 0 ? box[0] : (box[0] + kColumnChunk - 1) / kColumnChunk; }
  std::int64_t count() const {
    return axis == 0 ? box[1] * box[2] : chunks_x() * (axis == 1 ? box[2] : box[1]);
  }
  LineGroup at(std::int64_t t) const {
    if (axis == 0) return {grid.index(0, t % box[1], t / box[1]), 1};
    const std::int64_t cx = t % chunks_x(), other = t / chunks_x(), x0 = cx * kColumnChunk;
    const std::int64_t base = axis == 1 ? grid.index(x0, 0, other) : grid.index(x0, other, 0);
    return {base, std::min(kColumnChunk, box[0] - x0)};
  }
};

// One level along `axis` on every line of the box, in place: each group of lines is gathered into
// a buffer (line sample s of column c at s * width + c) and the level's samples are written back
// from it by `sample` (wavelet_forward_sample or wavelet_inverse_sample).
template <class Sample>
void transform_lines(Image &data, int axis, const std::array<std::int64_t, 3> &box, Sample sample) {
  const Grid &grid = data.grid();
  const LineGroups groups{grid, axis, box};
  const std::int64_t n = box[static_cast<std::size_t>(axis)], stride = axis_stride(grid, axis);
  const std::int64_t tasks = groups.count();
  cfloat *p = data.data();
#pragma omp parallel
  {
    std::vector<cfloat> buffer(static_cast<std::size_t>(n * kColumnChunk));
    const float *line = reinterpret_cast<const float *>(buffer.data());
#pragma omp for schedule(static)
    for (std::int64_t t = 0; t < tasks; ++t) {
      const LineGroup g = groups.at(t);
      for (std::int64_t s = 0; s < n; ++s)
        std::copy_n(p + g.base + s * stride, g.width, buffer.data() + s * g.width);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t c = 0; c < g.width; ++c) {
          float re, im;
          sample(line + 2 * c, g.width, n, i, re, im);
          p[g.base + i * stride + c] = {re, im};
        }
    }
  }
}

// The box of approximation extents at the start of each level: box[l][a] for l <= max_levels.
std::vector<std::array<std::int64_t, 3>> level_boxes(const WaveletLevels &levels) {
  std::vector<std::array<std::int64_t, 3>> boxes{levels.grid.extents()};
  for (int l = 0; l < levels.max_levels(); ++l) {
    std::array<std::int64_t, 3> next = boxes.back();
    for (std::size_t a = 0; a < 3; ++a)
      if (levels.levels[a] > l) next[a] = detail::wavelet_approximation_extent(next[a]);
    boxes.push_back(next);
  }
  return boxes;
}

void copy_into(const Image &from, Image &to) {
  if (&from != &to) std::copy(from.values().begin(), from.values().end(), to.values().begin());
}

// (ix, iy, iz) of voxel v of a grid, advanced one voxel at a time in memory order.
struct VoxelCursor {
  std::array<std::int64_t, 3> n, at;
  VoxelCursor(const Grid &grid, std::int64_t v)
      : n(grid.extents()), at{v % grid.nx(), v / grid.nx() % grid.ny(), v / (grid.nx() * grid.ny())} {}
  void next() {
    if (++at[0] < n[0]) return;
    at[0] = 0;
    if (++at[1] < n[1]) return;
    at[1] = 0;
    ++at[2];
  }
  bool inside(const KeepBox &box) const { return at[0] < box[0] && at[1] < box[1] && at[2] < box[2]; }
};

void check_groups(const Image &z, const Grid &base, int group_size, const KeepBox &keep) {
  if (group_size < 1) detail::invalid_argument("group_size", group_size, "a group holds at least one value");
  if (static_cast<std::int64_t>(z.size()) != base.voxels() * group_size)
    detail::invalid_argument("z.size()", z.size(), "must be group_size * base.voxels()");
  for (std::int64_t k : keep)
    if (k < 0) detail::invalid_argument("keep", k, "a keep box extent is >= 0");
}

// sum over the voxels of `base` outside `keep` of group(v) (a norm), reduced per fixed chunk of
// kReductionChunk voxels and then over the chunks in order: the same value for any team size.
template <class Group> double sum_groups(const Grid &base, const KeepBox &keep, Group group) {
  const std::int64_t voxels = base.voxels();
  const std::int64_t chunks = (voxels + kReductionChunk - 1) / kReductionChunk;
  std::vector<double> partial(static_cast<std::size_t>(chunks), 0.0);
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t begin = c * kReductionChunk, end = std::min(voxels, begin + kReductionChunk);
    VoxelCursor cursor(base, begin);
    double sum = 0;
    for (std::int64_t v = begin; v < end; ++v, cursor.next())
      if (!cursor.inside(keep)) sum += group(v);
    partial[static_cast<std::size_t>(c)] = sum;
  }
  double total = 0;
  for (double s : partial) total += s;
  return total;
}

enum class Direction { Forward, Inverse };

// The (level, axis) passes of a transform: level l acts along each axis with levels[a] > l, on
// every line of the box of level-l approximation extents (samples outside it, the finer detail
// bands, stay). Forward: levels finest first, the axes of a level in x, y, z order; inverse (the
// adjoint, the transform being orthonormal): the same passes in reverse order.
std::vector<std::pair<int, int>> wavelet_passes(const WaveletLevels &levels, Direction direction) {
  std::vector<std::pair<int, int>> passes;
  for (int l = 0; l < levels.max_levels(); ++l)
    for (int a = 0; a < 3; ++a)
      if (levels.levels[static_cast<std::size_t>(a)] > l) passes.emplace_back(l, a);
  if (direction == Direction::Inverse) std::reverse(passes.begin(), passes.end());
  return passes;
}

const detail::WaveletFilter &wavelet_filter(Wavelet w) {
  const int family = static_cast<int>(w);
  if (family < 0 || family >= detail::kWaveletFamilies)
    detail::invalid_argument("wavelet", family, "is not a known wavelet family");
  return detail::kWaveletFilters[family];
}

// A split line keeps at least the filter's taps (wavelet_levels' kWaveletMinSplitExtent rule):
// the stencil's periodised indices wrap once (wrap_once), so a hand-made WaveletLevels that
// splits further would read past its line.
void check_splits(const WaveletLevels &levels, const std::vector<std::array<std::int64_t, 3>> &boxes, int taps) {
  for (int l = 0; l < levels.max_levels(); ++l)
    for (std::size_t a = 0; a < 3; ++a) {
      const std::int64_t n = boxes[static_cast<std::size_t>(l)][a];
      if (levels.levels[a] > l && n - n % 2 < taps)
        detail::invalid_argument("wavelet levels along axis " + std::to_string(a), levels.levels[a],
                                 "more splits than the extent " + std::to_string(levels.grid.extent(static_cast<int>(a))) +
                                     " allows for " + to_string(levels.wavelet));
    }
}

void run_wavelet(const WaveletLevels &levels, const Image &in, Image &out, Direction direction) {
  const detail::WaveletFilter &f = wavelet_filter(levels.wavelet);
  const auto boxes = level_boxes(levels);
  check_splits(levels, boxes, f.taps);
  ensure_grid(out, levels.grid);
  copy_into(in, out);
  for (const auto &[l, a] : wavelet_passes(levels, direction)) {
    const auto &box = boxes[static_cast<std::size_t>(l)];
    if (direction == Direction::Forward)
      transform_lines(out, a, box, [&f](const float *line, std::int64_t stride, std::int64_t n, std::int64_t i,
                                        float &re, float &im) {
        detail::wavelet_forward_sample(line, stride, n, i, f.h, f.taps, re, im);
      });
    else
      transform_lines(out, a, box, [&f](const float *line, std::int64_t stride, std::int64_t n, std::int64_t s,
                                        float &re, float &im) {
        detail::wavelet_inverse_sample(line, stride, n, s, f.h, f.taps, re, im);
      });
  }
}

// The index of voxel (ix, y, z) along `axis`.
std::int64_t position_along(int axis, std::int64_t ix, std::int64_t y, std::int64_t z) {
  return axis == 0 ? ix : axis == 1 ? y : z;
}


// The axes of a stacked difference vector, in block order, with their extents and strides.
struct DifferenceAxes {
  int count = 0;
  std::array<int, 3> axis{};
  std::array<std::int64_t, 3> extent{}, stride{};
  const Grid &grid;

  DifferenceAxes(const Grid &g, unsigned resolved) : grid(g) {
    for (int a = 0; a < 3; ++a)
      if ((resolved >> a & 1u) != 0) {
        axis[static_cast<std::size_t>(count)] = a;
        extent[static_cast<std::size_t>(count)] = g.extent(a);
        stride[static_cast<std::size_t>(count++)] = axis_stride(g, a);
      }
  }
  // f(v, pos) for every voxel v, pos[b] its coordinate along axis b, rows of x in parallel (the
  // coordinates along y and z are fixed for a row: no division per voxel).
  template <class F> void for_each_voxel(F f) const {
    const std::int64_t nx = grid.nx(), ny = grid.ny(), rows = ny * grid.nz();
    const bool along_x = count > 0 && axis[0] == 0;
#pragma omp parallel for schedule(static)
    for (std::int64_t row = 0; row < rows; ++row) {
      std::array<std::int64_t, 3> pos{};
      for (int b = 0; b < count; ++b)
        pos[static_cast<std::size_t>(b)] = position_along(axis[static_cast<std::size_t>(b)], 0, row % ny, row / ny);
      for (std::int64_t ix = 0, v = row * nx; ix < nx; ++ix, ++v) {
        if (along_x) pos[0] = ix;
        f(v, pos.data());
      }
    }
  }
};


// TV along x and y (the stacked vector's blocks 0 and 1), the case of every 2D term: the row
// kernels below make each value by the same float operations in the same order as the generic
// per-voxel stencils (difference_adjoint_add, tv_dual_step_voxel; the same bits), with the
// boundary tests taken per row and at the row's two ends instead of per voxel and axis: 3x less
// time in FISTA-TV's inner iterations on CS-2D (benchmarks/cs).
bool along_x_and_y(const DifferenceAxes &d) { return d.count == 2 && d.axis[0] == 0 && d.axis[1] == 1; }

// x[v] = (D^H g)[v] on one row: g's x block at gx, its y block at gy (both indexed as x).
template <bool Left, bool Right>
inline void adjoint_xy_voxel(const cfloat *gx, const cfloat *gy, std::int64_t v, std::int64_t nx, bool up, bool down,
                             cfloat *out) {
  float re = 0, im = 0;
  if (Left) {
    re += gx[v - 1].real();
    im += gx[v - 1].imag();
  }
  if (Right) {
    re -= gx[v].real();
    im -= gx[v].imag();
  }
  if (up) {
    re += gy[v - nx].real();
    im += gy[v - nx].imag();
  }
  if (down) {
    re -= gy[v].real();
    im -= gy[v].imag();
  }
  out[v] = {re, im};
}

template <bool Up, bool Down>
void adjoint_xy_row(const cfloat *gx, const cfloat *gy, std::int64_t begin, std::int64_t nx, cfloat *out) {
  adjoint_xy_voxel<false, true>(gx, gy, begin, nx, Up, Down, out);
  for (std::int64_t v = begin + 1; v < begin + nx - 1; ++v) adjoint_xy_voxel<true, true>(gx, gy, v, nx, Up, Down, out);
  adjoint_xy_voxel<true, false>(gx, gy, begin + nx - 1, nx, Up, Down, out);
}

void gradient_adjoint_xy(const Grid &grid, const cfloat *g, cfloat *out) {
  const std::int64_t nx = grid.nx(), ny = grid.ny(), rows = ny * grid.nz(), voxels = grid.voxels();
  const cfloat *gx = g, *gy = g + voxels;
#pragma omp parallel for schedule(static)
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int64_t y = row % ny, begin = row * nx;
    const bool up = y >= 1, down = y + 1 < ny;
    if (up && down)
      adjoint_xy_row<true, true>(gx, gy, begin, nx, out);
    else if (up)
      adjoint_xy_row<true, false>(gx, gy, begin, nx, out);
    else if (down)
      adjoint_xy_row<false, true>(gx, gy, begin, nx, out);
    else
      adjoint_xy_row<false, false>(gx, gy, begin, nx, out);
  }
}

// tv_dual_step_voxel at voxel v for the x and y blocks (p and q's block 1 at v + voxels).
struct DualStepXy {
  const cfloat *u;
  cfloat *p, *q;
  std::int64_t nx, voxels;
  float step, radius, momentum;
  bool isotropic;

  template <bool Right, bool Down> void voxel(std::int64_t v) const {
    float wr[2], wi[2];
    float group2 = 0;
    for (int b = 0; b < 2; ++b) {
      const bool inside = b == 0 ? Right : Down;
      const std::int64_t next = v + (b == 0 ? 1 : nx), s = v + b * voxels;
      const float re = inside ? u[next].real() - u[v].real() : 0.0f;
      const float im = inside ? u[next].imag() - u[v].imag() : 0.0f;
      wr[b] = q[s].real() + step * re;
      wi[b] = q[s].imag() + step * im;
      group2 += wr[b] * wr[b] + wi[b] * wi[b];
    }
    for (int b = 0; b < 2; ++b) {
      const float norm2 = isotropic ? group2 : wr[b] * wr[b] + wi[b] * wi[b];
      const float scale = norm2 > radius * radius ? radius / sqrtf(norm2) : 1.0f;
      const std::int64_t s = v + b * voxels;
      const float re = wr[b] * scale, im = wi[b] * scale;
      q[s] = {re + momentum * (re - p[s].real()), im + momentum * (im - p[s].imag())};
      p[s] = {re, im};
    }
  }
#if defined(__SSE2__)
  // voxel<true, Down> at v .. v + 3, the same operations four lanes wide (SSE's square root and
  // division round as the scalar ones: the same bits). GCC does not vectorise voxel() itself
  // (sqrtf sets errno; the values interleave re and im).
  static void load(const cfloat *a, __m128 &re, __m128 &im) {
    const __m128 lo = _mm_loadu_ps(reinterpret_cast<const float *>(a));
    const __m128 hi = _mm_loadu_ps(reinterpret_cast<const float *>(a + 2));
    re = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    im = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  }
  static void store(cfloat *a, __m128 re, __m128 im) {
    _mm_storeu_ps(reinterpret_cast<float *>(a), _mm_unpacklo_ps(re, im));
    _mm_storeu_ps(reinterpret_cast<float *>(a + 2), _mm_unpackhi_ps(re, im));
  }
  template <bool Down> void four_voxels(std::int64_t v) const {
    const __m128 zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f), vstep = _mm_set1_ps(step);
    const __m128 vradius = _mm_set1_ps(radius), radius2 = _mm_set1_ps(radius * radius);
    __m128 ur, ui, nr, ni;
    load(u + v, ur, ui);
    __m128 wr[2], wi[2], norm2[2];
    for (int b = 0; b < 2; ++b) {
      __m128 dr = zero, di = zero;
      if (b == 0 || Down) {
        load(u + v + (b == 0 ? 1 : nx), nr, ni);
        dr = _mm_sub_ps(nr, ur);
        di = _mm_sub_ps(ni, ui);
      }
      __m128 qr, qi;
      load(q + v + b * voxels, qr, qi);
      wr[b] = _mm_add_ps(qr, _mm_mul_ps(vstep, dr));
      wi[b] = _mm_add_ps(qi, _mm_mul_ps(vstep, di));
      norm2[b] = _mm_add_ps(_mm_mul_ps(wr[b], wr[b]), _mm_mul_ps(wi[b], wi[b]));
    }
    if (isotropic) norm2[0] = norm2[1] = _mm_add_ps(_mm_add_ps(zero, norm2[0]), norm2[1]);
    const __m128 vmomentum = _mm_set1_ps(momentum);
    for (int b = 0; b < 2; ++b) {
      const __m128 outside = _mm_cmpgt_ps(norm2[b], radius2);
      const __m128 shrink = _mm_div_ps(vradius, _mm_sqrt_ps(norm2[b]));
      const __m128 scale = _mm_or_ps(_mm_and_ps(outside, shrink), _mm_andnot_ps(outside, one));
      const __m128 re = _mm_mul_ps(wr[b], scale), im = _mm_mul_ps(wi[b], scale);
      __m128 pr, pi;
      load(p + v + b * voxels, pr, pi);
      store(q + v + b * voxels, _mm_add_ps(re, _mm_mul_ps(vmomentum, _mm_sub_ps(re, pr))),
            _mm_add_ps(im, _mm_mul_ps(vmomentum, _mm_sub_ps(im, pi))));
      store(p + v + b * voxels, re, im);
    }
  }
#endif
  template <bool Down> void row(std::int64_t begin) const {
    const std::int64_t end = begin + nx - 1;
    std::int64_t v = begin;
#if defined(__SSE2__)
    for (; v + 4 <= end; v += 4) four_voxels<Down>(v);
#endif
    for (; v < end; ++v) voxel<true, Down>(v);
    voxel<false, Down>(end);
  }
  void run(const Grid &grid) const {
    const std::int64_t ny = grid.ny(), rows = ny * grid.nz();
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      if (r % ny + 1 < ny)
        row<true>(r * nx);
      else
        row<false>(r * nx);
    }
  }
};

} // namespace

Image SparseOps<Image>::make(const Grid &grid, const Image &) { return Image(grid); }

void SparseOps<Image>::wavelet_forward(const WaveletLevels &levels, const Image &x, Image &c) {
  require_grid(x, levels.grid, "x");
  run_wavelet(levels, x, c, Direction::Forward);
}

void SparseOps<Image>::wavelet_inverse(const WaveletLevels &levels, const Image &c, Image &x) {
  require_grid(c, levels.grid, "c");
  run_wavelet(levels, c, x, Direction::Inverse);
}

void SparseOps<Image>::circular_shift(const Image &x, const std::array<std::int64_t, 3> &shift, Image &out) {
  const Grid &grid = x.grid();
  for (int a = 0; a < 3; ++a)
    if (shift[static_cast<std::size_t>(a)] < 0 || shift[static_cast<std::size_t>(a)] >= grid.extent(a))
      detail::invalid_argument("shift", shift[static_cast<std::size_t>(a)], "a shift lies in [0, extent)");
  if (&x == &out) detail::invalid_argument("out", "x", "circular_shift's output must not alias its input");
  ensure_grid(out, grid);
  const std::int64_t nx = grid.nx(), ny = grid.ny(), nz = grid.nz(), sx = shift[0];
  const cfloat *in = x.data();
  cfloat *o = out.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t row = 0; row < ny * nz; ++row) {
    const std::int64_t y = row % ny, z = row / ny;
    const cfloat *from = in + grid.index(0, y, z);
    cfloat *to = o + grid.index(0, (y + shift[1]) % ny, (z + shift[2]) % nz);
    std::copy_n(from, nx - sx, to + sx);
    std::copy_n(from + nx - sx, sx, to);
  }
}


void SparseOps<Image>::gradient_forward(const Grid &grid, unsigned axes, const Image &x, Image &g) {
  require_grid(x, grid, "x");
  if (&x == &g) detail::invalid_argument("g", "x", "the gradient's output must not alias its input");
  axes = resolve_axes(grid, axes);
  ensure_grid(g, stacked_grid(grid, axis_count(axes)));
  const std::int64_t voxels = grid.voxels(), nx = grid.nx(), ny = grid.ny(), rows = ny * grid.nz();
  const float *in = reinterpret_cast<const float *>(x.data());
  std::int64_t block = 0;
  for (int a = 0; a < 3; ++a) {
    if ((axes >> a & 1u) == 0) continue;
    const std::int64_t stride = axis_stride(grid, a), extent = grid.extent(a);
    cfloat *ga = g.data() + block++ * voxels;
#pragma omp parallel for schedule(static)
    for (std::int64_t row = 0; row < rows; ++row)
      for (std::int64_t ix = 0, v = row * nx; ix < nx; ++ix, ++v) {
        float re, im;
        detail::difference_forward_sample(in, v, position_along(a, ix, row % ny, row / ny), extent, stride, re, im);
        ga[v] = {re, im};
      }
  }
}

void SparseOps<Image>::gradient_adjoint(const Grid &grid, unsigned axes, const Image &g, Image &x) {
  axes = resolve_axes(grid, axes);
  require_grid(g, stacked_grid(grid, axis_count(axes)), "g");
  if (&x == &g) detail::invalid_argument("x", "g", "the adjoint's output must not alias its input");
  ensure_grid(x, grid);
  const DifferenceAxes d(grid, axes);
  if (along_x_and_y(d)) return gradient_adjoint_xy(grid, g.data(), x.data());
  const std::int64_t voxels = grid.voxels();
  const float *in = reinterpret_cast<const float *>(g.data());
  cfloat *out = x.data();
  d.for_each_voxel([&](std::int64_t v, const std::int64_t *pos) {
    float re = 0, im = 0;
    for (int b = 0; b < d.count; ++b)
      detail::difference_adjoint_add(in + 2 * b * voxels, v, pos[b], d.extent[static_cast<std::size_t>(b)],
                                     d.stride[static_cast<std::size_t>(b)], re, im);
    out[v] = {re, im};
  });
}

void SparseOps<Image>::tv_dual_step(const Grid &grid, unsigned axes, bool isotropic, const Image &u, double step,
                                    double radius, double momentum, Image &p, Image &q) {
  axes = resolve_axes(grid, axes);
  require_grid(u, grid, "u");
  const Grid stacked = stacked_grid(grid, axis_count(axes));
  require_grid(p, stacked, "p");
  require_grid(q, stacked, "q");
  if (&p == &q) detail::invalid_argument("q", "p", "the dual and its extrapolation must be two vectors");
  if (!(radius >= 0) || !std::isfinite(radius)) detail::invalid_argument("radius", radius, "must be finite and >= 0");
  const DifferenceAxes d(grid, axes);
  if (along_x_and_y(d))
    return DualStepXy{u.data(), p.data(), q.data(), grid.nx(), grid.voxels(), static_cast<float>(step),
                      static_cast<float>(radius), static_cast<float>(momentum), isotropic}
        .run(grid);
  const std::int64_t voxels = grid.voxels();
  const float *in = reinterpret_cast<const float *>(u.data());
  float *pf = reinterpret_cast<float *>(p.data()), *qf = reinterpret_cast<float *>(q.data());
  d.for_each_voxel([&](std::int64_t v, const std::int64_t *pos) {
    detail::tv_dual_step_voxel(in, pf, qf, v, voxels, d.count, pos, d.extent.data(), d.stride.data(), isotropic,
                               static_cast<float>(step), static_cast<float>(radius), static_cast<float>(momentum));
  });
}

double SparseOps<Image>::shrink(Image &z, const Grid &base, int group_size, const KeepBox &keep, double t) {
  check_groups(z, base, group_size, keep);
  if (!(t >= 0) || !std::isfinite(t)) detail::invalid_argument("t", t, "a threshold is finite and >= 0");
  float *p = reinterpret_cast<float *>(z.data());
  const std::int64_t stride = base.voxels();
  return sum_groups(base, keep, [&](std::int64_t v) { return detail::shrink_group(p, v, stride, group_size, t); });
}

double SparseOps<Image>::group_norm_sum(const Image &z, const Grid &base, int group_size, const KeepBox &keep) {
  check_groups(z, base, group_size, keep);
  const float *p = reinterpret_cast<const float *>(z.data());
  const std::int64_t stride = base.voxels();
  return sum_groups(base, keep, [&](std::int64_t v) { return detail::group_norm(p, v, stride, group_size); });
}

} // namespace mri
