#pragma once
// SENSE's F^H D by the NUFFT with the coils split over several devices (ReconOptions::gpu.devices,
// method = Nufft; docs/scaling.md):
//   rhs = sum_d [ sum_{c in C_d} conj(S_c) .* F^H (w .* D_c) ]
// Entry d of the devices holds the same contiguous block C_d of the coils as the CG's split
// (CoilLanes, coil_blocks): it uploads its own coils' samples, runs the adjoint NUFFT of the
// trajectory on a plan of its own device (lane 0: reconstruct's plan on the first device; the
// others: plans made from the first device's points, copied device to device), multiplies by its
// coils' conj(maps) and sums them into its partial image, each device on a host thread of its own.
// The partials are then added on the first device in entry order by the lanes' exchange (NCCL
// reduce, or peer copies + add). Each coil's adjoint is the one device's (the same plan, the same
// sums; bitwise with Gridding::Gather): only the coil sum is regrouped, by entry.
// Plain C++ (no CUDA types).
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "coil_split.hpp"
#include "recon/device_image.hpp"
#include "nufft/gridding_cuda.hpp"
#include "mri/nufft.hpp"
#include "mri_backend/sense.hpp"
#include "sense_cuda.hpp"

namespace mri::cuda::detail {

// Waits for the work queued on `image`'s stream (plain C++ callers: no cudaStream_t).
void wait_for(const DeviceImage &image);

// A block of coils of a DeviceCoils seen as coils 0 .. count - 1 (mri_backend/sense.hpp's Coils
// for sense_rhs): lets a lane combine its coils from the maps of every coil without a copy.
struct CoilRange {
  const DeviceCoils *coils = nullptr;
  CoilBlock block;
  int count() const { return block.count; }
  void combine(int c, const cfloat *y, DeviceImage &out, bool first) const {
    coils->combine(block.first + c, y, out, first);
  }
};

// out = sum over the range's coils of conj(S_c) .* F^H D_c, `block` coils at a time:
// fhd(c, n, images) writes the F^H D of the range's coils c .. c + n - 1 (n <= block) into
// `images` (n images of out's grid, one after another, on out's device) and returns once they are
// written. The map products run on out's stream: each is waited for before `images` is written
// again, and the last before the return (what one device's reconstruct and every lane of the
// split do, so that both sum a block of coils in the same order).
template <class BlockFhd>
void combine_coil_adjoints(const CoilRange &coils, int block, cfloat *images, DeviceImage &out, BlockFhd &&fhd) {
  const std::size_t n = out.size();
  mri::detail::sense_rhs(
      coils, block,
      [&](int c0, int count) {
        wait_for(out); // the last combine read `images`
        fhd(c0, count, images);
      },
      [&](int i) -> const cfloat * { return images + i * n; }, out);
  wait_for(out); // `images` may be freed or reused on return
}

class CoilSplitFhd {
public:
  // lanes: the split (lane 0's stream: the stream of the rhs apply() writes, on the current
  // device); coils: every coil's map on the first device (uploaded on lane 0's stream or before:
  // waited for here, before other devices copy their blocks); first: the adjoint NUFFT plan of
  // `grid` on the first device, made from `points` (reconstruct keeps it for the direct normal);
  // points: the trajectory on the first device, copied to each other lane's device for its plan;
  // options: validated NUFFT options, those `first` was made with. Throws InvalidArgument (the
  // maps' grid or coil count not the lanes', a null plan), CudaError, and as the plans.
  CoilSplitFhd(std::shared_ptr<const CoilLanes> lanes, const DeviceCoils &coils, std::shared_ptr<NufftDevicePlan> first,
               const DevicePoints &points, const Grid &grid, const NufftOptions &options);
  ~CoilSplitFhd();
  CoilSplitFhd(const CoilSplitFhd &) = delete;
  CoilSplitFhd &operator=(const CoilSplitFhd &) = delete;

  // rhs = sum_c conj(S_c) .* F^H y_c. samples: host, coil-major, coils x M values (the weighted
  // samples w .* D_c), not changed until the return. rhs: an image of the grid on lane 0's stream,
  // fully written; complete when this returns. seconds: one per entry of the devices (lanes or
  // not), each lane's += its host thread's wall time (its uploads, adjoint NUFFTs and map products,
  // waited for). InvalidArgument for a seconds or rhs of the wrong size.
  void apply(const cfloat *samples, Gridding gridding, DeviceImage &rhs, std::span<double> seconds) const;

  // "coils 0-3 on device 0, 4-7 on device 1 (exchange: peer copies)"
  std::string describe() const;

  struct Part;

private:
  std::shared_ptr<const CoilLanes> lanes_; // first: outlives the parts, which use its streams
  std::vector<std::unique_ptr<Part>> parts_; // one per lane
  std::size_t samples_ = 0;
};

} // namespace mri::cuda::detail
