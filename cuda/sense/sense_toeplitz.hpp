#pragma once
// SENSE's Toeplitz normal operator with the coils batched (docs/sense.md):
//   out = sum_c conj(S_c) .* crop(IFFT(K .* FFT(pad(S_c .* x)))) + lambda R^H R x
// `batch` coils per pass: one kernel writes S_c x zero-padded for the pass's coils into
// contiguous padded grids, one batched cuFFT forward, one multiply by the shared spectrum K, one
// batched inverse, one kernel crops the grids and sums conj(S_c) times them into out (the
// regulariser in the last pass). mri_backend/sense.hpp's SenseNormal around the one-coil
// QOperator launches 5 kernels and 2 transforms per coil instead: on a small padded grid
// (2D: 512^2 is 2 MB) each of those is too small to fill the device.
#include <memory>

#include "recon/device_image.hpp"
#include "sense_cuda.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

#include "mri_backend/device_operator_bytes.hpp"

namespace mri::cuda::detail {

// Coils per pass and the batched operator's bytes: mri_backend/device_operator_bytes.hpp's rules,
// shared with the memory estimates.
using mri::detail::sense_batch_bytes;
using mri::detail::sense_coil_batch;

class SenseToeplitz : public SelfAdjointOnDevice<SenseToeplitz> {
public:
  // coils and toeplitz must outlive the operator; work runs on toeplitz.stream(). batch: coils per
  // pass, in [1, coils.count()]. Throws InvalidArgument (batch, grids that differ), CudaError.
  SenseToeplitz(const DeviceCoils &coils, const QOperator &toeplitz, int batch);
  ~SenseToeplitz();
  SenseToeplitz(SenseToeplitz &&) noexcept;
  SenseToeplitz &operator=(SenseToeplitz &&) noexcept;

  int batch() const;
  // out = the SENSE normal of x (x and out: distinct images on the maps' grid), on the Toeplitz
  // operator's stream; self-adjoint (SelfAdjointOnDevice: forward = adjoint = apply).
  void apply(const DeviceImage &x, DeviceImage &out) const;
  DeviceImage domain_vector() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace mri::cuda::detail
