#pragma once
// SENSE's coil side on the device (plain C++): the maps uploaded once, and the per-voxel map
// products and the regulariser that mri_backend/sense.hpp composes around the one-coil normal
// operator (the Coils of SenseNormal, on DeviceImages). Work is enqueued on the vectors' stream.
#include "recon/device_image.hpp"
#include "mri/coils.hpp"
#include "mri/regularizer.hpp"

namespace mri::cuda::detail {

class DeviceCoils {
public:
  // Uploads maps, ordered on `stream` (the host array may go on return). Throws CudaError.
  DeviceCoils(const CoilSensitivities &maps, Regularizer regularizer, double lambda, StreamHandle stream);
  // Coils first .. first + count - 1 of `all` (maps on any device) on the current device, copied
  // device to device (peer copy from another device), ordered on `stream` (a stream of the current
  // device; all's maps must not change meanwhile). InvalidArgument for a block outside all's coils.
  DeviceCoils(const DeviceCoils &all, int first, int count, Regularizer regularizer, double lambda,
              StreamHandle stream);
  ~DeviceCoils();
  DeviceCoils(const DeviceCoils &) = delete;
  DeviceCoils &operator=(const DeviceCoils &) = delete;

  int count() const { return coils_; }
  const cfloat *maps() const { return maps_; } // coil c's map at c * grid().voxels()
  const Grid &grid() const { return grid_; }
  Regularizer regularizer() const { return regularizer_; }
  float lambda() const { return lambda_; }
  void expand(int c, const DeviceImage &x, DeviceImage &out) const;                // out = S_c .* x
  void combine(int c, const DeviceImage &y, DeviceImage &out, bool first) const;   // out (+)= conj(S_c) .* y
  void combine(int c, const cfloat *y, DeviceImage &out, bool first) const;        // y: voxels() device values
  void regularize(const DeviceImage &x, DeviceImage &out) const;                   // out += lambda R^H R x

private:
  const cfloat *map(int c) const { return maps_ + static_cast<std::size_t>(c) * voxels_; }
  int device_ = 0; // where maps_ lives
  int coils_;
  std::size_t voxels_;
  Grid grid_;
  Regularizer regularizer_;
  float lambda_;
  cfloat *maps_ = nullptr;
};

} // namespace mri::cuda::detail
