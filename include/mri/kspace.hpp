#pragma once
// Acquired data: trajectory + complex samples + optional density-compensation weights.
// Samples are stored coil-major: sample m of coil c at c*M + m (one coil for now; the
// coil dimension is in place for SENSE).
//
// Thread safety: KSpaceData is immutable after construction: any number of threads may read one at
// once (tests/concurrency shares one per problem among 4 threads). check_weights only reads.
#include <span>
#include <vector>

#include "mri/image.hpp"
#include "mri/trajectory.hpp"

namespace mri {

class KSpaceData {
public:
  KSpaceData() = default;
  // Throws InvalidArgument when the trajectory is empty, samples.size() != coils*M, a sample
  // is NaN/Inf, weights are neither empty nor of length M, or a weight is negative/non-finite.
  // sample_times: empty, or the time of each of the M samples (one coil's: every coil shares
  // them) in seconds from the echo, as the off-resonance model takes them (mri/offresonance.hpp,
  // docs/conventions.md); InvalidArgument unless each is finite and >= 0.
  KSpaceData(Trajectory trajectory, std::vector<cfloat> samples, std::vector<float> weights = {},
             int coils = 1, std::vector<float> sample_times = {});

  const Trajectory &trajectory() const { return trajectory_; }
  const std::vector<cfloat> &samples() const { return samples_; }
  const std::vector<float> &weights() const { return weights_; }
  bool has_weights() const { return !weights_.empty(); }
  int coils() const { return coils_; }
  const std::vector<float> &sample_times() const { return sample_times_; }
  bool has_sample_times() const { return !sample_times_.empty(); }
  std::size_t samples_per_coil() const { return trajectory_.size(); }

  // D_m * w_m (or D_m when unweighted): the right-hand side fed to F^H.
  std::vector<cfloat> weighted_samples() const;

private:
  Trajectory trajectory_;
  std::vector<cfloat> samples_;
  std::vector<float> weights_;
  int coils_ = 1;
  std::vector<float> sample_times_;
};

namespace detail {
// Density weights as every operator takes them: empty (all ones) or one finite, non-negative
// weight per sample. Throws InvalidArgument naming weights.size() or weights[i].
void check_weights(std::span<const float> weights, std::size_t samples);
// Sample times as KSpaceData takes them: empty or M finite values >= 0 (seconds). Throws
// InvalidArgument naming sample_times.size() or sample_times[i].
void check_sample_times(std::span<const float> times, std::size_t samples);
} // namespace detail

} // namespace mri
