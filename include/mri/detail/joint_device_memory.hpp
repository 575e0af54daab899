#pragma once
// The device memory of the joint solves on the CUDA backend (reconstruct_frames, mri/dynamic.hpp;
// reconstruct_motion_corrected, mri/mcir.hpp), estimated on the host from the sizes before anything
// is allocated, so that a problem that cannot fit is refused at once instead of after some of its
// frames' operators are on the device (the single reconstruction's check, ReconReport::device_bytes,
// runs per frame as each frame's operators are made). Plain arithmetic on the sizes, the same
// counts as the device paths allocate (cuda/recon/recon_cuda.cu's GpuSteps per frame and
// drive_frames' stack; cuda/mcir/mcir_cuda.cu), tested by hand counts on the CPU
// (tests/dynamic/test_joint_device_memory.cpp). Internal: what lib/ checks, not a public API.
#include <cstddef>
#include <string>
#include <vector>

#include "mri/grid.hpp"
#include "mri/kspace.hpp"
#include "mri/reconstruct.hpp"

namespace mri::detail {

// One joint solve's device bytes by part: what is held at once while its solver runs, and the
// largest one-frame phase beside it.
struct JointDeviceBytes {
  std::size_t maps = 0;      // coil maps on the device (frames: one copy per frame's operator;
                             // MCIR: one, and the regulariser's weights once)
  std::size_t operators = 0; // per frame / state: the Toeplitz operator (spectrum, FFT array, padded
                             // input, work area: 32 B a doubled-grid voxel, as the single
                             // reconstruction counts it) and the coil-batched SENSE grids
  std::size_t warps = 0;     // MCIR: per moving state the field (12 B a voxel), the Jacobian
                             // weights (4 B), the gather adjoint's list starts (4 B) and lists (at
                             // most 4 B x 2^d corners a voxel)
  std::size_t images = 0;    // per frame / state resident images: the right-hand side and the SENSE
                             // normal's scratch (frames); MCIR's rhs, its upload and the normal's
                             // five scratch images in each of its two copies (the CG holds one)
  std::size_t solver = 0;    // the solver's vectors on the stack (frames) or the image (MCIR); frames
                             // with locally low rank: its plan (mri_backend/low_rank_device_bytes.hpp)
  std::size_t transient = 0; // the largest one-frame phase beside the rest: its F^H D (NUFFT plan or
                             // the exact sum's samples) or its Q (on the doubled grid)
  std::size_t resident() const { return maps + operators + warps + images + solver; }
  // resident + transient, with 5% and 128 MiB for library modules and slack (the single
  // reconstruction's margin, DeviceBytes::peak).
  std::size_t total() const {
    const std::size_t sum = resident() + transient;
    return sum + sum / 20 + (std::size_t{128} << 20);
  }
  std::string describe() const; // "maps 1.2 GiB, operators ..., total ..."
};

struct JointDeviceSizes {
  Grid grid;
  std::vector<std::size_t> samples; // per frame / state, one coil's
  int coils = 0;                    // the maps' coils after compression; 0: one coil without maps
  bool nufft = false;               // method = Nufft (else the exact sums)
  bool regularizer = false;         // an l2 regulariser with lambda > 0
};

// reconstruct_frames on the device: every frame's operators at once, then the solver on the stack
// (CG, or the proximal algorithm solver.terms resolve to, with their transforms' ranges).
JointDeviceBytes frames_device_bytes(const JointDeviceSizes &sizes, const SolverOptions &solver);

// reconstruct_motion_corrected on the device: maps once, per state its Toeplitz operator (and coil
// batches) and, for the `moving` states (a non-zero field), its warp; CG on the image.
JointDeviceBytes mcir_device_bytes(const JointDeviceSizes &sizes, int moving, bool jacobian_weighting);

// The bytes a joint solve may use: options.gpu.memory_limit where set, the device's free memory
// where the backend reports it (the smaller of the two where both are known); 0: neither known (no
// check).
std::size_t joint_available_bytes(std::size_t device_free, std::size_t memory_limit);

// Throws Unsupported naming `who`, the sizes, each part's bytes, the total needed and the bytes
// available (and where that figure came from) when need.total() > available > 0.
void check_joint_device_bytes(const JointDeviceBytes &need, const JointDeviceSizes &sizes, std::size_t available,
                              std::size_t device_free, std::size_t memory_limit, const std::string &who);

// reconstruct_frames' check on the CUDA backend (lib/recon/reconstruct_frames.cpp calls it before
// the coil step): the frames' sizes (data_coils: the data's, before compression; options resolved:
// method known) against the device's free memory and options.gpu.memory_limit. Throws as
// check_joint_device_bytes.
void check_frames_device_memory(const std::vector<KSpaceData> &frames, int data_coils, const Grid &grid,
                                const ReconOptions &options);

} // namespace mri::detail
