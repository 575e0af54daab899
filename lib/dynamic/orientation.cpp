#include "dynamic/orientation.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace mri::detail {
namespace {

// Value at fraction q of the sorted values (nearest rank).
double percentile(const std::vector<double> &sorted, double q) {
  const auto i = static_cast<std::size_t>(std::lround(q * static_cast<double>(sorted.size() - 1)));
  return sorted[i];
}

} // namespace

SignalOrientation orient_signal(std::span<const double> signal, Expiration expiration) {
  if (expiration == Expiration::Low) return {false, "low end taken as end-expiration (as asked)"};
  if (expiration == Expiration::High) return {true, "high end taken as end-expiration (as asked): signal negated"};
  if (signal.empty()) return {false, "empty signal"};
  std::vector<double> sorted(signal.begin(), signal.end());
  std::sort(sorted.begin(), sorted.end());
  const double p5 = percentile(sorted, 0.05), p50 = percentile(sorted, 0.5), p95 = percentile(sorted, 0.95);
  const double spread = p95 - p5;
  const double median_position = spread > 0 ? (p50 - p5) / spread : 0.5;
  std::ostringstream why;
  why.precision(3);
  why << "median at " << median_position << " of the 5-95 percentile range";
  if (std::abs(median_position - 0.5) < 0.025)
    return {false, why.str() + ": no dwelling end, expiration ambiguous; low end kept as end-expiration"};
  if (median_position < 0.5) return {false, why.str() + ": the signal dwells at its low end, taken as end-expiration"};
  return {true, why.str() + ": the signal dwells at its high end, taken as end-expiration (signal negated)"};
}

} // namespace mri::detail
