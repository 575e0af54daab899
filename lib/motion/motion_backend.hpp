#pragma once
// The narrow interface between mri::MotionEstimator and a backend (STYLE.md, plugins): the CPU's
// (lib/motion/motion_cpu.cpp) and the CUDA one (cuda/motion_backend.cu, reached only through
// make_cuda_motion_backend). lib/ includes nothing from cuda/.
#include <memory>
#include <span>
#include <vector>

#include "mri/motion.hpp"

namespace mri {

class MotionBackend {
public:
  virtual ~MotionBackend() = default;
  // Inputs are validated by MotionEstimator (grid, finite voxels) before they arrive here.
  virtual DisplacementField estimate(const RealVolume &fixed, const RealVolume &moving,
                                     MotionReport &report) = 0;
  // Frame k -> k+1 fields; each frame prepared (uploaded, pyramid built) once.
  virtual std::vector<DisplacementField> estimate_sequence(std::span<const RealVolume> frames,
                                                           MotionReport &report) = 0;
};

// options.precision chooses float or double.
std::unique_ptr<MotionBackend> make_cpu_motion_backend(const Grid &grid,
                                                       const MotionOptions &options);
// Defined in cuda/motion_backend.cu (float32 only). Throws CudaError on a CUDA failure.
std::unique_ptr<MotionBackend> make_cuda_motion_backend(const Grid &grid,
                                                        const MotionOptions &options);

} // namespace mri
