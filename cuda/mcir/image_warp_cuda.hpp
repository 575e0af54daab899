#pragma once
// The device side of mri::ImageWarp (mri/mcir.hpp), as plain C++ (no CUDA types): an operator of
// the operator core (mri/linear_operator.hpp) on device images, for a device MCIR normal
// W_s^H N_s W_s composed with the device SENSE normal, and what the GPU tests and
// bench_mcir_gpu call. Every voxel is computed by the per-voxel definitions the host uses
// (mri/detail/mcir_stencil.hpp).
//
// forward: thread per state voxel, the trilinear gather; equal to the host's to float rounding
// (nvcc contracts the lerps into fused multiply-adds; the host does not).
// adjoint: thread per state voxel, its value times each corner's weight added to the corner by a
// float2 atomicAdd (sm_90): the order of the additions at a voxel varies from run to run, so the
// adjoint is NOT bitwise reproducible on the device (the CPU's slab-coloured scatter is); each sum
// has at most 8 (2D: 4) terms per state voxel reaching it, so runs differ by a few float ulps.
// A zero field (ImageWarp::is_identity) copies in both directions.
//
// Streams: the kernels are enqueued on the stream of the output image; nothing synchronises.
#include <memory>

#include "mri/mcir.hpp"
#include "recon/device_image.hpp"

namespace mri::cuda {

class DeviceImageWarp {
public:
  // Uploads the field and the Jacobian weights of `warp` (blocks until copied). Throws
  // Unsupported without a usable device.
  explicit DeviceImageWarp(const ImageWarp &warp);
  ~DeviceImageWarp();
  DeviceImageWarp(DeviceImageWarp &&) noexcept;
  DeviceImageWarp &operator=(DeviceImageWarp &&) noexcept;

  const Grid &grid() const;
  bool is_identity() const;

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
