#pragma once
// Motion-compensated image reconstruction (MCIR; docs/dynamic.md, "Motion-compensated
// reconstruction"): one image of a reference motion state from the data of every state,
//   E = [P_s F S_c W_s]  over states s and coils c,
// W_s the warp of the reference image to state s by its displacement field, solved by conjugate
// gradients on the normal equations
//   (sum_s W_s^H N_s W_s + lambda R^H R) x = sum_s W_s^H b_s,
// or, with sparse terms (ReconOptions::solver.terms: wavelet, TV, l1; mri/sparse.hpp), by the
// proximal solvers of reconstruct (mri/proximal_solvers.hpp: FISTA, ADMM or primal-dual, chosen as
// there) on the same normal operator and right-hand side:
//   min_x 0.5 ||E x - y||_W^2 + 0.5 lambda ||R x||^2 + sum_i lambda_i R_i(T_i x),
// N_s = sum_c S_c^H F_s^H W F_s S_c (state s's SENSE normal, its Toeplitz form) and
// b_s = sum_c S_c^H F_s^H W D_{s,c} (its adjoint data), as Batchelor et al. (MRM 2005, "Matrix
// description of general motion correction applied to multishot images") and Odille et al.
// (MRM 2008, GRICS) write the motion-corrected SENSE model.
//
// Field direction (the convention of mri::warp in mri/motion.hpp): the field u of state s maps
// each voxel v of state s to where its content sits in the reference,
//   x_s(v) = x_ref(v + u(v)),
// so mri::warp(reference, u) is the state. MotionEstimator::estimate(fixed = state s, moving =
// reference) returns that field (moving(v + w(v)) ~= fixed(v)). A field made for
// mri::apply_motion(reference, d) (state(v + d(v)) = reference(v)) is the inverse of u, not u.
//
// Thread safety: ImageWarp is an immutable value (copies share one plan): its forward and adjoint
// may run on any number of threads at once, each into its own output. reconstruct_motion_corrected
// is reentrant as reconstruct is on the CPU (each call builds its own operators).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mri/coils.hpp"
#include "mri/dynamic.hpp"
#include "mri/image.hpp"
#include "mri/kspace.hpp"
#include "mri/motion.hpp"
#include "mri/reconstruct.hpp"

namespace mri {

struct ImageWarpOptions {
  // Multiply the warped image by |det(I + grad u)| (central differences, one-sided at the border):
  // the change of variables that conserves the image's integral (mass) under compression and
  // expansion, x_s(v) = |det(I + grad u)(v)| x_ref(v + u(v)). Off: the intensity is carried as is.
  bool jacobian_weighting = false;
};

// W: complex images of the field's grid -> the same grid, (W x)(v) = J(v) x(v + u(v)), trilinear
// interpolation with clamp-to-edge (positions outside the volume take the edge value, as mri::warp:
// on a real image, W's forward equals mri::warp bitwise), J = 1 or the Jacobian weight above. On
// a 2D grid (nz = 1) the field's w component has no effect (the single z slice is clamped).
// The adjoint is the exact transpose of the interpolation (each state voxel's value scattered with
// its trilinear weights to the 8 (2D: 4) reference voxels it read), computed deterministically on
// the CPU: voxels are visited in slabs along the slowest axis, slabs at least twice the field's
// largest reach apart run in parallel (two colours), so each output voxel receives its terms in a
// fixed order for any thread count. A field that is zero everywhere is the identity (both
// directions copy: bitwise).
class ImageWarp {
public:
  // Throws InvalidArgument naming the component and voxel of a NaN or Inf ("field.u[12]").
  explicit ImageWarp(const DisplacementField &field, ImageWarpOptions options = {});
  // The identity on `grid` (no field stored).
  static ImageWarp identity(const Grid &grid);

  const Grid &grid() const;
  const ImageWarpOptions &options() const;
  bool is_identity() const;
  // The field (zero components where identity() made it) and, with jacobian_weighting, the
  // weight per voxel (else empty): what the CUDA warp uploads.
  const DisplacementField &field() const;
  const std::vector<float> &jacobian() const;

  // The operator core's form (mri/linear_operator.hpp). Throws InvalidArgument when an image is
  // not on grid() or out is the input itself; values are not checked (mri::forward(W, x) and
  // mri::adjoint(W, y) refuse NaN/Inf).
  using Domain = Image;
  using Range = Image;
  Image domain_vector() const { return Image(grid()); }
  Image range_vector() const { return Image(grid()); }
  void forward(const Image &reference, Image &state) const;
  void adjoint(const Image &state, Image &reference) const;

