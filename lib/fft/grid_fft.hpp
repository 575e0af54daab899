#pragma once
// The in-place FFT of a whole grid (the NUFFT's oversampled grid, the Toeplitz embedding), axis by
// axis: B lines of an axis at a time are copied into a small contiguous per-thread buffer,
// transformed there by one FFTW plan of B contiguous transforms, and copied back.
//
// Why not FFTW's own multi-dimensional plan: planned with FFTW_ESTIMATE (deterministic, no
// timing), its strided passes run an order of magnitude slower than the contiguous ones (each
// column element a cache miss); FFTW_MEASURE finds a buffered plan, but measuring takes a large
// part of a second per size and picks plans by timing, so results would change between runs
// (bench_recon_cpu's CG iteration; docs/history.md). The same buffering here keeps
// FFTW_ESTIMATE's determinism: every line is transformed by one plan, whatever the thread count,
// so the result is bitwise the same for any number of threads and run to run.
#include <array>
#include <complex>
#include <cstdint>
#include <memory>

namespace mri::detail {

template <class T> class GridFft {
public:
  // extents: x (fastest), y, z; an axis of extent 1 is skipped. sign: FFTW_FORWARD or
  // FFTW_BACKWARD (unnormalised). threads: the OpenMP team of execute(). Throws Error when FFTW
  // cannot plan or memory runs out.
  GridFft(const std::array<std::int64_t, 3> &extents, int sign, int threads);
  ~GridFft();
  GridFft(const GridFft &) = delete;
  GridFft &operator=(const GridFft &) = delete;

  // Transforms extents[0] * extents[1] * extents[2] values in place. Not re-entrant on one
  // object (its line buffers); different objects run concurrently.
  void execute(std::complex<T> *data) const;

  // Where an image lies in the grid along one axis: `count` coordinates, [0, low) and the last
  // count - low of the axis.
  struct Kept {
    std::int64_t count = 1, low = 1;
  };
  using Region = std::array<Kept, 3>;
  // The Toeplitz embedding: the image in [0, corner) of the doubled grid.
  static Region corner(const std::array<std::int64_t, 3> &corner);
  // The NUFFT's image, centred and wrapped: coordinates -n/2 .. n/2 - 1 at (c mod extent).
  static Region centred(const std::array<std::int64_t, 3> &n);
  // The pruned transform, axes in execute()'s order (x, y, z), so the values it keeps are bitwise
  // execute()'s. Zero input outside `image` (the forward of a padded image): axis a's lines only
  // where the axes after it lie in the image (those are still zero elsewhere). Only the image's
  // outputs read (the inverse before a crop): axis a's lines only where the axes before it lie in
  // the image (their other outputs are never read). About 3/4 of the work in 2D and 7/12 in 3D on
  // the doubled grid.
  enum class Pruning { ZeroOutside, OnlyImageRead };
  void execute_pruned(std::complex<T> *data, const Region &image, Pruning pruning) const;

private:
  struct Axis;
  // The lines of axis a whose other coordinates lie in `bound`, transformed.
  void pass(int a, const Region &bound, std::complex<T> *data) const;
  void release();
  std::array<std::int64_t, 3> extents_;
  int threads_;
  std::unique_ptr<Axis[]> axes_; // 3, null plan where the extent is 1
  std::complex<T> *lines_ = nullptr; // threads_ x kBlock x the longest line distance
};

extern template class GridFft<float>;
extern template class GridFft<double>;

} // namespace mri::detail
