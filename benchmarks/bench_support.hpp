#pragma once
// What the NUFFT and F^H D benchmarks share: random inputs, the relative error their rel_err
// counters report, and the subset of samples on which they evaluate the exact O(N M) sums.
#include <cstddef>
#include <limits>
#include <vector>

#include "../tests/test_support.hpp"
#include "mri/image.hpp"
#include "mri/trajectory.hpp"

namespace mri::bench {

// The tests' random inputs and relative error (tests/test_support.hpp): one definition, so a
// benchmark's rel_err means what a test's does.
using test::random_complex;
using test::relative_error;

// Samples 0, stride, 2 stride, ... of a trajectory (at most `limit` of them) and the values
// at those samples: the exact sums run on this subset, the full problem would take minutes.
struct SampleSubset {
  std::vector<KPoint> points;
  std::vector<cfloat> values;
};
inline SampleSubset every_nth_sample(const Trajectory &t, const std::vector<cfloat> &values, std::size_t stride,
                                     std::size_t limit = std::numeric_limits<std::size_t>::max()) {
  SampleSubset s;
  for (std::size_t m = 0; m < t.size() && s.points.size() < limit; m += stride) {
    s.points.push_back(t[m]);
    s.values.push_back(values[m]);
  }
  return s;
}

} // namespace mri::bench
