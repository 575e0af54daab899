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
//                   random each call when cycle spinning (Trzasko and Manduca 2011; BART). Host
//                   frames only in this build.
//
// Thread safety: holds scratch vectors and its shift generator: one call at a time on one object.
#include <array>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "mri/error.hpp"
#include "mri/frame_stack.hpp"
#include "mri/proximal.hpp"
#include "mri/sparse.hpp"
#include "mri/vector_ops.hpp"

namespace mri {

template <class Vec, class Ops = SparseOps<Vec>, class VOps = VectorOps<Vec>> class FrameTermOps {
public:
  using Stack = FrameStack<Vec>;

  // `like`: a stack of images of `grid`. Throws InvalidArgument naming the term (validate with
  // the stack's frame count).
  FrameTermOps(const SparseTerm &term, const Grid &grid, const Stack &like, bool cycle_spinning, std::uint64_t seed)
      : term_(term), grid_(grid), frames_(like.size()), cycle_spinning_(cycle_spinning), shifts_(seed) {
    validate(term, grid, static_cast<int>(frames_), "term " + to_string(term));
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
      low_rank(z, draw_shift(), threshold);
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
    return term_.lambda * low_rank_norm(x);
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

  void low_rank(Stack &x, const std::array<std::int64_t, 3> &shift, double threshold) {
    if constexpr (std::is_same_v<Vec, Image>) {
      std::vector<cfloat *> frames;
      for (Image &f : x.frames) frames.push_back(f.data());
      locally_low_rank_shrink(frames, grid_, term_.axes, term_.block, shift, threshold);
    } else {
      throw Unsupported("locally low rank runs on host frames only in this build (backend = cpu)");
    }
  }
  double low_rank_norm(const Stack &x) const {
    if constexpr (std::is_same_v<Vec, Image>) {
      std::vector<const cfloat *> frames;
      for (const Image &f : x.frames) frames.push_back(f.data());
      return locally_low_rank_norm(frames, grid_, term_.axes, term_.block, {0, 0, 0});
    } else {
      throw Unsupported("locally low rank runs on host frames only in this build (backend = cpu)");
    }
  }

  SparseTerm term_;
  Grid grid_;
  std::size_t frames_;
  bool cycle_spinning_;
  std::mt19937_64 shifts_;
  std::vector<SparseTermOps<Vec, Ops, VOps>> per_frame_;
};

} // namespace mri
