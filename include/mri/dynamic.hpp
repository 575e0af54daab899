#pragma once
// Joint reconstruction of a series of frames (motion states or time frames sorted from one
// acquisition: mri/frames.hpp sorts them), each frame its own data and trajectory on one grid:
//   min_X  sum_f 0.5 ||W_f^(1/2) (E_f x_f - s y_f)||^2 + 0.5 lambda ||R x_f||^2 + sum_terms lambda_i R_i(T_i X)
// with E_f = P_f F S_c (frame f's samples, the coils' maps shared by all frames), s the data scale
// and the terms over the stack X = (x_1 .. x_F) (mri/frame_terms.hpp): the spatial terms of
// reconstruct frame by frame (W, T, I), total variation along the frames (SparseTerm::axes =
// kFrameAxis; BART `-R T:1024:0:LAMBDA`) and locally low rank (SparsePenalty::LocallyLowRank; BART
// `-R L:7:7:LAMBDA`). Without terms the frames decouple and this is reconstruct() of each frame,
// stopped jointly. The solver, method, NUFFT, coil and GPU options are ReconOptions' (docs/dynamic.md).
//
// Coil maps: given (one set for every frame), or estimated once from all frames' data together
// (the frames share the coils: maps from one frame's undersampled data would be worse); coil
// compression is computed from all frames' data alike and applied to each.
//
// Thread safety: as reconstruct(): any number of calls at once.
#include <vector>

#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/kspace.hpp"
#include "mri/reconstruct.hpp"

namespace mri {

struct FramesResult {
  std::vector<Image> frames; // one image per frame, in the data's order
  // One report for the whole series: its phases summed over the frames, the solver's outcome on
  // the stack, data_scale the one scale of every frame; the Q cache is not used (q_cache = Off).
  ReconReport report;
};

// Throws InvalidArgument for no frames, frames with different coil counts or some weighted and some
// not, a bad frame (as reconstruct: named "frames[f]..."), terms that cannot run on the stack
// (validate with the frame count: TV along the frames needs 2 frames), and every option
// reconstruct refuses; Unsupported where reconstruct is (no usable GPU for backend = cuda) and for
// what this build does not run on frames: an off-resonance field map, locally low rank on the GPU
// with more than 32 frames (cuSOLVER's batched eigensolver; backend = auto then runs on the CPU
// and says so in backend_note). On the GPU every frame's
// operators are on the device at once: F^H D, the Toeplitz kernel and its coil batches per frame
// (the whole stack's device memory, every frame's maps, operators and images and the solver's
// vectors, is estimated before anything is allocated and refused with Unsupported naming the bytes
// needed and available, against the device's free memory and gpu.memory_limit:
// mri/detail/joint_device_memory.hpp; each frame's own check follows as its operators are made,
// ReconReport::device_bytes is one frame's). options.on_iteration is not called (its argument is one image); on_phase is, per phase of
// the whole series.
FramesResult reconstruct_frames(const std::vector<KSpaceData> &frames, const Grid &grid,
                                const ReconOptions &options = {});

// All frames' samples as one acquisition, in frame order (the inverse of sorting them into frames):
// the trajectories and each coil's samples concatenated, the weights and sample times too (all
// frames have them or none). Throws InvalidArgument as reconstruct_frames for mismatched frames.
KSpaceData join_frames(const std::vector<KSpaceData> &frames);

} // namespace mri
