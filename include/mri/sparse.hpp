#pragma once
// Sparse regularisation: the terms lambda * ||T x||_1 of compressed sensing (l1 of an orthogonal
// wavelet transform, total variation, l1 of the image), their transforms T and proximal maps,
// the same on host images (here) and on the CUDA backend's device images (cuda/sparse/), and
// BART's `-R TYPE:DIMS:JOINT:LAMBDA` syntax for them. The solvers that use them are in
// mri/proximal_solvers.hpp; reconstruct() takes them as ReconOptions::solver.terms.
//
// Thread safety: pure functions of their arguments: safe from any number of threads at once (on
// distinct outputs).
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mri/grid.hpp"
#include "mri/image.hpp"

namespace mri {

// Orthonormal wavelet families (mri/detail/sparse_stencil.hpp has the filters).
enum class Wavelet {
  Haar,
  Daubechies2, // 4 taps, 2 vanishing moments: BART's `W`
  Daubechies4  // 8 taps, 4 vanishing moments
};
const char *to_string(Wavelet);

// The penalty of a term.
enum class SparsePenalty {
  L1Wavelet,      // BART `W`: lambda ||Psi x||_1, Psi the orthogonal wavelet transform over `axes`, the
                  // coarsest approximation band not penalised, with random cycle-spinning shifts
  TotalVariation, // BART `T`: lambda sum_v sqrt(sum_a |D_a x[v]|^2) (isotropic) or
                  // lambda sum_a ||D_a x||_1 (anisotropic), D_a forward differences along the axes
  L1Image,        // BART `I`: lambda ||x||_1
  L2,             // BART `Q`: lambda ||x||_2^2 (the quadratic Tikhonov term of SolverOptions)
  LocallyLowRank  // BART `L`: lambda sum_b ||B_b X||_* over a stack of frames X (reconstruct_frames):
                  // the nuclear norm of each block's (voxels x frames) matrix, blocks of
                  // SparseTerm::block voxels per image axis at a random shift (Trzasko and Manduca 2011)
};
const char *to_string(SparsePenalty);

// The frame axis of a stack of frames (reconstruct_frames, mri/dynamic.hpp) as BART's dimension
// flag: bit 10, BART's TIME_DIM, so `-R T:1024:0:L` is total variation along the frames.
inline constexpr unsigned kFrameAxis = 1u << 10;

// One term lambda * R(T x) of the objective 0.5 ||E x - y||^2 + sum_terms lambda R(T x)
// (E with the density weights where given: docs/sparse.md).
struct SparseTerm {
  SparsePenalty penalty = SparsePenalty::L1Wavelet;
  double lambda = 0;
  // Image axes the transform acts along, as BART's dimension flags: bit 0 x, bit 1 y, bit 2 z.
  // Each must be an axis of the grid with extent > 1 (a wavelet or a difference along an axis of
  // extent 1 is refused). 0: every axis of extent > 1. For a stack of frames, kFrameAxis alone
  // makes a temporal term (TotalVariation: l1 of the differences between consecutive frames);
  // it does not combine with image axes in one term (give two terms). LocallyLowRank:
  // the image axes its blocks span (0: every axis of extent > 1); the frames are its columns.
  unsigned axes = 0;
  // BART's joint flags: dimensions thresholded jointly. Only dimensions beyond the image (coils,
  // frames) can be joint: anything but 0 is refused, except LocallyLowRank's, which BART writes
  // as its block axes (`L:7:7:LAMBDA`): equal to axes or 0.
  unsigned joint = 0;
  Wavelet wavelet = Wavelet::Daubechies2; // L1Wavelet
  bool isotropic = true;                  // TotalVariation (BART's `T` is isotropic)
  int block = 8;                          // LocallyLowRank: block side in voxels (BART's pics -b)
};
std::string to_string(const SparseTerm &);

// A term from BART's pics syntax "TYPE:DIMS:JOINT:LAMBDA" (W, T, I, L, Q; `Q` is "Q:LAMBDA" in
// BART too). Throws InvalidArgument naming the text for unknown letters, malformed numbers,
// negative or non-finite lambda, DIMS beyond the image axes and kFrameAxis (bits 3-9, 11 and up)
// and nonzero JOINT (L: JOINT equal to DIMS or 0).
SparseTerm parse_bart_term(std::string_view spec);

// The levels of a wavelet transform on a grid: per axis the number of splits
// (kWaveletMinSplitExtent rule) and the extent of the coarsest approximation band.
struct WaveletLevels {
  Grid grid;
  unsigned axes = 0; // resolved: never 0
  Wavelet wavelet = Wavelet::Daubechies2;
  std::array<int, 3> levels{0, 0, 0};
  std::array<std::int64_t, 3> coarse{1, 1, 1}; // the unpenalised band [0, coarse) per axis
  int max_levels() const;
};
// Throws InvalidArgument when an axis in `axes` has extent 1 or is beyond the grid, or when no
// axis is long enough for one level (extent < kWaveletMinSplitExtent).
WaveletLevels wavelet_levels(const Grid &grid, unsigned axes, Wavelet wavelet);

// The axes a term acts along on `grid` (its `axes`, or every axis of extent > 1 when 0). Throws
// InvalidArgument naming the term when one has extent 1 or lies beyond the grid.
unsigned resolve_axes(const Grid &grid, unsigned axes);
int axis_count(unsigned axes);

// Throws InvalidArgument naming `name` for a term that cannot run on `grid`: lambda negative or
// not finite, joint flags (only dimensions beyond the image could be joint), l2 (quadratic: the
// CG's Tikhonov term), axes of extent 1 or beyond the grid, a wavelet no axis is long enough for,
// and terms that need frames (kFrameAxis, LocallyLowRank).
void validate(const SparseTerm &term, const Grid &grid, const std::string &name);
// The same for a term over a stack of `frames` images of `grid`: it also takes temporal terms
// (kFrameAxis alone, TotalVariation, at least 2 frames) and LocallyLowRank (block in
// [1, the largest axis it spans]); it refuses a term that mixes kFrameAxis with image axes.
void validate(const SparseTerm &term, const Grid &grid, int frames, const std::string &name);
// A temporal term: its axes are kFrameAxis.
bool is_temporal(const SparseTerm &term);

// A box [0, extent) per axis of a grid: the samples a shrink leaves alone (the wavelet's coarsest
// band); all zero: none.
using KeepBox = std::array<std::int64_t, 3>;

// The transforms and proximal maps of the sparse terms on one vector type. SparseOps<Image> is
// the host's (lib/sparse/); the CUDA backend specialises it for its device images. A stacked
// vector (the differences along several axes) is a vector on a grid of `count` times the voxels
// (stacked_grid), block a holding the differences along the a-th axis of `axes`.
template <class Vec> struct SparseOps; // primary template intentionally undefined

// The grid of `count` images of `grid` stacked along a new slowest axis, as a vector's grid.
Grid stacked_grid(const Grid &grid, int count);

template <> struct SparseOps<Image> {
  // A vector on `grid` on the same device and stream as `like` (contents unspecified).
  static Image make(const Grid &grid, const Image &like);
  // c = Psi x (x on levels.grid): the orthonormal transform, level by level, the axes of a level
  // in x, y, z order; c in the layout of mri/detail/sparse_stencil.hpp per axis (Mallat's).
  static void wavelet_forward(const WaveletLevels &levels, const Image &x, Image &c);
  static void wavelet_inverse(const WaveletLevels &levels, const Image &c, Image &x); // x = Psi^H c
  // out[(i + shift) mod n] = x[i] per axis (shift in [0, n)); out must not alias x.
  static void circular_shift(const Image &x, const std::array<std::int64_t, 3> &shift, Image &out);
  // g = (D_a x) for the axes of `axes` (resolved), stacked; x on `grid`, g on
  // stacked_grid(grid, axis_count(axes)).
  static void gradient_forward(const Grid &grid, unsigned axes, const Image &x, Image &g);
  static void gradient_adjoint(const Grid &grid, unsigned axes, const Image &g, Image &x); // x = sum_a D_a^H g_a
  // One step of TV denoising's dual iteration (mri/detail/sparse_stencil.hpp's
  // tv_dual_step_voxel) at every voxel: p and q on stacked_grid(grid, axis_count(axes)), u on
  // grid; radius >= 0.
  static void tv_dual_step(const Grid &grid, unsigned axes, bool isotropic, const Image &u, double step,
                           double radius, double momentum, Image &p, Image &q);
  // Block soft-thresholding of z, in place: z holds group_size blocks of base.voxels() values,
  // the group of voxel v its values at v + c * base.voxels(); each group outside `keep` is
  // shrunk by shrink_group with threshold t. Returns the sum of the shrunk groups' norms before
  // the shrink (the penalty's value at the input, without lambda).
  static double shrink(Image &z, const Grid &base, int group_size, const KeepBox &keep, double t);
  // The same sum without shrinking.
  static double group_norm_sum(const Image &z, const Grid &base, int group_size, const KeepBox &keep);
};

// Locally low rank (Trzasko and Manduca 2011; BART `L`) over a stack of frames: the proximal map
// of t * sum_blocks ||B_b X||_* (nuclear norm of each block's (voxels x frames) matrix), in place
// on the frames (one pointer per frame, each an image of `grid`). Blocks of block voxels along
// each axis of `axes` (resolved as SparseTerm::axes; the others whole) tile the grid from `shift`
// (circular, as BART's random shifts), the partial blocks at the far edges included. Returns the
// sum of the blocks' nuclear norms before the shrink. Throws InvalidArgument when block < 1 or
// exceeds an axis it spans, or there are no frames. Host only.
double locally_low_rank_shrink(std::span<cfloat *const> frames, const Grid &grid, unsigned axes, int block,
                               const std::array<std::int64_t, 3> &shift, double t);
// The sum of the blocks' nuclear norms, unchanged frames.
double locally_low_rank_norm(std::span<const cfloat *const> frames, const Grid &grid, unsigned axes, int block,
                             const std::array<std::int64_t, 3> &shift);
// The same on `frames` images stored one after the other, blocks along every axis of extent > 1.
void locally_low_rank_shrink(cfloat *frames_data, const Grid &grid, int frames, int block,
                             const std::array<std::int64_t, 3> &shift, double t);

} // namespace mri
