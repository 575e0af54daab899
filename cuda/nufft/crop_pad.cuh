#pragma once
// Between image and oversampled grid: crop (adjoint) and zero-pad (forward), with deapodization.
#include "nufft/gridding_common.cuh"

namespace mri::cuda::detail {
namespace {

// Deapodization of voxel (ix, iy, iz): the product of the per-axis factors.
__device__ __forceinline__ float deapod_weight(const float *deapod, const Dev &d, int ix, int iy, int iz) {
  return deapod[ix] * deapod[d.nx + iy] * deapod[d.nx + d.ny + iz];
}

// Voxel v <-> oversampled index of its coordinate mod G, with the deapodization factor.
__device__ __forceinline__ void voxel_map(int v, const Dev &d, const float *deapod, unsigned &j, float &w) {
  const int ix = v % d.nx, iy = (v / d.nx) % d.ny, iz = v / (d.nx * d.ny);
  const int cx = ix - d.nx / 2, cy = iy - d.ny / 2, cz = iz - d.nz / 2;
  const int jx = cx < 0 ? cx + d.gx : cx, jy = cy < 0 ? cy + d.gy : cy, jz = cz < 0 ? cz + d.gz : cz;
  j = (static_cast<unsigned>(jz) * d.gy + jy) * d.gx + jx;
  w = deapod_weight(deapod, d, ix, iy, iz);
}

__global__ void crop_kernel(const float2 *grid, Dev d, const float *deapod, float2 *image) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= d.nx * d.ny * d.nz) return;
  unsigned j;
  float w;
  voxel_map(v, d, deapod, j, w);
  const float2 g = grid[j];
  image[v] = make_float2(g.x * w, g.y * w);
}

// crop_kernel of blockIdx.y's grid (at grids + y points) into its image (at images + y n voxels):
// the same products, the coil-batched adjoint's chunk in one launch.
__global__ void crop_vectors_kernel(const float2 *grids, std::size_t points, Dev d, const float *deapod,
                                    float2 *images) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  const int voxels = d.nx * d.ny * d.nz;
  if (v >= voxels) return;
  unsigned j;
  float w;
  voxel_map(v, d, deapod, j, w);
  const float2 g = grids[blockIdx.y * points + j];
  images[blockIdx.y * static_cast<std::size_t>(voxels) + v] = make_float2(g.x * w, g.y * w);
}

// Grid index j of an axis (g points, n voxels) <-> the voxel of coordinate j (j < n - n/2) or
// j - g (j >= g - n/2), as voxel_map; -1 between them (the zero padding).
__device__ __forceinline__ int voxel_of(int j, int n, int g) {
  const int c = j < n - n / 2 ? j : j - g;
  return c >= -(n / 2) ? c + n / 2 : -1;
}

// The forward's first step: every oversampled grid point (x a thread, y and z the block's) written
// once, its voxel times the deapodization or 0: no separate clear of the grid before a scattered
// pad (one pass and one launch fewer).
__global__ void pad_grid_kernel(const float2 *__restrict__ image, Dev d, const float *__restrict__ deapod,
                                float2 *__restrict__ grid) {
  const int jx = blockIdx.x * blockDim.x + threadIdx.x;
  if (jx >= d.gx) return;
  const int jy = static_cast<int>(blockIdx.y), jz = static_cast<int>(blockIdx.z);
  const int ix = voxel_of(jx, d.nx, d.gx), iy = voxel_of(jy, d.ny, d.gy), iz = voxel_of(jz, d.nz, d.gz);
  float2 v = make_float2(0.f, 0.f);
  if (ix >= 0 && iy >= 0 && iz >= 0) {
    const float w = deapod_weight(deapod, d, ix, iy, iz);
    const float2 x = image[(static_cast<std::size_t>(iz) * d.ny + iy) * d.nx + ix];
    v = make_float2(x.x * w, x.y * w);
  }
  grid[(static_cast<std::size_t>(jz) * d.gy + jy) * d.gx + jx] = v;
}

} // namespace
} // namespace mri::cuda::detail
