#pragma once
// A progress line on stderr with an estimate of the time left, shown only once the work has
// taken over a second (short runs stay quiet), rewritten in place with '\r'. Thread-safe: the
// items of a batch advance it from several threads.
#include <chrono>
#include <mutex>
#include <string>

namespace mri::cli {

class Progress {
public:
  Progress(std::string label, long total, bool quiet);
  ~Progress(); // ends the line if one was shown
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  // False with --quiet: callers then skip what only feeds the line (on the GPU, a per-iteration
  // callback downloads the iterate).
  bool active() const { return !quiet_; }
  // `steps` more of `total` finished; `detail` is appended (e.g. the residual).
  void advance(long steps, const std::string &detail = {});

private:
  std::string label_;
  long total_, done_ = 0;
  bool quiet_, shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
};

} // namespace mri::cli
