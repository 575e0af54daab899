#pragma once
// Which end of a gating signal is end-expiration (include/mri/frames.hpp, the sign convention).
#include <span>
#include <string>

#include "mri/frames.hpp"

namespace mri::detail {

struct SignalOrientation {
  bool flip = false; // negate the signal so that its low end is end-expiration
  std::string why;   // the evidence, for the report
};

// Expiration::Auto: breathing dwells at end-expiration (Lujan et al. 1999), so the expiration end
// is the one the median lies closer to, measured between percentiles 5 and 95 (outliers do not
// decide); a median within 2.5% of the range from the middle is called symmetric, kept as given.
SignalOrientation orient_signal(std::span<const double> signal, Expiration expiration);

} // namespace mri::detail
