#pragma once
// Conversions the motion tests share: the public volumes and fields into the CPU stages' own
// (lib/motion/cpu_stages.hpp), and a seed drawn afresh for each run.
#include <algorithm>
#include <cstdint>
#include <random>

#include "../../lib/motion/cpu_stages.hpp"
#include "mri/motion.hpp"

namespace mri::test::motion {

namespace dm = mri::detail::motion;

inline std::uint64_t fresh_seed() { return std::random_device{}(); }

template <class T> dm::Volume<T> to_volume(const RealVolume &f) {
  dm::Volume<T> v(f.grid());
  std::copy(f.values().begin(), f.values().end(), v.v.begin());
  return v;
}

} // namespace mri::test::motion
