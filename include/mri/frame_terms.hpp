#pragma once
// One sparse term over a stack of frames (mri/frame_stack.hpp), as the proximal solvers take it
// (the Term of ProximalSolver; SparseTermOps is the single image's):
//   spatial term    (W, T, I over image axes) frame by frame: each frame its own SparseTermOps (its
//                   own scratch and TV warm start), all drawing the same wavelet shifts (one seed:
//                   the stack is cycle-spun jointly, as BART's shifts are).
//   temporal TV     (T:1024) T = D_t, (D_t x)_f = x_{f+1} - x_f for f < F - 1 (F - 1 differences,
//                   no wrap-around: breathing states and time frames are not periodic); the
//                   proximal map in its range is the complex soft-threshold of each difference
//                   (one axis: isotropic and anisotropic agree). ||D_t||^2 <= 4. No map on the
//                   image (FISTA does not take it: resolve_proximal_algorithm).
//   locally low rank (L) T = identity; the map is singular-value soft-thresholding of each block's
//                   (voxels x frames) matrix (locally_low_rank_shrink), the block grid shifted at
//                   random each call when cycle spinning (Trzasko and Manduca 2011; BART). The
//                   shifts are drawn here, on the host, for either backend: the same seed gives the
//                   CPU and the GPU the same block grids. The blocks themselves are the backend's
//                   LowRankOps<Vec> (below; the CUDA backend's in cuda/sparse/llr_cuda.hpp).
//
// Thread safety: holds scratch vectors and its shift generator: one call at a time on one object.
#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "mri/error.hpp"
#include "mri/frame_stack.hpp"
#include "mri/proximal.hpp"
#include "mri/sparse.hpp"
#include "mri/vector_ops.hpp"

