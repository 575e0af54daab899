// Whether the GPU suite runs under compute-sanitizer (scripts/sanitize-gpu.sh sets
// MRI_TEST_UNDER_SANITIZER=1). racecheck serialises every kernel's shared-memory accesses and
// slows them by 100-1000x, so the few cases sized for throughput (2^20 samples against 10^4-10^6
// voxels, 1000 reconstructions, a 120 s deadlock watchdog) would run for hours or trip their own
// watchdog. Under a sanitizer they run the same code paths at sizes the tool can finish, and each
// prints the size it ran; a plain run is never affected.
#pragma once

#include <cstdlib>
#include <cstring>

namespace mri::gpu_test {

inline bool under_sanitizer() {
  const char *v = std::getenv("MRI_TEST_UNDER_SANITIZER");
  return v != nullptr && std::strcmp(v, "0") != 0 && *v != '\0';
}

// The host threads of the concurrency case: `plain`, unless MRI_TEST_CONCURRENT_THREADS (1 to 64)
// says otherwise. compute-sanitizer's racecheck stalls inside its own locks with 16 threads
// launching at once (docs/reliability.md); fewer tell a limit of the count from a general one.
inline int concurrent_threads(int plain) {
  const char *v = std::getenv("MRI_TEST_CONCURRENT_THREADS");
  const int n = v ? std::atoi(v) : 0;
  return n >= 1 && n <= 64 ? n : plain;
}

} // namespace mri::gpu_test
