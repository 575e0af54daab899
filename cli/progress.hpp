#pragma once
// A progress line on stderr with an estimate of the time left, shown only once the work has
// taken over a second (short runs stay quiet). On a terminal it is rewritten in place with '\r';
// otherwise (a log file, a pipe) it is a plain line at most every ten seconds and once at the
// end, so a log holds whole lines. Thread-safe: the items of a batch advance it from several
// threads. Besides the counted steps (CG iterations), the line names a phase that runs without
// steps (Q, coil maps: ReconOptions::on_phase) with its own estimate, redrawn twice a second while
// one runs.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace mri::cli {

// When lines appear: the first after show_after_s of work; off a terminal, then at most one every
// log_interval_s.
struct ProgressTiming {
  double show_after_s = 1.0;
  double log_interval_s = 10.0;
};

class Progress {
public:
  // `out`: where the line goes (stderr); a terminal (isatty) gets the line rewritten in place.
  Progress(std::string label, long total, bool quiet, std::FILE *out = stderr, ProgressTiming timing = {});
  ~Progress(); // ends the line if one was shown
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  // False with --quiet: callers then skip what only feeds the line (on the GPU, a per-iteration
  // callback downloads the iterate).
  bool active() const { return !quiet_; }
  // `steps` more of `total` finished; `detail` is appended (e.g. the residual).
  void advance(long steps, const std::string &detail = {});
  // The calling thread's item started a phase (expected_seconds: its estimate, NaN for none) or
  // ended it. The line shows the longest-running phase of all threads.
  void phase_started(const std::string &name, double expected_seconds);
  void phase_ended();

private:
  using Clock = std::chrono::steady_clock;
  struct Phase {
    std::string name;
    Clock::time_point start;
    double expected_seconds;
  };
  void draw(); // with mutex_ held
  std::string phase_text() const;
  std::string status_line() const;
  void tick(std::stop_token stop);

  std::string label_, detail_;
  long total_, done_ = 0;
  long first_done_ = 0;           // steps counted at the first advance, at first_step_
  Clock::time_point first_step_; // the rate of steps is measured from here: not the phases before
  bool quiet_, shown_ = false;
  std::FILE *out_;
  bool terminal_;
  ProgressTiming timing_;
  std::size_t width_ = 0;    // terminal: of the last line drawn, a shorter one is padded over it
  std::string last_written_; // off a terminal: the last line, not repeated at the end
  Clock::time_point start_, last_line_;
  std::map<std::thread::id, Phase> phases_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread ticker_; // last: stopped and joined before the members it reads go
};

} // namespace mri::cli