namespace mri {

// The most frames locally low rank takes on the CUDA backend: each block's (frames x frames) Gram
// matrix is diagonalised by cuSOLVER's batched Jacobi eigensolver, which takes n <= 32.
inline constexpr std::size_t kDeviceLowRankMaxFrames = 32;

// Locally low rank on one backend's frames, given the block grid's shift:
//   LowRankOps(grid, axes, block, frames)    the blocks of `block` voxels along `axes` (resolved)
//   shrink(frames, shift, t)                 the proximal map of t sum_b ||B_b X||_* in place
//   norm(frames, shift)                      sum_b ||B_b X||_*
// with the tiling of locally_low_rank_shrink (mri/sparse.hpp): per axis, blocks start at
// shift + k block and wrap around the image; the last one along an axis holds the remainder.
// Specialised per vector type: host images here, device images in cuda/sparse/llr_cuda.hpp (a
// translation unit that instantiates FrameTermOps on device images includes it).
template <class Vec> class LowRankOps;

template <> class LowRankOps<Image> {
public:
  LowRankOps(const Grid &grid, unsigned axes, int block, std::size_t /*frames*/)
      : grid_(grid), axes_(axes), block_(block) {}
  void shrink(std::vector<Image> &frames, const std::array<std::int64_t, 3> &shift, double t) const {
    std::vector<cfloat *> pointers;
    for (Image &f : frames) pointers.push_back(f.data());
    locally_low_rank_shrink(pointers, grid_, axes_, block_, shift, t);
  }
  double norm(const std::vector<Image> &frames, const std::array<std::int64_t, 3> &shift) const {
    std::vector<const cfloat *> pointers;
    for (const Image &f : frames) pointers.push_back(f.data());
    return locally_low_rank_norm(pointers, grid_, axes_, block_, shift);
  }

private:
  Grid grid_;
  unsigned axes_;
  int block_;
};

template <class Vec, class Ops = SparseOps<Vec>, class VOps = VectorOps<Vec>> class FrameTermOps {
public:
  using Stack = FrameStack<Vec>;

  // `like`: a stack of images of `grid`. Throws InvalidArgument naming the term (validate with
  // the stack's frame count).
  FrameTermOps(const SparseTerm &term, const Grid &grid, const Stack &like, bool cycle_spinning, std::uint64_t seed)
      : term_(term), grid_(grid), frames_(like.size()), cycle_spinning_(cycle_spinning), shifts_(seed) {
    validate(term, grid, static_cast<int>(frames_), "term " + to_string(term));
    if (term.penalty == SparsePenalty::LocallyLowRank) low_rank_.emplace(grid, term.axes, term.block, frames_);
    if (is_temporal(term) || term.penalty == SparsePenalty::LocallyLowRank) return;
    for (std::size_t f = 0; f < frames_; ++f) per_frame_.emplace_back(term, grid, like[f], cycle_spinning, seed);
  }

  const SparseTerm &term() const { return term_; }
  double lambda() const { return term_.lambda; }
  bool acts_on_image() const { return !is_temporal(term_) && (spatial() ? per_frame_[0].acts_on_image() : true); }
  double transform_norm2() const {
    if (is_temporal(term_)) return 4.0;
    return spatial() ? per_frame_[0].transform_norm2() : 1.0;
  }

  Stack make_range(const Stack &like) const {
    Stack out;
    if (is_temporal(term_))
      for (std::size_t f = 0; f + 1 < frames_; ++f) out.frames.push_back(Ops::make(grid_, like[f]));
    else if (spatial())
      for (std::size_t f = 0; f < frames_; ++f) out.frames.push_back(per_frame_[f].make_range(like[f]));
    else
      for (std::size_t f = 0; f < frames_; ++f) out.frames.push_back(Ops::make(grid_, like[f]));
    return out;
  }

  void transform(const Stack &x, Stack &z) const { // z = T x
    if (is_temporal(term_))
      for (std::size_t f = 0; f + 1 < frames_; ++f) { // z_f = x_{f+1} - x_f
        VOps::copy(x[f + 1], z[f]);
        VOps::axpy(-1.0, x[f], z[f]);
      }
    else if (spatial())
      for (std::size_t f = 0; f < frames_; ++f) per_frame_[f].transform(x[f], z[f]);
    else
      VectorOps<Stack>::copy(x, z);
  }

  void transform_adjoint(const Stack &z, Stack &x) const { // x = T^H z
    if (is_temporal(term_))
      for (std::size_t f = 0; f < frames_; ++f) { // x_f = z_{f-1} - z_f, the missing ends zero
        VOps::zero(x[f]);
        if (f > 0) VOps::axpy(1.0, z[f - 1], x[f]);
        if (f + 1 < frames_) VOps::axpy(-1.0, z[f], x[f]);
      }
    else if (spatial())
      for (std::size_t f = 0; f < frames_; ++f) per_frame_[f].transform_adjoint(z[f], x[f]);
    else
      VectorOps<Stack>::copy(z, x);
  }

  // z = prox_{t lambda R}(z), in T's range.
  void prox(double t, Stack &z) {
    const double threshold = t * term_.lambda;
    if (is_temporal(term_))
      for (Vec &d : z.frames) Ops::shrink(d, grid_, 1, KeepBox{}, threshold);
    else if (spatial())
      for (std::size_t f = 0; f < frames_; ++f) per_frame_[f].prox(t, z[f]);
    else
      low_rank_->shrink(z.frames, draw_shift(), threshold);
  }

  // x = prox_{t lambda R}(x) on the images (acts_on_image terms only; spatial TV by its inner
  // iterations, frame by frame).
  void prox_image(double t, Stack &x, int inner) {
    if (is_temporal(term_))
      detail::invalid_argument("term", to_string(term_), "has no proximal map on the images: use admm or primal-dual");
    if (!spatial()) return prox(t, x);
    for (std::size_t f = 0; f < frames_; ++f) per_frame_[f].prox_image(t, x[f], inner);
  }

  // lambda R(T x) (the wavelet and the blocks unshifted), `range` a scratch vector of T's range.
  double value(const Stack &x, Stack &range) {
    double sum = 0;
    if (is_temporal(term_)) {
      transform(x, range);
      for (const Vec &d : range.frames) sum += Ops::group_norm_sum(d, grid_, 1, KeepBox{});
      return term_.lambda * sum;
    }
    if (spatial()) {
      for (std::size_t f = 0; f < frames_; ++f) sum += per_frame_[f].value(x[f], range[f]);
      return sum;
    }
    return term_.lambda * low_rank_->norm(x.frames, {0, 0, 0});
  }

private:
  bool spatial() const { return !per_frame_.empty(); }

  // The block grid's offset: uniform in [0, block) along each axis the blocks span.
  std::array<std::int64_t, 3> draw_shift() {
    std::array<std::int64_t, 3> s{0, 0, 0};
    if (!cycle_spinning_) return s;
    const unsigned axes = resolve_axes(grid_, term_.axes);
    for (int a = 0; a < 3; ++a)
      if ((axes >> a & 1u) != 0) s[a] = std::uniform_int_distribution<std::int64_t>(0, term_.block - 1)(shifts_);
    return s;
  }

  SparseTerm term_;
  Grid grid_;
  std::size_t frames_;
  bool cycle_spinning_;
  std::mt19937_64 shifts_;
  std::vector<SparseTermOps<Vec, Ops, VOps>> per_frame_;
  std::optional<LowRankOps<Vec>> low_rank_; // LocallyLowRank only
};

} // namespace mri