  struct Plan; // lib/mcir/image_warp.cpp

private:
  explicit ImageWarp(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}
  std::shared_ptr<const Plan> plan_;
};

struct MotionCorrectionOptions {
  ImageWarpOptions warp; // Jacobian weighting of every state's warp
};

// What reconstruct_motion_corrected adds to the ReconReport.
struct MotionCorrectionReport {
  int states = 0;
  int reference_states = 0;         // states whose field is absent or zero (no warp applied)
  std::vector<std::size_t> samples; // per state, samples per coil
  double warp_seconds = 0;          // making the warps (fields checked, Jacobian weights)
  double rhs_seconds = 0;           // sum_s W_s^H b_s (included in report.fhd_seconds)
  double cg_warp_seconds = 0;       // the CG's warps W_s and W_s^H (part of report.cg_seconds)
  std::string note;                 // where each part ran
};

struct MotionCorrectedResult : ReconResult {
  MotionCorrectionReport motion;
};

// The reference state's image from `states` (one KSpaceData per motion state, same coils; the
// trajectories and weights per state) and `fields` (one per state, reference -> state s as above;
// the reference's own zero or absent: a default-constructed DisplacementField). Coil maps: given
// (options.coils.sensitivities) or estimated once from all the states' data together
// (options.coils.estimation), compressed when options.coils.virtual_coils asks, exactly as
// reconstruct does on the states' data concatenated; with all fields zero the result is that
// reconstruction's to float rounding (tests/mcir). F^H D and Q per state as options.method
// (Auto: the NUFFT on the CPU) and options.nufft; solver.normal = Toeplitz; solver.lambda and
// regularizer as reconstruct (R^H R once, outside the state sum). Sparse terms (solver.terms, the
// single-image terms reconstruct takes; solver.proximal, solver.scaling as there): the proximal
// solver on the CPU, the report's solver, iterations, objective, step, lipschitz and data_scale
// as reconstruct fills them; with all fields zero the result is reconstruct's with the same terms
// on the states' data concatenated, to float rounding (tests/mcir).
// Where it runs: backend = Cpu, or sparse terms (Auto: the CPU, backend_note says why), all on the
// CPU. Cuda, or Auto with a usable GPU: the whole solve
// on the device: the maps' calibration images, each state's F^H D (and with the NUFFT its Q) by the
// public operators' device paths, then the warps, each state's device Toeplitz operator between
// the device coil maps, the state sum, R^H R and CG in the CUDA plugin (one image back);
// method = Nufft in float64 runs on the CPU (Auto) or is refused (Cuda). report.backend,
// report.device_note and motion.note say where each part ran. Before anything goes to the device
// the whole solve's memory (maps, every state's Toeplitz operator and warp, CG's images, the largest
// one-state phase; mri/detail/joint_device_memory.hpp) is estimated (report.device_bytes) and a
// problem above the device's free memory or gpu.memory_limit refused with Unsupported naming the
// bytes needed and available.
// Throws InvalidArgument for no states, fields.size() != states.size() ("fields.size()"), a field
// on another grid ("fields[s].grid()"), a NaN or Inf in a field ("fields[s].u[i]"), states of
// different coil counts ("states[s].coils()") or dimensions, weights given for some states only,
// and what reconstruct refuses in the options (a bad term, e.g. a negative lambda, named
// "options.solver.terms[i] (...)"; temporal terms and locally low rank, which need frames);
// Unsupported for backend = Cuda without a usable device, with method = Nufft in float64 or with
// sparse terms, gpu.devices, solver.normal = Direct and off-resonance correction.
MotionCorrectedResult reconstruct_motion_corrected(const std::vector<KSpaceData> &states, const Grid &grid,
                                                   const std::vector<DisplacementField> &fields,
                                                   const ReconOptions &options = {},
                                                   const MotionCorrectionOptions &motion = {});

// ---- The chain: states, motion, MCIR (docs/dynamic.md, "End to end") -----------------------

struct MotionChainOptions {
  // The CLG estimator that registers every state to the reference (state 0). backend = Auto: the
  // backend the states' reconstruction ran on.
  MotionOptions motion = [] {
    MotionOptions m;
    m.backend = Backend::Auto;
    return m;
  }();
  MotionCorrectionOptions correction; // the warps (Jacobian weighting)
  // Given fields (one per state, reference -> state s as reconstruct_motion_corrected takes them,
  // the reference's absent or zero): round 1 uses them instead of registering the states. Empty:
  // estimated.
  std::vector<DisplacementField> fields;
  // Alternating motion estimation and MCIR. Round 1: the fields (given, or the states registered to
  // state 0's reconstruction), then MCIR. Each further round warps the last MCIR image x to every
  // state (W_s x), refines that on the state's own data (refine_iterations CG iterations of its
  // SENSE normal equations N_s x_s = b_s started from W_s x; 0: W_s x as it is, which carries no
  // information beyond the last fields), registers the refined states to x (sharper than state 0's
  // own reconstruction) and solves MCIR again with the new fields. >= 1; 1: no alternation.
  // The alternation is no descent method: a round may fit the data worse than the one before
  // (too many refinement iterations bring the states' undersampling artefacts into the
  // registration). Each round's MCIR image is scored by its data fit with its fields,
  // ||W^(1/2) (E x - y)|| / ||W^(1/2) y|| (MotionChainRound::data_residual: the model MCIR fits,
  // on the same data every round), and the chain stops at the first round that does not lower it and
  // returns the round that fits best (MotionChainResult::best_round). On the breathing koosh of
  // tests/mcir and docs/dynamic.md a lower data residual went with a higher PSNR against the truth in
  // every run measured.
  int rounds = 1;
  int refine_iterations = 3; // >= 0
};

// One round of the chain.
struct MotionChainRound {
  // The fields' change from the previous round (round 1: from zero), voxels: the mean and the
  // largest over the moving states' voxels of |u_new - u_old|.
  double mean_field_change = 0;
  double max_field_change = 0;
  double mcir_residual = 0; // MCIR's last relative CG residual ||b - A x|| / ||b||
  // The MCIR image's data fit ||W^(1/2) (E x - y)|| / ||W^(1/2) y|| with this round's fields
  // (E = [P_s F S_c W_s]; the same data every round, so rounds compare), computed where MCIR ran
  // (host or device) from its kept per-state operators.
  double data_residual = 0;
  int mcir_iterations = 0;
  bool fields_given = false;   // round 1 with MotionChainOptions::fields
  double refine_seconds = 0;   // W_s x and its refinement on the states' data (rounds >= 2)
  double motion_seconds = 0;   // registration of the states
  double mcir_seconds = 0;
  std::vector<MotionReport> motion; // per moving state (states 1 ..), empty when given
};

struct MotionChainResult {
  FramesResult states;                  // the states' joint reconstruction (with the chain's maps)
  std::vector<DisplacementField> fields; // the best round's (state 0 absent)
  MotionCorrectedResult mcir;            // the best round's MCIR: the reference state from all data
  std::vector<MotionChainRound> rounds;  // the rounds that ran (fewer than asked where one fit worse)
  int best_round = 1;                    // 1-based: the round of fields and mcir
  // The coil step, made once for both reconstructions: the maps both used (of the virtual coils
  // where compressed; null: one coil without maps) and the compression both applied.
  std::shared_ptr<const CoilSensitivities> maps;
  std::optional<CoilCompression> compression;
  ReconReport coils; // acquired_coils, coils, coil_energy_kept, maps and coil_seconds of that step
  std::string note;  // what the chain dropped (terms across states) and which round it kept
};

// The chain on `states` (one KSpaceData per motion state, state 0 the reference): the coil maps
// estimated (or checked) and the coils compressed once from all states' data, exactly as
// reconstruct_frames and reconstruct_motion_corrected each would (both then take these maps: the
// result equals reconstruct_motion_corrected with MotionChainResult::maps given on the compressed
// states, tests/mcir); the states reconstructed jointly with options (sparse terms included);
// the states registered to state 0 (fixed = state s, moving = state 0: the field MCIR takes) unless
// fields are given; MCIR of state 0 with the options' spatial sparse terms (the terms across states,
// TV along the frames and locally low rank, are the states' only; the note says which were
// dropped), by CG without terms; then rounds - 1 alternations as MotionChainOptions says. Each
// state's F^H D and Q for MCIR are computed once for all rounds, where MCIR runs (on the device
// they stay there for the rounds' refinements and data residuals).
// Throws what reconstruct_frames and reconstruct_motion_corrected throw, InvalidArgument for
// rounds < 1 ("chain.rounds"), refine_iterations < 0, fewer than 2 states when fields are to be
// estimated.
MotionChainResult reconstruct_motion_chain(const std::vector<KSpaceData> &states, const Grid &grid,
                                           const ReconOptions &options = {}, const MotionChainOptions &chain = {});

} // namespace mri
