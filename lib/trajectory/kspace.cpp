#include "mri/kspace.hpp"

#include <cmath>

#include "mri/error.hpp"

namespace mri {

KSpaceData::KSpaceData(Trajectory trajectory, std::vector<cfloat> samples,
                       std::vector<float> weights, int coils, std::vector<float> sample_times)
    : trajectory_(std::move(trajectory)), samples_(std::move(samples)),
      weights_(std::move(weights)), coils_(coils), sample_times_(std::move(sample_times)) {
  const std::size_t m = trajectory_.size();
  if (m == 0) detail::invalid_argument("trajectory.size()", 0, "k-space data needs samples");
  if (coils_ < 1) detail::invalid_argument("coils", coils_, "must be >= 1");
  if (samples_.size() != m * static_cast<std::size_t>(coils_))
    detail::invalid_argument("samples.size()", samples_.size(),
                             "must equal coils * trajectory.size() = " +
                                 std::to_string(m * static_cast<std::size_t>(coils_)));
  for (std::size_t i = 0; i < samples_.size(); ++i)
    if (!std::isfinite(samples_[i].real()) || !std::isfinite(samples_[i].imag()))
      detail::invalid_argument("samples[" + std::to_string(i) + "]", samples_[i],
                               "must be finite");
  detail::check_weights(weights_, m);
  detail::check_sample_times(sample_times_, m);
}

void detail::check_sample_times(std::span<const float> times, std::size_t samples) {
  if (!times.empty() && times.size() != samples)
    invalid_argument("sample_times.size()", times.size(),
                     "must be 0 or trajectory.size() = " + std::to_string(samples) + " (one time per sample, no coils)");
  for (std::size_t i = 0; i < times.size(); ++i)
    if (!std::isfinite(times[i]) || times[i] < 0)
      invalid_argument("sample_times[" + std::to_string(i) + "]", times[i],
                       "must be finite and >= 0 (seconds from the echo)");
}

void detail::check_weights(std::span<const float> weights, std::size_t samples) {
  if (!weights.empty() && weights.size() != samples)
    invalid_argument("weights.size()", weights.size(), "must be 0 or trajectory.size() = " + std::to_string(samples));
  for (std::size_t i = 0; i < weights.size(); ++i)
    if (!std::isfinite(weights[i]) || weights[i] < 0)
      invalid_argument("weights[" + std::to_string(i) + "]", weights[i], "must be finite and >= 0");
}

std::vector<cfloat> KSpaceData::weighted_samples() const {
  std::vector<cfloat> out(samples_);
  if (weights_.empty()) return out;
  const std::size_t m = trajectory_.size();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] *= weights_[i % m];
  return out;
}

} // namespace mri
