#pragma once
// The narrow interface between mri::MotionEstimator and a backend (STYLE.md, plugins): the CPU's
// (lib/motion/motion_cpu.cpp) and the CUDA one (cuda/motion/motion_backend.cu, reached only through
// the plugin's CudaBackend::motion). Part of the backend interface: lib/ includes nothing from
// cuda/.
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
  // fields[k] = estimate(frames[k], reference); the reference (the moving frame of every pair)
  // prepared (uploaded, its pyramid built) once. pairs[k]: pair k's report (the first with the
  // reference's preparation); report: their sum (times, counts; the largest residual; total_ms
  // the call's wall clock).
  virtual std::vector<DisplacementField> estimate_to_reference(std::span<const RealVolume> frames,
                                                               const RealVolume &reference,
                                                               MotionReport &report,
                                                               std::vector<MotionReport> &pairs) = 0;
};

namespace detail::motion {
// Normalised Gaussian taps exp(-k^2 / 2 s^2), k = -r..r, r = ceil(3 s) (truncated at 3 std:
// 99.7% of the mass); s = 0 gives the single tap 1. Throws InvalidArgument naming `name` when
// 2r + 1 > kMaxGaussianSize or s is negative or not finite. One definition (lib/motion/gaussian.cpp)
// for both backends.
std::vector<double> gaussian_taps(double s, const char *name);
} // namespace detail::motion

} // namespace mri
