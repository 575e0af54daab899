#pragma once
// 3D motion estimation for image sequences: Bruhn, Weickert and Schnoerr's combined local-global
// (CLG) optical flow in 3D with the volume-conserving divergence term of the GPU motion paper
// ("Efficient motion estimation of medical image sequences using GPUs", section 3.3;
// docs/architecture.md, Sources), on the CPU (OpenMP, float32 or a float64 reference) or the GPU.
//
// The displacement field w = (u, v, w) maps the fixed frame onto the moving one, in voxels:
//   moving(x + w(x)) ~= fixed(x).
// It minimises (the GPU motion paper's eqs. 4 and 10)
//   E(w) = sum_x (w, 1)^T J_rho (w, 1) + alpha sum |grad u|^2 + |grad v|^2 + |grad w|^2
//          + gamma sum (div w)^2,
// J_rho = K_rho * (grad3 I grad3 I^T), grad3 I = (Ix, Iy, Iz, It): the motion tensor, 10 unique
// products per voxel smoothed by a separable Gaussian of standard deviation rho. The
// Euler-Lagrange equations (its eq. 6 plus gamma grad(div w)) are solved per warp by Jacobi (as
// the paper does), red-black SOR or multigrid (Bruhn et al.'s full multigrid with V-cycles: the
// default on both backends, to a stated residual tolerance), inside repeated warps of the moving
// frame and a coarse-to-fine pyramid.
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "mri/image.hpp"
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace mri {

enum class MotionSolver {
  Jacobi,      // the GPU motion paper's: every update from the previous sweep (one pass per sweep)
  RedBlackSor, // over-relaxed block Gauss-Seidel in colour passes: red-black, or 4 colours when
               // gamma > 0 (the divergence couples diagonal neighbours, which red-black leaves in
               // one colour); `iterations` passes of all colours per warp
  Multigrid,   // Bruhn et al. (2005, 2006): full multigrid, then V-cycles until the Euler-Lagrange
               // residual is below `tolerance` (MotionMultigridOptions); smoother: the SOR's block
               // Gauss-Seidel (omega 1); V-cycles that stall hand over to conjugate gradients
               // (MotionReport::solver_switches). CPU and GPU (the same cycle)
  Auto         // Multigrid on both backends
};

// The multigrid solver's settings (MotionSolver::Multigrid). Coarse grids halve each extent
// (rounding up) down to extent 2-3, the coarse operators rediscretised (tensor averaged over the
// 2x2x2 children, alpha and gamma / 4 per level), residuals restricted by averaging and
// corrections prolongated trilinearly (each coarse voxel at its children's centre).
struct MotionMultigridOptions {
  int max_cycles = 20;    // V-cycles and CG iterations per warp at most, together (the full
                          // multigrid pass counts as one); >= 1
  int pre_smoothing = 2;  // block Gauss-Seidel passes (all colours) before the coarse correction
  int post_smoothing = 2; // and after; each >= 0, together >= 1
  bool full = true;       // start each warp with a full-multigrid pass (else V-cycles only)
  bool krylov = false;    // then conjugate gradients preconditioned by one V-cycle per iteration
                          // (a symmetric V-cycle: restriction = prolongation's transpose, reversed
                          // post-smoothing) instead of plain V-cycles; needs pre == post smoothing
};

// The GPU motion paper's two memory variants of the stencil kernels (GPU only; the CPU ignores it).
enum class MotionMemory {
  Cached,     // plain loads through L1/L2 (the paper's choice on Fermi, where caches won)
  SharedTiles // x-y tiles with halos in shared memory, z-slices streamed through them
};

// The spatial derivatives of the fixed frame (the GPU motion paper's section 4.1: forward
// differences, zero at the border).
enum class MotionDerivative {
  Forward, // the paper's: first-order, centred half a voxel off It, biases sub-voxel flow
  Central  // second-order, centred on the voxel like It: lower endpoint error, same cost
};

// The data term's penalty of the linearised brightness-constancy residual
// e(w) = (w - w0, 1)^T J_rho (w - w0, 1) (w0: the warp's starting field).
enum class MotionDataTerm {
  Quadratic,  // e itself: the seed's CLG (Bruhn et al. 2005), every residual weighted alike
  Charbonnier // psi(e) = 2 eps^2 (sqrt(1 + e / eps^2) - 1), the robust CLG of Bruhn et al. 2005
              // (section 5) as Brox et al. 2004 penalise their data term: residuals above eps
              // (edges that no smooth field warps onto each other) weigh like |residual|, not its
              // square. Minimised by lagged diffusivity: `reweightings` linear solves per warp,
              // each with the tensor weighted by psi'(e) = 1 / sqrt(1 + e / eps^2) at the field
              // of the previous solve (the weight -> 1, the quadratic term, as eps -> infinity)
};

struct MotionOptions {
  double alpha = 0.03; // smoothness weight (intensities scaled to ~[0, 1]); >= 0
  double gamma = 0.0;  // volume-conserving (divergence) weight; >= 0
  double rho = 1.0;    // std of the tensor's Gaussian (voxels); kernel 2 ceil(3 rho) + 1 <= 15
  double sigma = 0.5;  // std of the frames' pre-smoothing (voxels); same kernel bound
  int iterations = 30; // solver iterations per warp (Jacobi sweeps; SOR: all colours once)
  int warps = 3;       // linearisations per pyramid level
  int levels = 3;      // pyramid levels (1 = no pyramid); each halves the grid (odd: ceil)
  double omega = 1.5;  // SOR over-relaxation in (0, 2) (1.5: fastest of 1.0/1.5/1.8/1.9,
                       // docs/motion.md); Jacobi ignores it
  MotionSolver solver = MotionSolver::Auto;
  // Multigrid stops a warp's solve at ||b - A w|| <= tolerance ||b|| (A w = b: the warp's linear
  // Euler-Lagrange system, norms over all voxels and components); 0 runs every cycle. >= 0.
  double tolerance = 1e-3;
  MotionMultigridOptions multigrid;
  MotionDataTerm data_term = MotionDataTerm::Quadratic;
  // Charbonnier: the residual scale (intensity units, frames ~[0, 1]); > 0. 0.03: docs/motion.md's
  // measurement (smaller helps expansion, costs contraction and large rotations).
  double epsilon = 0.03;
  // Charbonnier: weighted linear solves per warp; >= 1. The weights are recomputed at every warp
  // anyway; on docs/motion.md's phantom pairs more solves per warp changed no EPE by more than
  // 0.001 voxels (a large rotation at small eps gains from 2).
  int reweightings = 1;
  MotionMemory memory = MotionMemory::Cached;
  MotionDerivative derivative = MotionDerivative::Central;
  Backend backend = Backend::Cpu;
  Precision precision = Precision::Float32; // Float64: the CPU reference (Cuda: Unsupported)
};

// The largest Gaussian kernel (the GPU motion paper's 15 taps): rho and sigma <= 7/3.
inline constexpr int kMaxGaussianSize = 15;
// The smallest extent a pyramid level may have along any axis (a 2D grid, nz = 1: along x and y;
// its field's z-component is 0: one slice has no z-derivative and no z-neighbours).
inline constexpr std::int64_t kMinLevelExtent = 4;

struct DisplacementField {
  RealVolume u, v, w; // voxels along x, y, z
  DisplacementField() = default;
  explicit DisplacementField(const Grid &grid) : u(grid), v(grid), w(grid) {}
  const Grid &grid() const { return u.grid(); }
};

// Per-stage wall time of the last call (CPU: steady clock; GPU: CUDA events), milliseconds.
struct MotionReport {
  double transfer_ms = 0;  // frames in and the field out (GPU: host <-> device copies)
  double pyramid_ms = 0;   // down-sampling and pre-smoothing
  double gradients_ms = 0; // spatial derivatives of the fixed frame per level
  double warp_ms = 0;      // trilinear warping of the moving frame
  double tensor_ms = 0;    // the 10 products of (Ix, Iy, Iz, It)
  double gaussian_ms = 0;  // K_rho * (the 10 products)
  double solver_ms = 0;    // the linear solver's sweeps
  double total_ms = 0;     // wall clock of the call: the stages, transfers, validation, allocation
  std::int64_t solver_sweeps =
      0; // solver passes over a level (Jacobi: 1 per iteration, SOR: 2 or 4; multigrid: the
         // finest grid's colour passes and residual evaluations)
  std::int64_t solver_cycles = 0; // multigrid: V-cycles over all levels and warps (0 otherwise)
  // The largest relative Euler-Lagrange residual ||b - A w|| / ||b|| (MotionOptions::tolerance)
  // left by any warp's solve at any pyramid level, for every solver (0 where b = 0 and w = 0).
  double solver_residual = 0;
  // Multigrid: the warps' solves whose V-cycles stalled or diverged (a cycle that left 0.9 of the
  // residual or more) and that conjugate gradients preconditioned by the symmetric V-cycle
  // finished instead (as MotionMultigridOptions::krylov), from the better of the last two iterates.
  std::int64_t solver_switches = 0;
  // Solves stopped at a non-finite residual (float overflow): each returned the last iterate
  // whose residual was finite (solver_residual counts that one). 0 on any sane input.
  std::int64_t solver_nonfinite = 0;
  MotionSolver solver = MotionSolver::Auto; // the solver that ran (Auto resolved)
  Backend backend = Backend::Cpu;
};

class MotionBackend; // lib/interface/mri_backend/motion_backend.hpp

// A plan for one volume size and one set of options (FINUFFT-style: made once, run many times).
// Throws InvalidArgument for bad options (naming the option and value) or a grid too small for
// the pyramid; Unsupported for Backend::Cuda without a device, or Cuda with Float64. options()
// holds the backend and solver resolved.
class MotionEstimator {
public:
  MotionEstimator(const Grid &grid, const MotionOptions &options);
  ~MotionEstimator();
  MotionEstimator(MotionEstimator &&) noexcept;
  MotionEstimator &operator=(MotionEstimator &&) noexcept;

  // The field with moving(x + w(x)) ~= fixed(x). Throws InvalidArgument if a frame's grid differs
  // from the plan's or a voxel is not finite.
  DisplacementField estimate(const RealVolume &fixed, const RealVolume &moving);
  // Frame k to frame k+1 for every k (frames.size() - 1 fields); each frame is prepared (and on
  // the GPU uploaded) once. Throws as estimate(), and for fewer than two frames.
  std::vector<DisplacementField> estimate_sequence(std::span<const RealVolume> frames);
  // fields[k] = estimate(frames[k], reference) for every k (the fields equal those calls'): every
  // frame registered to one reference, the moving frame of each pair (motion-compensated
  // reconstruction's direction: reference(x + w_k(x)) ~= frames[k](x)). The reference is prepared
  // (on the GPU uploaded, its pyramid built) once; report() covers all pairs (stage times and
  // cycles summed, the largest residual), pair_reports()[k] pair k alone (the first with the
  // reference's preparation). Throws as estimate(), and for no frames.
  std::vector<DisplacementField> estimate_to_reference(std::span<const RealVolume> frames,
                                                       const RealVolume &reference);
  // estimate_to_reference's report per pair (empty before its first call).
  const std::vector<MotionReport> &pair_reports() const { return pair_reports_; }

  const MotionOptions &options() const { return options_; }
  const Grid &grid() const { return grid_; }
  const MotionReport &report() const { return report_; }

private:
  Grid grid_;
  MotionOptions options_;
  MotionReport report_;
  std::vector<MotionReport> pair_reports_;
  std::unique_ptr<MotionBackend> backend_;
};

// ---- metrics ----------------------------------------------------------------------------------
// Mean |w - w_true| (voxels) over the voxels at least `border` voxels from every face (content
// that moves in across a face cannot be estimated; an axis of one voxel, a 2D field's z, has none). Throws InvalidArgument if the grids differ or
// no voxel is left.
double average_endpoint_error(const DisplacementField &w, const DisplacementField &truth,
                              std::int64_t border = 0);
// Mean angle (degrees) between the space-time vectors (u, v, w, 1) and (u_t, v_t, w_t, 1), same
// voxels as average_endpoint_error.
double average_angular_error(const DisplacementField &w, const DisplacementField &truth,
                             std::int64_t border = 0);

// det(I + grad w) by central differences (one-sided at the border): the local volume ratio.
struct JacobianStats {
  double fraction_nonpositive = 0; // voxels with det <= 0 (folding)
  double std_log_det = 0;          // std of log det over the voxels with det > 0
  double mean_det = 0;
};
JacobianStats jacobian_stats(const DisplacementField &w);

// ---- synthetic sequences with known motion ----------------------------------------------------
enum class SyntheticMotion {
  Translation, // constant (dx, dy, dz) = amplitude * (1, -0.6, 0.4)
  Rotation,    // about the z axis through the centre, amplitude = voxels of motion at radius n/4
  Swirl,       // divergence-free: w = curl of a Gaussian-windowed stream function (peak ~amplitude)
  Compressive  // radial contraction (div < 0) in a Gaussian window (peak ~amplitude)
};
// The ground-truth field of a motion on a grid.
DisplacementField synthetic_field(const Grid &grid, SyntheticMotion motion, double amplitude);
// A smooth random texture of mean 0.5 and std ~0.19 (12 random plane waves, wavelengths 5-14
// voxels), reproducible from seed.
RealVolume textured_volume(const Grid &grid, std::uint64_t seed);
// The 3D modified Shepp-Logan phantom's magnitude on the grid (mri::Phantom), plus a faint
// texture so the flat interiors carry some gradient.
RealVolume shepp_logan_volume(const Grid &grid);
// The moving frame whose true displacement field is `field`: moving(x + field(x)) = fixed(x),
// built by trilinear warping of fixed with the inverse field (fixed-point iteration, exact while
// |grad field| < 1). Clamp-to-edge outside the volume.
RealVolume apply_motion(const RealVolume &fixed, const DisplacementField &field);
// A beating sequence (the GPU motion paper's cardiac case in miniature): frames[0] = first,
// frames[k + 1] = apply_motion(frames[k], truth[k]), truth[k] the Compressive field of amplitude
// +amplitude for even k (contraction) and -amplitude for odd k (relaxation). Throws
// InvalidArgument for fewer than 2 frames or a non-finite amplitude.
struct SyntheticSequence {
  std::vector<RealVolume> frames;
  std::vector<DisplacementField> truth; // frames.size() - 1 fields, frame k to frame k + 1
};
SyntheticSequence beating_sequence(const RealVolume &first, int frames, double amplitude);
// Adds N(0, std^2) noise; reproducible from seed. Throws InvalidArgument if std < 0 or not finite.
void add_noise(RealVolume &volume, double std, std::uint64_t seed);
// Trilinear sample of `volume` at x + field(x) for every voxel x (clamp-to-edge): what the
// estimator's warping stage computes.
RealVolume warp(const RealVolume &volume, const DisplacementField &field);

// ---- MRI frames ------------------------------------------------------------------------------
// |image| / max |image| (intensities of order 1, as the default options assume).
RealVolume normalised_magnitude(const Image &image);
// The k-space of the object moved by d voxels: samples times exp(-i 2 pi k.d / n) (the shift
// theorem with the forward F's sign, MISSION.md conventions): moving(x) = object(x - d), whose
// displacement field is d. Throws InvalidArgument if samples and trajectory differ in size or d
// is not finite.
void shift_kspace(std::vector<cfloat> &samples, const Trajectory &trajectory, const Grid &grid,
                  const std::array<double, 3> &d);

// An RGB PNG of the central z slice: the frame in gray with the in-plane flow as arrows (one per
// arrow_step voxels) beside the flow's colour code (hue = direction, brightness = magnitude);
// each voxel drawn as scale x scale pixels. Throws InvalidArgument (grids, scale 1..16,
// arrow_step >= 1) or IoError.
void write_motion_png(const std::filesystem::path &path, const RealVolume &frame,
                      const DisplacementField &w, int scale = 4, int arrow_step = 6);

} // namespace mri
