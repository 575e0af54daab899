// GridFft: a grid's FFT axis by axis through contiguous line buffers (grid_fft.hpp).
#include "grid_fft.hpp"

#include <algorithm>
#include <mutex>
#include <omp.h>
#include <string>
#include <utility>

#include "fftw_adapter.hpp"
#include "mri/error.hpp"

namespace mri::detail {

namespace {
// Lines per buffer: 16 complex values side by side per copied element (128 B in float) keep the
// strided gathers cache-line sized; 16 lines of 1024 doubles are 256 KB.
constexpr std::int64_t kBlock = 16;

// The distance between consecutive lines of a buffer, in values: the line length rounded up to
// whole 64-byte cache lines, and to an odd number of them. A block's kBlock lines are written
// element by element (the strided gathers); at a stride of a multiple of 4 KB (the doubled grid's
// 512 floats) they all fall in one L1 set, which holds fewer ways than kBlock, and every store
// misses: the gathers and scatters then took longer than the FFTs themselves (perf on the CS-2D
// TV reconstruction, benchmarks/cs). An odd number of cache lines puts the kBlock lines in
// kBlock different sets.
template <class T> std::int64_t line_distance(std::int64_t length) {
  constexpr auto per_line = static_cast<std::int64_t>(64 / sizeof(std::complex<T>));
  std::int64_t cache_lines = (length + per_line - 1) / per_line;
  if (cache_lines % 2 == 0) ++cache_lines;
  return cache_lines * per_line;
}
} // namespace

template <class T> struct GridFft<T>::Axis {
  std::int64_t length = 1; // points along the axis
  std::int64_t stride = 1; // between consecutive points of a line
  std::int64_t distance = 1; // between consecutive lines in the line buffer (line_distance)
  typename Fftw<T>::plan plan = nullptr;
};

template <class T>
GridFft<T>::GridFft(const std::array<std::int64_t, 3> &extents, int sign, int threads)
    : extents_(extents), threads_(std::max(1, threads)), axes_(new Axis[3]) {
  const std::int64_t longest = line_distance<T>(*std::max_element(extents.begin(), extents.end()));
  lines_ = Fftw<T>::alloc(static_cast<std::size_t>(threads_ * kBlock * longest));
  if (!lines_) throw Error("GridFft: cannot allocate " + std::to_string(threads_ * kBlock * longest) + " values");
  std::fill_n(lines_, threads_ * kBlock * longest, std::complex<T>{});
  std::int64_t stride = 1;
  bool planned = true;
  {
    std::lock_guard lock(fftw_planner_mutex());
    for (int a = 0; a < 3; ++a) {
      Axis &axis = axes_[a];
      axis.length = extents[a];
      axis.stride = stride;
      if (extents[a] > 1) {
        axis.distance = line_distance<T>(extents[a]);
        axis.plan = Fftw<T>::make_lines(static_cast<int>(extents[a]), static_cast<int>(kBlock),
                                        static_cast<int>(axis.distance), lines_, sign);
        planned = planned && axis.plan;
      }
      stride *= extents[a];
    }
  }
  if (!planned) {
    release();
    throw Error("GridFft: FFTW could not plan the line transforms");
  }
}

template <class T> GridFft<T>::~GridFft() { release(); }

template <class T> void GridFft<T>::release() {
  std::lock_guard lock(fftw_planner_mutex());
  if (axes_)
    for (int a = 0; a < 3; ++a)
      if (axes_[a].plan) Fftw<T>::destroy(std::exchange(axes_[a].plan, nullptr));
  if (lines_) Fftw<T>::free(std::exchange(lines_, nullptr));
}

template <class T> typename GridFft<T>::Region GridFft<T>::corner(const std::array<std::int64_t, 3> &corner) {
  return {Kept{corner[0], corner[0]}, Kept{corner[1], corner[1]}, Kept{corner[2], corner[2]}};
}

template <class T> typename GridFft<T>::Region GridFft<T>::centred(const std::array<std::int64_t, 3> &n) {
  Region r;
  for (int a = 0; a < 3; ++a) r[a] = Kept{n[a], n[a] - n[a] / 2};
  return r;
}

template <class T> void GridFft<T>::execute(std::complex<T> *data) const {
  for (int a = 0; a < 3; ++a)
    if (axes_[a].plan) pass(a, corner(extents_), data);
}

template <class T>
void GridFft<T>::execute_pruned(std::complex<T> *data, const Region &image, Pruning pruning) const {
  for (int a = 0; a < 3; ++a) {
    if (!axes_[a].plan) continue;
    Region bound = image;
    for (int b = 0; b < 3; ++b) {
      // ZeroOutside: the axes before a are transformed, nonzero everywhere. OnlyImageRead: the
      // axes after a are still to be transformed, every coordinate of them needed.
      const bool whole = pruning == Pruning::ZeroOutside ? b < a : b > a;
      if (whole) bound[b] = Kept{extents_[b], extents_[b]};
    }
    pass(a, bound, data);
  }
}

// Line l of axis a runs along a at the other two axes' coordinates given by (l % bound[b0].count,
// l / bound[b0].count), b0 < b1 the other axes, each index i mapped to i below `low` and to
// i + extent - count from there; a block is kBlock consecutive lines (consecutive c0: for a > 0,
// side by side in memory where they do not straddle the gap), copied in element-major order.
template <class T>
void GridFft<T>::pass(int a, const Region &bound, std::complex<T> *data) const {
  const Axis &axis = axes_[a];
  const std::int64_t len = axis.length, s = axis.stride, dist = axis.distance;
  const int b0 = a == 0 ? 1 : 0, b1 = a == 2 ? 1 : 2;
  const std::int64_t stride[3] = {1, extents_[0], extents_[0] * extents_[1]};
  const auto coordinate = [&](int b, std::int64_t i) {
    return i < bound[b].low ? i : i + extents_[b] - bound[b].count;
  };
  const std::int64_t lines = bound[b0].count * bound[b1].count;
  const std::int64_t blocks = (lines + kBlock - 1) / kBlock;
  const std::int64_t longest = line_distance<T>(*std::max_element(extents_.begin(), extents_.end()));
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    std::complex<T> *buf = lines_ + static_cast<std::int64_t>(omp_get_thread_num()) * kBlock * longest;
    const std::int64_t first = blk * kBlock, count = std::min(kBlock, lines - first);
    std::int64_t start[kBlock];
    for (std::int64_t b = 0; b < count; ++b) {
      const std::int64_t line = first + b;
      start[b] = coordinate(b0, line % bound[b0].count) * stride[b0] + coordinate(b1, line / bound[b0].count) * stride[b1];
    }
    if (s == 1) { // contiguous lines: copy line by line
      for (std::int64_t b = 0; b < count; ++b) std::copy_n(data + start[b], len, buf + b * dist);
      Fftw<T>::execute(axis.plan, buf);
      for (std::int64_t b = 0; b < count; ++b) std::copy_n(buf + b * dist, len, data + start[b]);
      continue;
    }
    for (std::int64_t i = 0; i < len; ++i)
      for (std::int64_t b = 0; b < count; ++b) buf[b * dist + i] = data[start[b] + i * s];
    Fftw<T>::execute(axis.plan, buf);
    for (std::int64_t i = 0; i < len; ++i)
      for (std::int64_t b = 0; b < count; ++b) data[start[b] + i * s] = buf[b * dist + i];
  }
}

template class GridFft<float>;
template class GridFft<double>;

} // namespace mri::detail
