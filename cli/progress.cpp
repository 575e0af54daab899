#include "progress.hpp"

#include <cstdio>

namespace mri::cli {

Progress::Progress(std::string label, long total, bool quiet)
    : label_(std::move(label)), total_(total), quiet_(quiet), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (shown_) std::fputc('\n', stderr);
}

void Progress::advance(long steps, const std::string &detail) {
  const std::lock_guard<std::mutex> lock(mutex_);
  done_ += steps;
  if (quiet_ || done_ <= 0 || total_ <= 0) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed < 1.0) return;
  // The mean time per step so far times the steps left: CG iterations cost the same each.
  const double left = elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_);
  std::fprintf(stderr, "\r%s %ld/%ld, %.0f s elapsed, ~%.0f s left%s%s   ", label_.c_str(), done_, total_, elapsed,
               left, detail.empty() ? "" : ", ", detail.c_str());
  std::fflush(stderr);
  shown_ = true;
}

} // namespace mri::cli
