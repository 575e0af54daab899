#include "progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace mri::cli {
namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

} // namespace

Progress::Progress(std::string label, long total, bool quiet, std::FILE *out, ProgressTiming timing)
    : label_(std::move(label)), total_(total), quiet_(quiet), out_(out), terminal_(::isatty(::fileno(out)) == 1),
      timing_(timing), start_(Clock::now()) {
  if (!quiet_) ticker_ = std::jthread([this](std::stop_token stop) { tick(stop); });
}

Progress::~Progress() {
  if (ticker_.joinable()) {
    ticker_.request_stop();
    ticker_.join();
  }
  if (!shown_) return;
  if (terminal_) {
    std::fputc('\n', out_);
    return;
  }
  const std::string last = status_line(); // where the work ended, unless that was the last line
  if (last != last_written_) std::fprintf(out_, "%s\n", last.c_str());
  std::fflush(out_);
}

void Progress::advance(long steps, const std::string &detail) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (first_done_ == 0 && done_ == 0) first_step_ = Clock::now();
  done_ += steps;
  if (first_done_ == 0) first_done_ = done_;
  if (!detail.empty()) detail_ = detail;
  if (done_ > 0) draw();
}

void Progress::phase_started(const std::string &name, double expected_seconds) {
  const std::lock_guard<std::mutex> lock(mutex_);
  phases_[std::this_thread::get_id()] = {name, Clock::now(), expected_seconds};
}

void Progress::phase_ended() {
  const std::lock_guard<std::mutex> lock(mutex_);
  phases_.erase(std::this_thread::get_id());
}

// Twice a second while a phase runs: its elapsed time moves on even when no step is counted.
void Progress::tick(std::stop_token stop) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop.stop_requested()) {
    wake_.wait_for(lock, stop, std::chrono::milliseconds(500), [] { return false; });
    if (!stop.stop_requested() && !phases_.empty()) draw();
  }
}

std::string Progress::phase_text() const {
  const Phase *oldest = nullptr;
  for (const auto &[thread, phase] : phases_)
    if (!oldest || phase.start < oldest->start) oldest = &phase;
  if (!oldest) return {};
  const double elapsed = seconds(Clock::now() - oldest->start);
  if (elapsed < 1.0) return {};
  char text[160];
  if (std::isfinite(oldest->expected_seconds) && oldest->expected_seconds > elapsed)
    std::snprintf(text, sizeof text, " | %s: %.0f s, ~%.0f s left", oldest->name.c_str(), elapsed,
                  oldest->expected_seconds - elapsed);
  else
    std::snprintf(text, sizeof text, " | %s: %.0f s", oldest->name.c_str(), elapsed);
  return text;
}

std::string Progress::status_line() const {
  const double elapsed = seconds(Clock::now() - start_);
  char counts[160];
  const int n = std::snprintf(counts, sizeof counts, "%s %ld/%ld, %.0f s elapsed", label_.c_str(), done_, total_, elapsed);
  if (done_ > first_done_) // the mean time per step since the first times the steps left: CG iterations cost alike
    std::snprintf(counts + n, sizeof counts - static_cast<std::size_t>(n), ", ~%.0f s left",
                  seconds(Clock::now() - first_step_) / static_cast<double>(done_ - first_done_) *
                      static_cast<double>(total_ - done_));
  return counts + (detail_.empty() ? std::string() : ", " + detail_) + phase_text();
}

void Progress::draw() {
  if (quiet_ || total_ <= 0) return;
  const Clock::time_point now = Clock::now();
  if (seconds(now - start_) < timing_.show_after_s) return;
  if (!terminal_ && shown_ && seconds(now - last_line_) < timing_.log_interval_s) return;
  std::string line = status_line();
  if (terminal_) {
    const std::size_t width = line.size();
    if (width < width_) line.append(width_ - width, ' ');
    width_ = width;
    std::fprintf(out_, "\r%s", line.c_str());
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
    last_written_ = std::move(line);
  }
  std::fflush(out_);
  last_line_ = now;
  shown_ = true;
}

} // namespace mri::cli
