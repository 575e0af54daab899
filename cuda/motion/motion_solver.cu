// The linear solver's sweep (section 4.3 of the GPU motion paper: Bruhn et al.'s combined
// local-global optical flow with a volume-conserving term; docs/architecture.md, Sources) in the
// paper's two memory policies; both evaluate the shared point-coupled update
// mri::detail::motion::clg_update and differ only in where neighbours come from:
//   Cached      one thread per voxel, neighbours loaded through L1/L2 (the paper's choice on Fermi:
//               the caches catch the 6 + 6 neighbour reuse without bookkeeping);
//   SharedTiles a 32 x 8 block owns an x-y tile, keeps three z-slices of the field (tile + 1-voxel
//               halo, corners included for the divergence's diagonal neighbours) in shared memory
//               and streams down a chunk of kChunk slices: each field value is loaded from global
//               memory (1 + halo) times instead of up to 13.
// Jacobi reads src and writes dst; an SOR colour pass runs in place (src == dst): it writes only
// voxels of its colour and reads only their neighbours, of other colours (motion_stencil.hpp's
// voxel_colour), so no thread reads what another writes (deterministic, and __ldg stays valid).
#include "motion_ops.cuh"

namespace mri::cuda::detail::motion {
namespace {

using mri::detail::motion::clg_update;
using mri::detail::motion::VoxelPosition;

struct SweepArgs {
  const float *j[9];
  const float *src[3];
  float *dst[3];
  Dims d;
  int colour, colours;
  float alpha, gamma, omega;
};

constexpr int kTileX = 32, kTileY = 8, kChunk = 16;
// Both kernels are bound by memory. SharedTiles: __launch_bounds__(256, 6) caps it at 40
// registers without spills, so 6 blocks (75% occupancy) keep more loads in flight per SM.
// Cached: each thread updates kCachedSlices consecutive z-slices, so the second slice's -z
// neighbours and the first's +z ones are hits in L1, and the interior blocks (all but the
// volume's faces) take the border-free update (clg_update<true>). Two slices with 4 blocks per SM
// (62 registers) beat one slice per thread, 5 or 6 blocks per SM (fewer registers per thread) and
// 4 slices per thread. SharedTiles keeps the general update: the interior variant's registers
// make it spill at 6 blocks per SM, which costs more than the border tests save. Tuned by
// bench_motion_gpu's sweep on 128^3 random data (docs/history.md, "Motion estimation,
// performance").
constexpr int kCachedSlices = 2;

// Jacobi (colour < 0) and Interior are template parameters: the SOR-only terms and the border
// tests fold away where they do not apply (a few percent of a 128^3 Jacobi sweep).
template <bool Jacobi, bool Interior>
__device__ inline void update_voxel(const SweepArgs &a, int v, int x, int y, int z,
                                    const auto &load) {
  if (!Jacobi && mri::detail::motion::voxel_colour(x, y, z, a.colours) != a.colour)
    return;
  float jv[9];
#pragma unroll
  for (int c = 0; c < 9; ++c)
    jv[c] = __ldg(a.j[c] + v);
  float out[3];
  clg_update<Interior>(jv, load, VoxelPosition<int>{{x, y, z}, {a.d.nx, a.d.ny, a.d.nz}}, a.alpha,
                       a.gamma, a.omega, Jacobi, out);
  for (int c = 0; c < 3; ++c)
    a.dst[c][v] = out[c];
}

// Whether the block's x-y tile lies off the volume's x and y faces (blocks are kTileX x kTileY).
__device__ inline bool interior_tile(const Dims &d) {
  return blockIdx.x > 0 && (blockIdx.x + 1) * kTileX < d.nx && blockIdx.y > 0 &&
         (blockIdx.y + 1) * kTileY < d.ny;
}

template <bool Jacobi>
__global__ void __launch_bounds__(kTileX *kTileY, 4) sweep_cached(SweepArgs a) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= a.d.nx || y >= a.d.ny)
    return;
  const int sy = a.d.nx, sz = a.d.nx * a.d.ny; // voxel indices < 2^31 (checked on the host)
  const bool interior = interior_tile(a.d);
#pragma unroll
  for (int k = 0; k < kCachedSlices; ++k) {
    const int z = blockIdx.z * kCachedSlices + k;
    if (z >= a.d.nz)
      return;
    const int v = x + sy * y + sz * z;
    const auto load = [&](int c, int dx, int dy, int dz) {
      return __ldg(a.src[c] + v + dx + sy * dy + sz * dz);
    };
    if (interior && z > 0 && z + 1 < a.d.nz)
      update_voxel<Jacobi, true>(a, v, x, y, z, load);
    else
      update_voxel<Jacobi, false>(a, v, x, y, z, load);
  }
}

