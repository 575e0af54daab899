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

void check_llr_arguments(const cfloat *frames_data, const Grid &grid, int frames, int block, double t) {
  if (frames_data == nullptr) detail::invalid_argument("frames_data", "null", "the frames to shrink");
  if (frames < 1) detail::invalid_argument("frames", frames, "at least one frame");
  if (block < 1) detail::invalid_argument("block", block, "a block is at least one voxel wide");
  for (int a = 0; a < 3; ++a)
    if (grid.extent(a) > 1 && block > grid.extent(a))
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

// Singular value soft-thresholding of the (voxels x frames) matrix of one block, in double.
void shrink_block(cfloat *frames_data, std::int64_t frame_stride, int frames, const std::vector<std::int64_t> &voxels,
                  double t) {
  const auto rows = static_cast<Eigen::Index>(voxels.size());
  Eigen::MatrixXcd m(rows, frames);
  for (int f = 0; f < frames; ++f)
    for (Eigen::Index r = 0; r < rows; ++r)
      m(r, f) = cdouble(frames_data[f * frame_stride + voxels[static_cast<std::size_t>(r)]]);
  const Eigen::JacobiSVD<Eigen::MatrixXcd> svd(m, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::VectorXd s = (svd.singularValues().array() - t).max(0.0).matrix();
  const Eigen::MatrixXcd shrunk = svd.matrixU() * s.asDiagonal() * svd.matrixV().adjoint();
  for (int f = 0; f < frames; ++f)
    for (Eigen::Index r = 0; r < rows; ++r) {
      const cdouble v = shrunk(r, f);
      frames_data[f * frame_stride + voxels[static_cast<std::size_t>(r)]] =
          cfloat(static_cast<float>(v.real()), static_cast<float>(v.imag()));
    }
}

} // namespace

void locally_low_rank_shrink(cfloat *frames_data, const Grid &grid, int frames, int block,
                             const std::array<std::int64_t, 3> &shift, double t) {
  check_llr_arguments(frames_data, grid, frames, block, t);
  std::array<AxisTiling, 3> tiling{};
  for (std::size_t a = 0; a < 3; ++a) {
    const std::int64_t n = grid.extent(static_cast<int>(a));
    tiling[a] = {n, n > 1 ? block : 1, ((shift[a] % n) + n) % n};
  }
  const std::int64_t bx = tiling[0].count(), by = tiling[1].count(), blocks = bx * by * tiling[2].count();
  // Blocks are disjoint: each is read and written by one iteration.
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::array<std::int64_t, 3> k{b % bx, b / bx % by, b / (bx * by)};
    shrink_block(frames_data, grid.voxels(), frames, block_voxels(grid, tiling, k), t);
  }
}

} // namespace mri
