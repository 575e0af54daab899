#pragma once
// The device side of mri::ImageWarp (mri/mcir.hpp), as plain C++ (no CUDA types): an operator of
// the operator core (mri/linear_operator.hpp) on device images, for a device MCIR normal
// W_s^H N_s W_s composed with the device SENSE normal, and what the GPU tests and
// bench_mcir_gpu call. Every voxel is computed by the per-voxel definitions the host uses
// (mri/detail/mcir_stencil.hpp).
//
// forward: thread per state voxel, the trilinear gather; equal to the host's to float rounding
// (nvcc contracts the lerps into fused multiply-adds; the host does not).
// adjoint, two forms (DeviceWarpAdjoint):
//   Gather (default): thread per reference voxel, summing the state voxels that read it in
//     ascending (state voxel, corner) order: bitwise reproducible run to run. Its lists are made
//     once per field: count the (state voxel, corner) pairs of non-zero weight per reference
//     voxel, scan, fill, sort each voxel's list. Memory: 4 bytes per pair (at most 8 per voxel,
//     4 in 2D) + 4 per voxel: ~36 bytes per voxel of a 3D grid (75 MB at 128^3).
//   Atomic: thread per state voxel, its value times each corner's weight added to the corner by a
//     float2 atomicAdd (sm_90): no lists, but the order of the additions at a voxel varies from run
//     to run, so it is NOT bitwise reproducible (runs differ by a few float ulps).
// Both sum the same terms as the CPU's scatter, in another order. A zero field
// (ImageWarp::is_identity) copies in both directions.
//
// Streams: the kernels are enqueued on the stream of the output image; nothing synchronises.
#include <memory>

#include "mri/mcir.hpp"
#include "recon/device_image.hpp"

namespace mri::cuda {

enum class DeviceWarpAdjoint { Gather, Atomic };

class DeviceImageWarp {
public:
  // Uploads the field and the Jacobian weights of `warp` and, for Gather, makes the adjoint's
  // lists (blocks until done). Throws Unsupported without a usable device, or for Gather on grids
  // of 2^29 voxels or more (the lists' 32-bit entries).
  explicit DeviceImageWarp(const ImageWarp &warp, DeviceWarpAdjoint adjoint = DeviceWarpAdjoint::Gather);
  ~DeviceImageWarp();
  DeviceImageWarp(DeviceImageWarp &&) noexcept;
  DeviceImageWarp &operator=(DeviceImageWarp &&) noexcept;

  const Grid &grid() const;
  bool is_identity() const;
  DeviceWarpAdjoint adjoint_form() const;

  // Throws InvalidArgument when an image is not on grid() or the output is the input.
  using Domain = DeviceImage;
  using Range = DeviceImage;
  DeviceImage domain_vector() const { return DeviceImage(grid()); }
  DeviceImage range_vector() const { return DeviceImage(grid()); }
  void forward(const DeviceImage &reference, DeviceImage &state) const;
  void adjoint(const DeviceImage &state, DeviceImage &reference) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace mri::cuda
