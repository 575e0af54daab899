#pragma once
// The OpenMP team of the calls made in its scope, on the calling thread (tests of results that
// depend on the team size).
#include <omp.h>

namespace mri::test {

class OmpThreads {
public:
  explicit OmpThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~OmpThreads() { omp_set_num_threads(saved_); }
  OmpThreads(const OmpThreads &) = delete;
  OmpThreads &operator=(const OmpThreads &) = delete;

private:
  int saved_;
};

} // namespace mri::test