constexpr int kHaloX = kTileX + 2, kHaloY = kTileY + 2;

template <bool Jacobi>
__global__ void __launch_bounds__(kTileX *kTileY, 6) sweep_shared(SweepArgs a) {
  __shared__ float tile[3][3][kHaloY][kHaloX]; // [slot = z mod 3][component][y][x]
  const int tx = threadIdx.x, ty = threadIdx.y, tid = tx + kTileX * ty;
  const int x0 = blockIdx.x * kTileX, y0 = blockIdx.y * kTileY, x = x0 + tx, y = y0 + ty;
  const int z0 = blockIdx.z * kChunk, z1 = min(z0 + kChunk, a.d.nz);
  const int sy = a.d.nx, sz = a.d.nx * a.d.ny;
  const auto load_slice = [&](int z) {
    if (z < 0 || z >= a.d.nz)
      return;
    for (int i = tid; i < kHaloX * kHaloY; i += kTileX * kTileY) {
      const int hx = i % kHaloX, hy = i / kHaloX, gx = x0 + hx - 1, gy = y0 + hy - 1;
      const bool inside = gx >= 0 && gx < a.d.nx && gy >= 0 && gy < a.d.ny;
      for (int c = 0; c < 3; ++c)
        tile[z % 3][c][hy][hx] = inside ? __ldg(a.src[c] + gx + sy * gy + sz * z) : 0.0f;
    }
  };
  load_slice(z0 - 1);
  load_slice(z0);
  for (int z = z0; z < z1; ++z) {
    load_slice(z + 1);
    __syncthreads();
    if (x < a.d.nx && y < a.d.ny) {
      const int slot[3] = {(z + 2) % 3, z % 3, (z + 1) % 3}; // z - 1, z, z + 1 (z >= 0)
      const auto load = [&](int c, int dx, int dy, int dz) {
        return tile[slot[dz + 1]][c][ty + 1 + dy][tx + 1 + dx];
      };
      update_voxel<Jacobi, false>(a, x + sy * y + sz * z, x, y, z, load);
    }
    __syncthreads(); // slot (z - 1) % 3 is overwritten by the next iteration's load
  }
}

} // namespace

void sweep(const DeviceTensor &j, const DeviceField &src, DeviceField &dst, int colour, int colours,
           float alpha, float gamma, float omega, MotionMemory memory, cudaStream_t s) {
  if (src[0].grid.voxels() >= (std::int64_t{1} << 31))
    throw Unsupported("motion sweep: volumes of 2^31 voxels or more need 64-bit indexing");
  SweepArgs a{{}, {}, {}, Dims(src[0].grid), colour, colours, alpha, gamma, omega};
  for (int c = 0; c < 9; ++c)
    a.j[c] = j[c].data();
  for (int c = 0; c < 3; ++c)
    a.src[c] = src[c].data(), a.dst[c] = dst[c].data();
  const dim3 block(kTileX, kTileY);
  const unsigned bx = (a.d.nx + kTileX - 1) / kTileX, by = (a.d.ny + kTileY - 1) / kTileY;
  const dim3 shared_grid(bx, by, (a.d.nz + kChunk - 1) / kChunk),
      cached_grid(bx, by, (a.d.nz + kCachedSlices - 1) / kCachedSlices);
  const bool jacobi = colour < 0;
  if (memory == MotionMemory::SharedTiles)
    (jacobi ? sweep_shared<true> : sweep_shared<false>)<<<shared_grid, block, 0, s>>>(a);
  else
    (jacobi ? sweep_cached<true> : sweep_cached<false>)<<<cached_grid, block, 0, s>>>(a);
  MRI_CUDA_CHECK(cudaGetLastError());
}

} // namespace mri::cuda::detail::motion
