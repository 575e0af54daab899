#pragma once
// Locally low rank on device frames: LowRankOps<DeviceImage>, the table FrameTermOps
// (mri/frame_terms.hpp) calls for a stack of device images, as plain C++ (no CUDA types). The
// tiling, the shifts (drawn on the host by FrameTermOps) and the results are those of the host's
// locally_low_rank_shrink / locally_low_rank_norm (mri/sparse.hpp); only the way each block's
// singular values are found differs:
//   G = B^H B                   (F x F per block, B the block's voxels x F frames matrix; double)
//   G = V diag(s^2) V^H         (cuSOLVER's batched Jacobi eigensolver, double: n = F <= 32)
//   B' = B V diag(max(s - t, 0) / s) V^H
// The Gram squares B's condition number, so it is formed and diagonalised in double: the
// singular values and the shrink then carry float32 input rounding only, as the host's double SVD.
// Frames stay on the device; the only host transfers are the shift and threshold as kernel
// arguments, and norm()'s one double.
//
// Streams: the work is enqueued on frames[0]'s stream (frames on other streams are joined to it
// by events before and after). shrink returns without waiting; norm synchronises that stream.
// Thread safety: one call at a time on one object (its workspace).
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "mri/frame_terms.hpp"
#include "mri/grid.hpp"
#include "recon/device_image.hpp"

namespace mri {
namespace cuda {
class LowRankPlan; // llr_cuda.cu: the cuSOLVER handle, the eigensolver's settings and workspace
}

template <> class LowRankOps<cuda::DeviceImage> {
public:
  // Throws Unsupported for more than kDeviceLowRankMaxFrames frames (naming the count), and
  // InvalidArgument as locally_low_rank_shrink for a block below 1 or beyond the image.
  LowRankOps(const Grid &grid, unsigned axes, int block, std::size_t frames);
  ~LowRankOps();
  LowRankOps(LowRankOps &&) noexcept;
  LowRankOps &operator=(LowRankOps &&) noexcept;

  // Every frame on the grid; t finite and >= 0. t = 0 leaves the frames exactly as they were;
  // a block whose singular values are all <= t becomes exactly zero.
  void shrink(std::vector<cuda::DeviceImage> &frames, const std::array<std::int64_t, 3> &shift, double t);
  double norm(const std::vector<cuda::DeviceImage> &frames, const std::array<std::int64_t, 3> &shift);
  // The device bytes the plan holds (its Gram chunk, eigenvalues, flags, norms and cuSOLVER's
  // workspace): what mri_backend/low_rank_device_bytes.hpp's estimate must bound.
  std::size_t device_bytes() const;

private:
  std::unique_ptr<cuda::LowRankPlan> plan_;
};

} // namespace mri
