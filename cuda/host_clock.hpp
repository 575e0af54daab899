// The host's monotonic clock for the report's phase seconds (host wall time around a phase; the
// device's own times come from CUDA events).
#pragma once

#include <chrono>

namespace mri::cuda::detail {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

} // namespace mri::cuda::detail
