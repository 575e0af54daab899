// The CPU NUFFT plan (nufft_plan.hpp; the maths and conventions: mri/nufft.hpp).
//
// Index conventions. The oversampled grid has G_a points per axis, periodic; grid index j
// holds the point j (mod G). A sample at k (cycles/FOV of an n-voxel axis) sits at
// t = k G / n grid points; its window is the W points j0 .. j0 + W - 1, j0 = ceil(t - W/2),
// with weights kernel(j - t). The adjoint's inverse FFT (FFTW_BACKWARD, exp(+i)) of that grid
// at voxel coordinate x is sum_m c_m exp(+i 2 pi t_m x / G) Phi(x / G) = sum_m c_m
// exp(+i 2 pi k_m x / n) Phi(x / G), read at index x mod G and divided by Phi (deapodization);
// the forward is the same steps transposed (FFTW_FORWARD, exp(-i)). No fftshift is needed.
#include "mri/nufft.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "fft/fftw_adapter.hpp"
#include "fft/grid_fft.hpp"
#include "gridding_cpu.hpp"
#include "platform/huge_pages.hpp"
#include "mri/error.hpp"
#include "nufft_plan.hpp"
#include "mri_backend/tuning.hpp"

namespace mri {
namespace detail {
namespace {

using i64 = std::int64_t;

// Smallest even 2^a 3^b 5^c >= n (FFTW's fast sizes).
i64 fft_size(i64 n) {
  for (i64 m = std::max<i64>(2, n + (n & 1));; m += 2) {
    i64 r = m;
    for (const i64 p : {2, 3, 5})
      while (r % p == 0) r /= p;
    if (r == 1) return m;
  }
}

// Largest divisor of g not above `target`.
i64 tile_size(i64 g, i64 target) {
  for (i64 t = std::min(g, target); t > 1; --t)
    if (g % t == 0) return t;
  return 1;
}

// Per-thread grids for scatter are used up to this many bytes in total, atomics beyond.
constexpr std::size_t kMaxPrivateGridBytes = tuning::Cpu::private_grid_bytes;

// adjoint_coils grids up to this many coils per pass, their oversampled grids within
// kMaxCoilGridBytes: each block reads a sample's cells and weights once for all its coils, so the
// larger the block the less each coil pays, for gather and scatter alike (bench_nufft_cpu
// NUFFT2D_coils; docs/sense.md, "Performance").
constexpr int kCoilBlock = tuning::Cpu::gridding_coils;
static_assert(kCoilBlock <= kMaxGriddingCoils, "the gridding kernels' coil arrays hold kMaxGriddingCoils");
constexpr std::size_t kMaxCoilGridBytes = tuning::Cpu::coil_grid_bytes;

} // namespace

struct NufftPlan::Impl {
  virtual ~Impl() = default;
  // `coils` (1 .. kCoilBlock) coils: coil b's samples at in + b M, its image at out + b N.
  virtual void adjoint(NufftPlan &p, const cfloat *in, int coils, cfloat *out, Gridding g) = 0;
  virtual void forward(NufftPlan &p, const cfloat *in, cfloat *out) = 0;
  virtual void grid_then_interpolate(NufftPlan &p, const cfloat *in, cfloat *out, Gridding g) = 0;
};

template <class T> struct NufftPlan::Typed final : NufftPlan::Impl {
  using C = std::complex<T>;
  std::vector<T> coef, s;
  std::array<std::vector<T>, 3> deapod; // 1 / Phi(x / G) per axis, x = -n/2 .. n/2-1
  C *buffer = nullptr;                  // the oversampled grid (buffer_grids of them: one per coil of a block)
  int buffer_grids = 0;
  std::optional<GridFft<T>> fwd, bwd;
  std::vector<C> sorted;  // samples in sorted order (a coil block: coil fastest)
  std::vector<C> scratch; // scatter's per-thread grids
  GriddingArgs<T> args;

  explicit Typed(NufftPlan &p) {
    const GriddingLayout &L = p.layout_;
    coef.assign(p.poly_.coef.begin(), p.poly_.coef.end());
    reserve_on_huge_pages(s, L.s.size());
    s.assign(L.s.begin(), L.s.end());
    for (int a = 0; a < 3; ++a) {
      const auto d = deapodization(p.kernel_, p.grid_, a, L.g[static_cast<std::size_t>(a)]);
      deapod[static_cast<std::size_t>(a)].assign(d.begin(), d.end());
    }
    try {
      reserve_grids(L, 1);
      fwd.emplace(L.g, FFTW_FORWARD, p.threads_);
      bwd.emplace(L.g, FFTW_BACKWARD, p.threads_);
    } catch (...) {
      release();
      throw;
    }
    resize_on_huge_pages(sorted, L.order.size());
    args.layout = &p.layout_;
    args.degree = p.poly_.degree;
    args.coef = coef.data();
    args.s = s.data();
    args.threads = p.threads_;
  }
  ~Typed() override { release(); }
  void release() {
    fwd.reset();
    bwd.reset();
    free_buffer();
  }
  void free_buffer() {
    if (buffer) Fftw<T>::free(buffer);
    buffer = nullptr;
    buffer_grids = 0;
  }
  // At least `grids` oversampled grids in `buffer` (grown on the first coil block, then kept).
  void reserve_grids(const GriddingLayout &L, int grids) {
    if (buffer_grids >= grids) return;
    free_buffer();
    const auto points = static_cast<std::size_t>(coil_grid_stride(L)) * static_cast<std::size_t>(grids);
    buffer = Fftw<T>::alloc(points);
    if (!buffer) throw Error("NufftOperator: cannot allocate " + std::to_string(grids) + " oversampled grids (" + std::to_string(points) + " points)");
    buffer_grids = grids;
    advise_huge_pages(buffer, points * sizeof(C));
  }

  // Sample order <-> tile order. Walking the samples in their own order keeps one
  // sequential stream per tile on the sorted side (a counting sort's access pattern), which
  // the caches serve far better than gathering in[order[i]] at random.
  // `coils` coils (coil b's samples at in + b M) interleaved, coil fastest, as the gridding reads them.
  void stage(const NufftPlan &p, const cfloat *in, int coils = 1) {
    const i64 m = static_cast<i64>(p.samples());
    if (sorted.size() < static_cast<std::size_t>(m * coils)) sorted.resize(static_cast<std::size_t>(m * coils));
    const std::uint32_t *pos = p.layout_.position.data();
    C *dst = sorted.data();
#pragma omp parallel for num_threads(p.threads_) schedule(static)
    for (i64 i = 0; i < m; ++i)
      for (int b = 0; b < coils; ++b) dst[static_cast<i64>(pos[i]) * coils + b] = C(in[b * m + i]);
  }
  void unstage(const NufftPlan &p, cfloat *out) const {
    const i64 m = static_cast<i64>(p.samples());
    const std::uint32_t *pos = p.layout_.position.data();
    const C *src = sorted.data();
#pragma omp parallel for num_threads(p.threads_) schedule(static)
    for (i64 i = 0; i < m; ++i) {
      const C v = src[pos[i]];
      out[i] = cfloat(static_cast<float>(v.real()), static_cast<float>(v.imag()));
    }
  }
  void grid(NufftPlan &p, Gridding g, int coils = 1) {
    reserve_grids(p.layout_, coils);
    if (g == Gridding::Scatter) {
      grid_scatter<T>(args, sorted.data(), coils, buffer, scratch, kMaxPrivateGridBytes);
    } else {
      p.ensure_gather_lists();
      grid_gather<T>(args, sorted.data(), coils, buffer);
    }
  }

  // Voxel (ix, iy, iz) <-> oversampled index of its coordinate mod G.
  template <class F> void for_each_voxel(const NufftPlan &p, F &&f) const {
    const Grid &n = p.grid_;
    const auto &g = p.layout_.g;
    const i64 nz = n.nz(), ny = n.ny(), nx = n.nx();
#pragma omp parallel for collapse(2) num_threads(p.threads_) schedule(static)
    for (i64 iz = 0; iz < nz; ++iz)
      for (i64 iy = 0; iy < ny; ++iy) {
        const i64 cz = n.coordinate(2, iz), cy = n.coordinate(1, iy);
        const i64 jz = cz < 0 ? cz + g[2] : cz, jy = cy < 0 ? cy + g[1] : cy;
        const T wzy = deapod[2][static_cast<std::size_t>(iz)] * deapod[1][static_cast<std::size_t>(iy)];
        const i64 row = (jz * g[1] + jy) * g[0];
        const i64 vrow = (iz * ny + iy) * nx;
        for (i64 ix = 0; ix < nx; ++ix) {
          const i64 cx = n.coordinate(0, ix);
          const i64 jx = cx < 0 ? cx + g[0] : cx;
          f(vrow + ix, row + jx, wzy * deapod[0][static_cast<std::size_t>(ix)]);
        }
      }
  }

  // The coils share the staging and the gridding pass; the FFT and deapodization go per coil
  // (GridFft already runs each axis as batches of contiguous lines, so one plan over the block's
  // grids would transform the same lines).
  void adjoint(NufftPlan &p, const cfloat *in, int coils, cfloat *out, Gridding g) override {
    stage(p, in, coils);
    grid(p, g, coils);
    const i64 stride = coil_grid_stride(p.layout_), voxels = p.grid_.voxels();
    for (int b = 0; b < coils; ++b) {
      C *grid_b = buffer + b * stride;
      cfloat *image = out + b * voxels;
      bwd->execute_pruned(grid_b, GridFft<T>::centred(p.grid_.extents()), GridFft<T>::Pruning::OnlyImageRead);
      for_each_voxel(p, [&](i64 v, i64 j, T w) {
        const C z = grid_b[j] * w;
        image[v] = cfloat(static_cast<float>(z.real()), static_cast<float>(z.imag()));
      });
    }
  }

  void forward(NufftPlan &p, const cfloat *in, cfloat *out) override {
    const i64 points = p.layout_.grid_points();
#pragma omp parallel for num_threads(p.threads_) schedule(static)
    for (i64 i = 0; i < points; ++i) buffer[i] = C{};
    for_each_voxel(p, [&](i64 v, i64 j, T w) { buffer[j] = C(in[v]) * w; });
    fwd->execute_pruned(buffer, GridFft<T>::centred(p.grid_.extents()), GridFft<T>::Pruning::ZeroOutside);
    interpolate<T>(args, buffer, sorted.data());
    unstage(p, out);
  }

  void grid_then_interpolate(NufftPlan &p, const cfloat *in, cfloat *out, Gridding g) override {
    stage(p, in);
    grid(p, g);
    interpolate<T>(args, buffer, sorted.data());
    unstage(p, out);
  }
};

NufftChoice choose_nufft(const Grid &grid, const NufftOptions &options) {
  NufftChoice c;
  c.kernel = KaiserBessel::for_tolerance(options.tolerance, grid.dims());
  if (options.width != 0 || options.oversampling != 0)
    c.kernel = KaiserBessel::make(options.width != 0 ? options.width : c.kernel.width,
                                  options.oversampling != 0 ? options.oversampling : 2.0);
  const int W = c.kernel.width;
  for (int a = 0; a < 3; ++a) {
    const auto A = static_cast<std::size_t>(a);
    c.g[A] = a == 2 && grid.dims() == 2
                 ? 1
                 : fft_size(std::max<i64>(static_cast<i64>(std::ceil(c.kernel.oversampling * static_cast<double>(grid.extent(a)))), 2 * W));
  }
  // Kernel polynomial to the accuracy for_tolerance's error estimate assumes.
  c.poly = fit_kernel(c.kernel, c.kernel.fit_accuracy(options.tolerance, grid.dims()));
  return c;
}

std::vector<double> deapodization(const KaiserBessel &kernel, const Grid &grid, int axis, i64 g) {
  std::vector<double> d(static_cast<std::size_t>(grid.extent(axis)), 1.0);
  if (g == 1) return d;
  for (i64 i = 0; i < grid.extent(axis); ++i)
    d[static_cast<std::size_t>(i)] = 1.0 / kernel.fourier(static_cast<double>(grid.coordinate(axis, i)) / static_cast<double>(g));
  return d;
}

NufftPlan::NufftPlan(const Trajectory &trajectory, const Grid &grid, const NufftOptions &options)
    : grid_(grid) {
  if (trajectory.empty()) invalid_argument("trajectory.size()", 0, "needs at least one sample");
  trajectory.check_within(grid);
  if (trajectory.size() > 0xFFFFFFFFu) invalid_argument("trajectory.size()", trajectory.size(), "must be < 2^32");
  const NufftChoice choice = choose_nufft(grid, options);
  kernel_ = choice.kernel;
  poly_ = choice.poly;
  threads_ = options.threads > 0 ? options.threads : omp_get_max_threads();
  value_bytes_ = options.precision == Precision::Float64 ? sizeof(double) : sizeof(float);
  const int W = kernel_.width;
  const int dims = grid.dims();

  // Oversampled grid and tiles: 64 x 32 in 2D (the x-run feeds the vector unit), 16^3 in 3D.
  GriddingLayout &L = layout_;
  L.dims = dims;
  L.width = W;
  for (int a = 0; a < 3; ++a) {
    const auto A = static_cast<std::size_t>(a);
    L.g[A] = choice.g[A];
    L.tile[A] = L.g[A] == 1 ? 1 : tile_size(L.g[A], dims == 2 ? (a == 0 ? 64 : 32) : 16);
    L.tiles[A] = L.g[A] / L.tile[A];
  }
  oversampled_ = Grid(L.g[0], L.g[1], L.g[2]);

  // Each sample's window along axis a: its first grid point j (wrapped into [0, g_a)) and the
  // kernel's argument offset s = 2z - 1 (z in [0, 1): the first point's distance past the left edge).
  const auto window = [&](const KPoint &k, int a, i64 &j, double &sa) {
    const auto A = static_cast<std::size_t>(a);
    const double kc = a == 0 ? k.kx : (a == 1 ? k.ky : k.kz);
    const double left = kc * static_cast<double>(L.g[A]) / static_cast<double>(grid.extent(a)) - W / 2.0;
    const double first = std::ceil(left);
    double z = first - left; // in [0, 1)
    if (z >= 1.0) z = 0.0;   // guard against rounding
    j = static_cast<i64>(first) % L.g[A];
    if (j < 0) j += L.g[A];
    sa = 2.0 * z - 1.0;
  };
  // The tile of each sample's first window point, then the samples sorted by tile (counting
  // sort, stable: original order within a tile). The big arrays go on huge pages: their first
  // touch is most of a plan's cost where page faults are slow (lib/platform/huge_pages.hpp).
  const i64 m_count = static_cast<i64>(trajectory.size());
  const auto m_size = static_cast<std::size_t>(m_count);
  std::vector<std::uint32_t> key;
  resize_on_huge_pages(key, m_size);
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (i64 m = 0; m < m_count; ++m) {
    i64 tile_index = 0, j = 0;
    double unused = 0;
    for (int a = dims - 1; a >= 0; --a) {
      window(trajectory[static_cast<std::size_t>(m)], a, j, unused);
      tile_index = tile_index * L.tiles[static_cast<std::size_t>(a)] + j / L.tile[static_cast<std::size_t>(a)];
    }
    key[static_cast<std::size_t>(m)] = static_cast<std::uint32_t>(tile_index);
  }
  const i64 tiles = L.tiles[0] * L.tiles[1] * L.tiles[2];
  std::vector<i64> start(static_cast<std::size_t>(tiles + 1), 0);
  for (i64 m = 0; m < m_count; ++m) ++start[key[static_cast<std::size_t>(m)] + 1];
  for (i64 t = 0; t < tiles; ++t) start[static_cast<std::size_t>(t + 1)] += start[static_cast<std::size_t>(t)];
  resize_on_huge_pages(L.order, m_size);
  for (i64 m = 0; m < m_count; ++m) L.order[static_cast<std::size_t>(start[key[static_cast<std::size_t>(m)]]++)] = static_cast<std::uint32_t>(m);
  resize_on_huge_pages(L.position, m_size);
  resize_on_huge_pages(L.j0, 3 * m_size);
  resize_on_huge_pages(L.s, 3 * m_size);
  // Windows in sorted order (computed again: cheaper than storing and permuting them).
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (i64 i = 0; i < m_count; ++i) {
    const std::uint32_t m = L.order[static_cast<std::size_t>(i)];
    L.position[m] = static_cast<std::uint32_t>(i);
    for (int a = 0; a < 3; ++a) {
      i64 j = 0;
      double sa = 0;
      if (a < dims) window(trajectory[m], a, j, sa);
      L.j0[3 * static_cast<std::size_t>(i) + static_cast<std::size_t>(a)] = static_cast<std::int32_t>(j);
      L.s[3 * static_cast<std::size_t>(i) + static_cast<std::size_t>(a)] = sa;
    }
  }

  if (options.precision == Precision::Float64)
    impl_ = std::make_unique<Typed<double>>(*this);
  else
    impl_ = std::make_unique<Typed<float>>(*this);
  if (options.gridding != Gridding::Scatter) ensure_gather_lists();
}

NufftPlan::~NufftPlan() = default;

// The gather lists: sample i (sorted order) goes to every tile its window reaches, with its
// window start relative to that tile's origin. Walking the window's tiles along an axis in
// unwrapped coordinates u = floor(j / T) gives each (tile, offset) once, also when the window
// wraps around a grid of a single tile (then the same tile appears with two offsets).
void NufftPlan::ensure_gather_lists() {
  GriddingLayout &L = layout_;
  if (!L.offsets.empty()) return;
  const i64 m_count = static_cast<i64>(L.order.size());
  const i64 tiles = L.tiles[0] * L.tiles[1] * L.tiles[2];
  const int W = L.width;
  struct Span {
    // A window spans at most (W - 1) / T + 2 <= 9 tiles per axis (W <= 16, T >= 2).
    i64 tile[3][KaiserBessel::kMaxWidth + 1];
    i64 d[3][KaiserBessel::kMaxWidth + 1];
    int count[3];
  };
  auto spans = [&](i64 i, Span &sp) {
    for (int a = 0; a < 3; ++a) {
      const auto A = static_cast<std::size_t>(a);
      sp.count[a] = 0;
      if (a == 2 && L.dims == 2) {
        sp.tile[a][0] = 0;
        sp.d[a][0] = 0;
        sp.count[a] = 1;
        continue;
      }
      const i64 j = L.j0[static_cast<std::size_t>(3 * i + a)];
      for (i64 u = j / L.tile[A]; u <= (j + W - 1) / L.tile[A]; ++u) {
        sp.tile[a][sp.count[a]] = u % L.tiles[A];
        sp.d[a][sp.count[a]] = j - u * L.tile[A];
        ++sp.count[a];
      }
    }
  };
  auto tile_of = [&](const Span &sp, int x, int y, int z) {
    return (sp.tile[2][z] * L.tiles[1] + sp.tile[1][y]) * L.tiles[0] + sp.tile[0][x];
  };
  L.offsets.assign(static_cast<std::size_t>(tiles + 1), 0);
  Span sp;
  for (i64 i = 0; i < m_count; ++i) {
    spans(i, sp);
    for (int z = 0; z < sp.count[2]; ++z)
      for (int y = 0; y < sp.count[1]; ++y)
        for (int x = 0; x < sp.count[0]; ++x) ++L.offsets[static_cast<std::size_t>(tile_of(sp, x, y, z) + 1)];
  }
  for (i64 t = 0; t < tiles; ++t) L.offsets[static_cast<std::size_t>(t + 1)] += L.offsets[static_cast<std::size_t>(t)];
  resize_on_huge_pages(L.entries, static_cast<std::size_t>(L.offsets.back()));
  std::vector<i64> fill(L.offsets.begin(), L.offsets.end() - 1);
  for (i64 i = 0; i < m_count; ++i) {
    spans(i, sp);
    for (int z = 0; z < sp.count[2]; ++z)
      for (int y = 0; y < sp.count[1]; ++y)
        for (int x = 0; x < sp.count[0]; ++x) {
          GriddingLayout::Entry &e = L.entries[static_cast<std::size_t>(fill[static_cast<std::size_t>(tile_of(sp, x, y, z))]++)];
          e.sample = static_cast<std::uint32_t>(i);
          e.d[0] = static_cast<std::int16_t>(sp.d[0][x]);
          e.d[1] = static_cast<std::int16_t>(sp.d[1][y]);
          e.d[2] = static_cast<std::int16_t>(sp.d[2][z]);
        }
  }
}

void NufftPlan::adjoint(const cfloat *samples, cfloat *image, Gridding gridding) { adjoint_coils(samples, 1, image, gridding); }

void NufftPlan::adjoint_coils(const cfloat *in, int coils, cfloat *images, Gridding gridding) {
  const std::lock_guard lock(run_mutex_);
  const Gridding g = gridding == Gridding::Scatter ? Gridding::Scatter : Gridding::Gather;
  const auto m = static_cast<std::ptrdiff_t>(samples()), n = static_cast<std::ptrdiff_t>(grid_.voxels());
  const int block = std::min(coils, coil_block(g));
  for (int c0 = 0; c0 < coils; c0 += block)
    impl_->adjoint(*this, in + c0 * m, std::min(block, coils - c0), images + c0 * n, g);
}

int NufftPlan::coil_block(Gridding gridding) const {
  // kCoilBlock, fewer where the block's grids would pass kMaxCoilGridBytes; with scatter also
  // where the per-thread grids of the block would pass kMaxPrivateGridBytes when one coil's do
  // not (the atomic fallback is neither deterministic nor equal to one coil at a time).
  const std::size_t grid_bytes = static_cast<std::size_t>(coil_grid_stride(layout_)) * 2 * value_bytes_;
  std::size_t fit = kMaxCoilGridBytes / grid_bytes;
  const std::size_t private_grid_bytes = static_cast<std::size_t>(threads_ - 1) * grid_bytes;
  if (gridding == Gridding::Scatter && private_grid_bytes > 0 && private_grid_bytes <= kMaxPrivateGridBytes)
    fit = std::min(fit, kMaxPrivateGridBytes / private_grid_bytes);
  return static_cast<int>(std::clamp<std::size_t>(fit, 1, static_cast<std::size_t>(kCoilBlock)));
}
void NufftPlan::forward(const cfloat *image, cfloat *samples) {
  const std::lock_guard lock(run_mutex_);
  impl_->forward(*this, image, samples);
}
void NufftPlan::grid_then_interpolate(const cfloat *in, cfloat *out, Gridding gridding) {
  const std::lock_guard lock(run_mutex_);
  impl_->grid_then_interpolate(*this, in, out, gridding == Gridding::Scatter ? Gridding::Scatter : Gridding::Gather);
}

} // namespace detail
} // namespace mri
