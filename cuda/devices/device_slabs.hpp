#pragma once
// Several GPUs in one process for the exact sums (ReconOptions::gpu.devices, docs/scaling.md): the
// output grid cut into voxel slabs, contiguous runs of planes along its last axis of extent > 1,
// one per listed device. Each slab has its own FhdPlan (a window of the grid: the whole grid's
// coordinates, so each voxel's sum is the one the whole-grid plan makes) and stream on its device;
// nothing crosses devices until each slab is copied into place on the first device.
// Plain C++ (no CUDA types): recon_cuda.cu and the GPU tests use it.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "recon/device_image.hpp"
#include "exact/fhd_backend.hpp"
#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace mri::cuda::detail {

// The devices of a reconstruction: `requested` (ReconOptions::gpu.devices) checked, or the current
// device when it is empty. InvalidArgument naming options.gpu.devices[i] for an ordinal this process
// does not see (with the device count), or a first entry other than the current device (the
// phases that do not split, and CG, run on the current device).
std::vector<int> recon_devices(const std::vector<int> &requested);

// Planes [first, first + planes) along `axis`, on `device`.
struct Slab {
  int device = 0;
  int axis = 0;
  std::int64_t first = 0, planes = 0;
};
// `grid` cut along its last axis of extent > 1 (x for a single voxel) into one slab per entry
// of `devices`, in order, as even as can be (the first ones one plane more); with more devices
// than planes the last ones get no planes.
std::vector<Slab> voxel_slabs(const Grid &grid, const std::vector<int> &devices);
// "z planes 0-63 on device 0, 64-127 on device 1" (slabs without planes: "none on device 2").
std::string describe(const std::vector<Slab> &slabs);

// The exact adjoint sum s(x) = sum_m c_m exp(+i 2 pi k_m . x / period) (FhdPlan's) on `out`, by
// voxel slabs over `devices` (the first: the current device, where c and the result live).
class SlabAdjoint {
public:
  // One FhdPlan per slab with planes, made on its device. Throws as FhdPlan.
  SlabAdjoint(const Trajectory &trajectory, const Grid &out, const Grid &period, const std::vector<int> &devices);
  ~SlabAdjoint();
  SlabAdjoint(const SlabAdjoint &) = delete;
  SlabAdjoint &operator=(const SlabAdjoint &) = delete;

  const std::vector<Slab> &slabs() const;
  // `count` coefficient vectors c (count x M on the first device, complete once the work queued
  // on `after` is done) -> count images (count x out.voxels() on the first device, coil-major,
  // fully written). Each device runs its slabs in turn on a host thread of its own (a device
  // listed twice never runs two plans at once: the constant-memory policies share one
  // __constant__ buffer per device); a slab on another device copies c over first. Blocks
  // until every slab is in place. seconds[i] += the wall time of slab i (uploads, sums, copy).
  void adjoint_coils(KernelPolicy policy, const cfloat *c, int count, cfloat *result, StreamHandle after,
                     std::span<double> seconds);

  struct Part;

private:
  std::vector<Slab> slabs_;
  std::vector<std::unique_ptr<Part>> parts_; // one per slab, in order; null for a slab without planes
  std::int64_t voxels_ = 0, plane_voxels_ = 0;
  std::size_t samples_ = 0;
};

// The coefficients of the exact Q's direct sum on its half grid (q_half_grid, normal_common.cuh),
// shared by QOperator (toeplitz_cuda.cu) and slab_q so that both sum the same values:
// c_m = w_m exp(-i 2 pi k_hm s / n_h), s = floor(n_h / 2), h the last axis of `grid` of extent > 1
// (c_m = w_m without one), moving the origin of an FhdPlan on the half grid (n_h + 1 planes along
// h, period `grid`) so that its planes are the offsets d_h = -n_h .. 0. w: checked weights, empty
// for all ones. Writes trajectory.size() values into c (current device), ordered on `stream`;
// returns when they are written.
void q_half_coefficients(const Trajectory &trajectory, const std::vector<float> &w, const Grid &grid, cfloat *c,
                         StreamHandle stream);

// Whether the exact Q of `grid` under `policy` is a sum of an F^H D policy (slab_q) rather than
// the tensor-core Dirichlet spectrum (3D, KernelPolicy::Auto: toeplitz_cuda.cu's choice;
// slab_dirichlet_spectrum).
bool q_sum_splits(const Grid &grid, KernelPolicy policy);

// The exact Q(d) = sum_m w_m exp(+i 2 pi k_m . d / n) on its half grid (q_half_grid: offsets
// d_h <= 0 along the last axis h; QOperator's device-Q constructor completes the rest), the
// same half-grid sum as QOperator's own (q_half_coefficients), its planes split by slabs
// over `devices`, on the first device. Bitwise what the one-device operator sums wherever the
// policy's per-voxel order does not depend on the slab. weights: empty (all ones) or one per sample, finite and >= 0 (InvalidArgument otherwise,
// as QOperator). seconds[i] += slab i's wall time. Also returns the slabs of the half grid.
struct SlabQ {
  DeviceImage q;
  std::vector<Slab> slabs;
};
SlabQ slab_q(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
                   KernelPolicy policy, const std::vector<int> &devices, StreamHandle stream,
                   std::span<double> seconds);

// The Toeplitz spectrum of the exact Q by the tensor-core Dirichlet sum (what QOperator
// makes on one device for 3D grids under KernelPolicy::Auto), its fz planes split over `devices`
// in slabs of whole kernel tiles (dirichlet_spectrum_plane_block() planes), each device's planes
// copied into the host spectrum (what QOperator's spectrum constructor and the Q cache
// take). Within float rounding of the one-device spectrum: the sum adds atomically, and its
// blocks split the samples by how many frequency blocks a slab has. weights as slab_q.
// seconds[i] += slab i's wall time (its uploads, its planes, their download).
struct SlabSpectrum {
  std::vector<float> spectrum;
  std::vector<Slab> slabs; // of K's fz planes
};
SlabSpectrum slab_dirichlet_spectrum(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
                                     const std::vector<int> &devices, std::span<double> seconds);

} // namespace mri::cuda::detail
