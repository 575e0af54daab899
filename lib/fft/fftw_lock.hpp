#pragma once
// FFTW's planner is not thread-safe; every plan creation/destruction takes this lock.
#include <mutex>

namespace mri::detail {
std::mutex &fftw_planner_mutex();
} // namespace mri::detail
