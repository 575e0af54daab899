#pragma once
// The multigrid solver of a warp's linear Euler-Lagrange system A w = b on the device
// (MotionSolver::Multigrid): the CPU's scheme (lib/motion/multigrid.hpp: Bruhn et al. 2005, 2006;
// full multigrid, then V-cycles, or conjugate gradients preconditioned by one V-cycle with
// krylov) step for step, with the same grids, coarse operators (J3 averaged over the 2x2x2
// children, alpha and gamma / 4 per level), restriction (children's mean; krylov: the
// prolongation's transpose), trilinear prolongation, smoother (motion_solver.cu's colour passes
// at omega 1), cycle counts, residual ||b - A w|| / ||b|| and stopping rule. Every buffer is
// allocated once per plan (one plan per pyramid level, reused by every warp; the conjugate
// gradients' on their first use); the host reads back only the residual norm where the CPU tests
// it, and with krylov the conjugate gradients' scalars stay on the device. The CPU's safeguards
// (lib/motion/multigrid.hpp: a stalling V-cycle hands over to the conjugate gradients, a
// non-finite residual ends the solve at the last finite iterate) decided on the host alike.
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "motion_ops.cuh"
#include "mri_backend/motion_multigrid_rule.hpp"

namespace mri::cuda::detail::motion {

// The result and the safeguards' decisions: the CPU's (one definition for both backends).
using mri::detail::motion::continue_v_cycles;
using mri::detail::motion::kStallRatio;
using mri::detail::motion::MultigridResult;

// Sums of squares and inner products in float64, deterministic: one partial per block, summed
// by one block in a fixed order into a slot of a small device array the host reads back.
class DeviceReduction {
public:
  DeviceReduction() = default;
  explicit DeviceReduction(std::int64_t max_voxels);
  double *partials() { return partials_.get(); }
  double *slot(int k) { return sums_.get() + k; }
  // slots [0, count) of the sums, after the stream's work so far.
  void read(int count, double *out, cudaStream_t s) const;
  static constexpr int kSlots = 8;

private:
  struct PinnedFree {
    void operator()(double *p) const noexcept { cudaFreeHost(p); }
  };
  DeviceBuffer<double> partials_, sums_;
  // The sums' host copy in pinned memory: a read is one small DMA, without the pageable path's
  // staging (the multigrid reads once per V-cycle).
  std::unique_ptr<double, PinnedFree> pinned_;
};

// The voxel blocks of the reductions' kernels (one partial each).
inline constexpr int kReduceBlock = 256;
inline unsigned reduce_blocks(std::int64_t voxels) {
  return unsigned((voxels + kReduceBlock - 1) / kReduceBlock);
}

// ||r|| / ||b|| from the squares (lib/motion/cpu_stages.hpp's relative_residual: 0 when r = 0,
// infinite when only b = 0).
double relative(double r2, double b2);
// r = b - A w (b = -(j's time column)) and ||r||^2 into reduction slot `slot` (r may be null:
// only the norm); the report's solver_residual for every solver.
void residual(const DeviceTensor &j, const DeviceField &w, DeviceField *r, float alpha,
              float gamma, DeviceReduction &red, int slot, cudaStream_t s);
// ||b||^2 (j's time column) into reduction slot `slot`.
void rhs_norm2(const DeviceTensor &j, DeviceReduction &red, int slot, cudaStream_t s);

struct BlockLevels; // motion_multigrid.cu: the coarse levels cycled by one block

class DeviceMultigrid {
public:
  DeviceMultigrid(const Grid &fine, const MotionMultigridOptions &options, MotionMemory memory,
                  cudaStream_t s);
  // Solves A w = b in place from the w given, b = -(j's time column), to
  // ||b - A w|| <= tolerance ||b|| or options.max_cycles cycles (lib/motion/multigrid.cpp's solve).
  MultigridResult solve(const DeviceTensor &j, DeviceField &w, float alpha, float gamma,
                        double tolerance);

private:
  struct Level {
    Grid grid;
    DeviceTensor j; // coarse levels: channels kXX..kZT, J3 averaged, time column -(restricted r)
    DeviceField e;  // coarse levels: the correction
    DeviceField r;  // the residual (every level)
    float alpha = 0, gamma = 0;
  };
  const DeviceTensor &tensor(std::size_t l) const { return l == 0 ? *fine_j_ : levels_[l].j; }
  DeviceField &unknown(std::size_t l) { return l == 0 ? *fine_w_ : levels_[l].e; }
  void smooth(std::size_t l, int passes, bool reverse);
  void restrict_residual(std::size_t l);
  // coarse = sign * the restriction of fine, level l's grid onto level l + 1's.
  void restrict_into(std::size_t l, const DeviceVolume &fine, DeviceVolume &coarse, float sign);
  void v_cycle(std::size_t l);
  // Levels from block_from_ on (at most 16^3 voxels each) cycled by one block in one launch.
  BlockLevels block_levels();
  void v_cycle_in_block(std::size_t l);
  void full_multigrid();
  // ||b - A w||^2 on the finest level (the residual left in levels_[0].r), read by the host.
  double measure();
  void precondition();
  void conjugate_gradients(MultigridResult &result, double tolerance, double b2);
  // The V-cycles, then the switch to conjugate gradients if they stall (multigrid.cpp's v_cycles).
  void v_cycles(MultigridResult &result, double tolerance, double b2);
  // The symmetric V-cycle (krylov's) from here on, the conjugate gradients' buffers allocated.
  void make_symmetric();
  void save_w();    // last_ = w
  void restore_w(); // w = last_

  MotionMultigridOptions options_;
  bool symmetric_ = false; // this solve's V-cycle is the symmetric one (krylov, or switched)
  int pre_ = 0, post_ = 0; // this solve's smoothing passes
  DeviceField last_;       // w before the last step: the safeguards' way back
  MotionMemory memory_;
  cudaStream_t stream_;
  std::vector<Level> levels_;
  std::size_t block_from_ = 0; // the first level the one-block kernels cycle (size(): none)
  const DeviceTensor *fine_j_ = nullptr;
  DeviceField *fine_w_ = nullptr;
  std::int64_t fine_passes_ = 0;
  DeviceReduction reduction_;
  DeviceTensor pre_j_;             // krylov: J3 of the finest level, time column -r_
  DeviceField r_, z_, p_, q_;      // krylov: conjugate gradients' vectors
  std::vector<std::array<DeviceVolume, 2>> transpose_scratch_; // krylov: P^T's axis passes
  double host_[DeviceReduction::kSlots] = {};                   // the sums read back
};

} // namespace mri::cuda::detail::motion
