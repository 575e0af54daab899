// Locally low rank (Trzasko and Manduca 2011, "Local versus global low-rank promotion in dynamic
// MRI series reconstruction"): the proximal map of t * sum_b ||B_b X||_*, block by block, by
// singular value soft-thresholding (Cai, Candes and Shen 2010): B_b X = U S V^H -> U max(S - t, 0) V^H.
#include <Eigen/Dense>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <vector>

#include "mri/error.hpp"
#include "mri/sparse.hpp"

namespace mri {
namespace {

// The blocks along one axis: block k covers the positions (shift + k * size + j) mod extent for
// j < min(size, extent - k * size); an axis of extent 1 has one block of one position.
struct AxisTiling {
  std::int64_t extent, size, shift;
  std::int64_t count() const { return (extent + size - 1) / size; }
  std::int64_t length(std::int64_t k) const { return std::min(size, extent - k * size); }
  std::int64_t position(std::int64_t k, std::int64_t j) const { return (shift + k * size + j) % extent; }
};

void check_llr_arguments(std::size_t frames, const Grid &grid, unsigned axes, int block, double t) {
  if (frames < 1) detail::invalid_argument("frames", frames, "at least one frame");
  if (block < 1) detail::invalid_argument("block", block, "a block is at least one voxel wide");
  for (int a = 0; a < 3; ++a)
    if ((axes >> a & 1u) != 0 && block > grid.extent(a))
      detail::invalid_argument("block", block,
                               "larger than the image along an axis of extent " + std::to_string(grid.extent(a)));
  if (!std::isfinite(t) || t < 0) detail::invalid_argument("t", t, "a threshold is finite and >= 0");
}

// The voxel indices of block (kx, ky, kz), in x-fastest order.
std::vector<std::int64_t> block_voxels(const Grid &grid, const std::array<AxisTiling, 3> &tiling,
                                       const std::array<std::int64_t, 3> &k) {
  std::vector<std::int64_t> voxels;
  for (std::int64_t jz = 0; jz < tiling[2].length(k[2]); ++jz)
    for (std::int64_t jy = 0; jy < tiling[1].length(k[1]); ++jy)
      for (std::int64_t jx = 0; jx < tiling[0].length(k[0]); ++jx)
        voxels.push_back(grid.index(tiling[0].position(k[0], jx), tiling[1].position(k[1], jy),
                                    tiling[2].position(k[2], jz)));
  return voxels;
}

// The (voxels x frames) matrix of one block, in double.
Eigen::MatrixXcd block_matrix(std::span<const cfloat *const> frames, const std::vector<std::int64_t> &voxels) {
  const auto rows = static_cast<Eigen::Index>(voxels.size());
  Eigen::MatrixXcd m(rows, static_cast<Eigen::Index>(frames.size()));
  for (std::size_t f = 0; f < frames.size(); ++f)
    for (Eigen::Index r = 0; r < rows; ++r)
      m(r, static_cast<Eigen::Index>(f)) = cdouble(frames[f][voxels[static_cast<std::size_t>(r)]]);
  return m;
}

// Singular value soft-thresholding of one block (write: the result back into the frames);
// returns the block's nuclear norm before it.
double shrink_block(std::span<cfloat *const> frames, const std::vector<std::int64_t> &voxels, double t, bool write) {
  const Eigen::MatrixXcd m = block_matrix({frames.data(), frames.size()}, voxels);
  if (!write) return Eigen::JacobiSVD<Eigen::MatrixXcd>(m).singularValues().sum();
  const Eigen::JacobiSVD<Eigen::MatrixXcd> svd(m, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::VectorXd s = (svd.singularValues().array() - t).max(0.0).matrix();
  const Eigen::MatrixXcd shrunk = svd.matrixU() * s.asDiagonal() * svd.matrixV().adjoint();
  for (std::size_t f = 0; f < frames.size(); ++f)
    for (std::size_t r = 0; r < voxels.size(); ++r) {
      const cdouble v = shrunk(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(f));
      frames[f][voxels[r]] = cfloat(static_cast<float>(v.real()), static_cast<float>(v.imag()));
    }
  return svd.singularValues().sum();
}

// Every block of the tiling, shrunk (write) or only measured; the sum of their nuclear norms.
double for_each_block(std::span<cfloat *const> frames, const Grid &grid, unsigned axes, int block,
                      const std::array<std::int64_t, 3> &shift, double t, bool write) {
  axes = resolve_axes(grid, axes);
  check_llr_arguments(frames.size(), grid, axes, block, t);
  std::array<AxisTiling, 3> tiling{};
  for (std::size_t a = 0; a < 3; ++a) {
    const std::int64_t n = grid.extent(static_cast<int>(a));
    tiling[a] = {n, (axes >> a & 1u) != 0 ? block : n, ((shift[a] % n) + n) % n};
  }
  const std::int64_t bx = tiling[0].count(), by = tiling[1].count(), blocks = bx * by * tiling[2].count();
  double norm = 0;
  // Blocks are disjoint: each is read and written by one iteration.
#pragma omp parallel for schedule(dynamic) reduction(+ : norm)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::array<std::int64_t, 3> k{b % bx, b / bx % by, b / (bx * by)};
    norm += shrink_block(frames, block_voxels(grid, tiling, k), t, write);
  }
  return norm;
}

} // namespace

double locally_low_rank_shrink(std::span<cfloat *const> frames, const Grid &grid, unsigned axes, int block,
                               const std::array<std::int64_t, 3> &shift, double t) {
  return for_each_block(frames, grid, axes, block, shift, t, true);
}

double locally_low_rank_norm(std::span<const cfloat *const> frames, const Grid &grid, unsigned axes, int block,
                             const std::array<std::int64_t, 3> &shift) {
  // Read only (write = false): the const_cast never writes.
  std::vector<cfloat *> pointers;
  for (const cfloat *f : frames) pointers.push_back(const_cast<cfloat *>(f));
  return for_each_block(pointers, grid, axes, block, shift, 0.0, false);
}

void locally_low_rank_shrink(cfloat *frames_data, const Grid &grid, int frames, int block,
                             const std::array<std::int64_t, 3> &shift, double t) {
  if (frames_data == nullptr) detail::invalid_argument("frames_data", "null", "the frames to shrink");
  if (frames < 1) detail::invalid_argument("frames", frames, "at least one frame");
  std::vector<cfloat *> pointers;
  for (int f = 0; f < frames; ++f) pointers.push_back(frames_data + f * grid.voxels());
  locally_low_rank_shrink(pointers, grid, 0, block, shift, t);
}

} // namespace mri
