#pragma once
// What the CUDA gridding plans keep between plans, process-wide (gridding_resources.cu): one
// stream-ordered memory pool per device, idle cuFFT plans per grid shape, and the plans' trace
// switch. release_gridding_cache() (gridding_cuda.hpp) gives them back.
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstddef>

#include "cuda_check.cuh"
#include "device_buffer.cuh"

namespace mri::cuda::detail {

// Host-side phase times of the plan constructor on stderr (MRI_GRIDDING_TRACE=1).
bool trace_enabled();

// The current device's pool: freed buffers stay in it up to the release threshold (an eighth of
// the device memory, at most 8 GiB), so a second plan reuses them instead of mapping new memory;
// null where the device has no memory pools (plain cudaMalloc).
cudaMemPool_t plan_pool();

// cuFFT plans without their own work area, kept idle per (device, dims, grid, image depth)
// between plans: a plan checks one out for its lifetime (so two live plans never share one) and
// gives it back.
//
// In 3D the transforms are pruned to the image's z slabs (voxel_map: image z = -nz/2 .. nz/2 - 1
// sits at grid z in [0, nz - nz/2) and [gz - nz/2, gz)). The adjoint reads only those slabs after
// its inverse transform: the z transforms of every (x, y) column, then the 2D (y, x) transforms of
// those slabs alone; the forward's grid is zero outside them: their 2D transforms, then the z
// columns. On the 2x grid that is 2 of the 3 passes over the whole grid instead of 3.
//
// batch > 1 (2D only): one plan of `batch` whole grids, contiguous (grid b at b gx gy), for the
// coil-batched adjoint's chunk of grids: one cuFFT execution instead of `batch`.
struct FftPlan {
  static constexpr cufftHandle kNone = -1; // cuFFT's handles are indices from 0
  int device = 0, dims = 0, gx = 0, gy = 0, gz = 0, nz = 0, batch = 1;
  cufftHandle handle = kNone;              // 2D: the whole grid (batch grids)
  cufftHandle z_columns = kNone;           // 3D: gz-point transforms of the gx gy columns (stride gx gy)
  cufftHandle slabs[2] = {kNone, kNone};   // 3D: (gy, gx) transforms of the low and the high image slabs
  std::size_t work = 0;          // the largest work area of its handles
  bool same_shape(const FftPlan &o) const {
    return device == o.device && dims == o.dims && gx == o.gx && gy == o.gy && gz == o.gz && nz == o.nz &&
           batch == o.batch;
  }
  // Binds every handle to one work area (work bytes) and a stream.
  void bind(void *work_area, cudaStream_t stream) const;
  // In place on a gx gy gz grid: CUFFT_INVERSE as the adjoint needs it, CUFFT_FORWARD as the
  // forward does (see above; in 2D the whole transform, of every grid of the batch).
  void execute(float2 *grid, int direction) const;
};
// A plan of this shape for the current device, idle or new; give it back with return_fft.
// batch > 1: 2D only (Unsupported in 3D: the pruned z columns of several grids are no single
// strided batch).
FftPlan acquire_fft(int dims, int gx, int gy, int gz, int nz, int batch = 1);
void return_fft(const FftPlan &p) noexcept;

} // namespace mri::cuda::detail
