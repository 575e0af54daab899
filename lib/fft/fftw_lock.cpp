#include "fftw_lock.hpp"

#include <fftw3.h>

namespace mri::detail {

std::mutex &fftw_planner_mutex() {
  static std::mutex m;
  // Threaded FFTW must be initialised once before the first threaded plan.
  static const bool initialised = [] { return fftwf_init_threads() != 0; }();
  (void)initialised;
  return m;
}

} // namespace mri::detail
