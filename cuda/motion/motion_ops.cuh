#pragma once
// The CUDA motion stages (Bruhn et al.'s combined local-global optical flow with the
// volume-conserving term of the GPU motion paper: mri/motion.hpp, docs/architecture.md; one file
// each, cuda/README.md maps them) as host launchers on device-resident float volumes. Every launch
// is checked (MRI_CUDA_CHECK(cudaGetLastError())).
#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <vector>

#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "mri/detail/motion_stencil.hpp"
#include "mri/grid.hpp"
#include "mri/motion.hpp"

namespace mri::cuda::detail::motion {

using mri::detail::motion::kChannels;

// A float volume in device memory (movable, owning).
struct DeviceVolume {
  Grid grid;
  DeviceBuffer<float> d;
  DeviceVolume() = default;
  explicit DeviceVolume(const Grid &g) : grid(g), d(static_cast<std::size_t>(g.voxels())) {}
  float *data() { return d.get(); }
  const float *data() const { return d.get(); }
};
using DeviceField = std::array<DeviceVolume, 3>;
using DeviceTensor = std::array<DeviceVolume, kChannels>;

// Extents as the kernels take them.
struct Dims {
  int nx, ny, nz;
  explicit Dims(const Grid &g) : nx(int(g.nx())), ny(int(g.ny())), nz(int(g.nz())) {}
  __host__ __device__ long long voxels() const { return (long long)nx * ny * nz; }
};

// motion_gaussian.cu: the three kernels' taps (anti-alias, sigma, rho) into __constant__ memory
// (the paper's section 4.2: the kernel in constant memory, broadcast to the warp), then the
// separable passes.
void set_gaussian_taps(const std::array<std::vector<double>, 3> &taps);
void gaussian(DeviceVolume &f, DeviceVolume &tmp, int kernel, cudaStream_t s);
// The first `channels` of j smoothed alike, a launch per axis for all of them (tmp: scratch of
// j's grid, its buffers swapped with j's as gaussian's).
void gaussian_channels(DeviceTensor &j, int channels, DeviceTensor &tmp, int kernel,
                       cudaStream_t s);
// motion_gradients.cu
void gradients(const DeviceVolume &f, DeviceField &g, bool central, cudaStream_t s);
// motion_warp.cu: trilinear warping (the paper's section 4.4) and the pyramid's resampling
void warp(const DeviceVolume &f, const DeviceField &w, DeviceVolume &out, cudaStream_t s);
void resample(const DeviceVolume &f, DeviceVolume &out, float scale, cudaStream_t s);
// motion_tensor.cu: the 10 products, the per-warp fold and the Charbonnier reweighting
void tensor(const DeviceField &g, const DeviceVolume &fixed, const DeviceVolume &moved,
            DeviceTensor &j, cudaStream_t s);
void fold(DeviceTensor &j, const DeviceField &w, cudaStream_t s);
// j = psi'(e) data on channels kXX..kZT (MotionDataTerm::Charbonnier; lib/motion/cpu_stages.hpp's
// charbonnier_reweight)
void charbonnier_reweight(const DeviceTensor &data, const DeviceField &w0, const DeviceField &w,
                          DeviceTensor &j, float inv_eps2, cudaStream_t s);
// motion_solver.cu: one Jacobi sweep (colour < 0, src -> dst) or SOR colour pass (in place,
// src == dst), with the memory policy of the paper's section 4.3
void sweep(const DeviceTensor &j, const DeviceField &src, DeviceField &dst, int colour, int colours,
           float alpha, float gamma, float omega, MotionMemory memory, cudaStream_t s);
// Bytes a sweep moves at least: 9 tensor channels and 3 field components read, 3 written.
inline double sweep_bytes(const Grid &g) {
  return double(g.voxels()) * sizeof(float) * (9 + 3 + 3);
}

} // namespace mri::cuda::detail::motion
