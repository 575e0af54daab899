#pragma once
// The multigrid solver of one warp's linear Euler-Lagrange system A w = b (mri/motion.hpp,
// MotionSolver::Multigrid): Bruhn, Weickert, Kohlberger and Schnoerr, "A multigrid platform for
// real-time motion computation with discontinuity-preserving variational methods" (IJCV 2006) and
// Bruhn et al., "Variational optical flow computation in real time" (IEEE TIP 2005): full
// multigrid, then V-cycles on the full field until the residual meets the tolerance.
//
// Grids: cell-centred, each coarse voxel the mean of its 2x2x2 children (one child along an axis
// of odd extent at its end). Coarse operators are rediscretised: J3 averaged over the children,
// alpha and gamma divided by 4 (the energy's smoothness and divergence sums scale with the voxel
// size squared against the data term's per-voxel sum); a coarse level solves for the correction
// e, its right-hand side (the restricted residual) stored as minus the tensor's time column so the
// fine smoother's clg_update runs unchanged. Restriction: averaging (or, with krylov, the
// prolongation's transpose); prolongation: trilinear with coarse voxel i at its children's centre
// (children_position). Smoother: the SOR's multicolour block Gauss-Seidel passes at omega = 1
// (with krylov, post-smoothing in the reverse colour order), deterministic. Optionally (krylov)
// the V-cycle preconditions conjugate gradients.
//
// Safeguards (docs/motion.md, "Solver: multigrid"): a V-cycle that does not lower the residual to
// below kStallRatio of the previous one hands the rest of the solve to the conjugate gradients
// preconditioned by the symmetric V-cycle (from the better of the two iterates); a non-finite
// residual ends the solve at the last iterate with a finite one.
#include <cstdint>
#include <vector>

#include "cpu_stages.hpp"
#include "mri_backend/motion_multigrid_rule.hpp" // MultigridResult, the safeguards' decisions

namespace mri::detail::motion {

// Fine voxel i's position on the coarse grid (in coarse voxels) for the prolongation and its
// transpose: coarse voxel k sits at the centre of its children 2k and 2k + 1, fine position
// 2k + 1/2, as the children's-mean restriction places it. On even extents this equals the
// pyramid's field-of-view-aligned resample_position; on odd ones that differs by up to half a
// coarse voxel at the far end, and the V-cycles built on it diverged on the contracting
// Shepp-Logan volume at 17, 25, 33, 35, 49, 65 and 27x33x25 (docs/motion.md). Exact in float
// (i / 2 and 1/4 are binary fractions), so the CPU and the GPU (motion_multigrid.cu) agree bitwise.
template <class T> inline T children_position(std::int64_t i) { return T(i) / T(2) - T(0.25); }

template <class T> class Multigrid {
public:
  Multigrid(const Grid &fine, const MotionMultigridOptions &options);
  // Solves A w = b in place from the w given (the warp's start), b = -(j's time column), to
  // ||b - A w|| <= tolerance ||b|| or options.max_cycles V-cycles.
  MultigridResult solve(const Tensor<T> &j, Field<T> &w, T alpha, T gamma, double tolerance);

private:
  struct Level {
    Grid grid;
    Tensor<T> j;  // coarse levels: averaged J3; time column = -(restricted residual)
    Field<T> e;   // coarse levels: the correction
    Field<T> r;   // the residual (every level)
    T alpha{}, gamma{};
  };
  const Tensor<T> &tensor(std::size_t l) const { return l == 0 ? *fine_j_ : levels_[l].j; }
  Field<T> &unknown(std::size_t l) { return l == 0 ? *fine_w_ : levels_[l].e; }
  void smooth(std::size_t l, int passes, bool reverse);
  // Residual of level l restricted into level l + 1's right-hand side, its correction zeroed.
  void restrict_residual(std::size_t l);
  void restrict_residual_into(const Volume<T> &fine, Volume<T> &coarse, T sign) const;
  void v_cycle(std::size_t l);
  void full_multigrid();
  // z = (one V-cycle from 0 on A z = r_): the conjugate gradients' preconditioner.
  void precondition();
  // Conjugate gradients on A w = b preconditioned by the V-cycle, from the residual in levels_[0].r.
  void conjugate_gradients(MultigridResult &result, double tolerance, double b2);
  // The V-cycles from w, then the switch to conjugate gradients if they stall (the safeguards).
  void v_cycles(MultigridResult &result, double tolerance, double b2);
  // The V-cycle made symmetric (restriction = the prolongation's transpose, equal pre- and
  // post-smoothing, reversed post-smoothing), the conjugate gradients' buffers allocated.
  void make_symmetric();
  double measure(double b2);

  MotionMultigridOptions options_;
  bool symmetric_ = false;  // this solve's V-cycle is the symmetric one (krylov, or switched)
  int pre_ = 0, post_ = 0;  // this solve's smoothing passes
  Field<T> last_;           // w before the last step: the safeguards' way back
  std::vector<Level> levels_;
  const Tensor<T> *fine_j_ = nullptr;
  Field<T> *fine_w_ = nullptr;
  std::int64_t fine_passes_ = 0;
  Tensor<T> pre_j_;   // the preconditioner's finest tensor: J3, time column -r_ (krylov only)
  Field<T> r_, z_, p_, q_; // conjugate gradients' vectors (krylov only)
};

} // namespace mri::detail::motion
