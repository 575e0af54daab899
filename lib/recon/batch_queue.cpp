#include "batch_queue.hpp"

#include <algorithm>

namespace mri::detail {

void BatchQueue::arrive(std::size_t item, bool q_stored) {
  {
    const std::lock_guard lock(mutex_);
    (q_stored ? keyed_ : fresh_).push_back(item);
  }
  changed_.notify_one();
}

void BatchQueue::close(bool aborted) {
  {
    const std::lock_guard lock(mutex_);
    closed_ = true;
    aborted_ = aborted;
    if (aborted) fresh_.clear(), keyed_.clear();
  }
  changed_.notify_all();
}

// An item alone gets every thread but the feed's (the first one, computing Q while later ones
// are read: an OpenMP team as large as the machine, spinning between its parallel regions,
// starves the reader's threads and itself, several times over for the first item of a batch);
// items that run or wait to run share them, jobs at a time.
int BatchQueue::team() const {
  const auto busy = static_cast<int>(std::min<std::size_t>(jobs_, running_ + fresh_.size() + keyed_.size()));
  const int free = threads_ - (closed_ ? 0 : feed_threads_);
  return std::max(1, free / std::max(1, busy));
}

std::optional<BatchQueue::Task> BatchQueue::next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return !keyed_.empty() || !fresh_.empty() || (closed_ && running_ == 0); });
  if (keyed_.empty() && fresh_.empty()) return std::nullopt; // closed, and no leader left to release items
  const bool keyed = !keyed_.empty(); // items released by their leader first: they are older
  std::deque<std::size_t> &from = keyed ? keyed_ : fresh_;
  const std::size_t item = from.front();
  from.pop_front();
  ++running_;
  return Task{item, keyed, team(), keyed ? 0 : turns_given_++};
}

bool BatchQueue::settle(const Task &task, const std::optional<ToeplitzCacheKey> &key) {
  std::unique_lock lock(mutex_);
  // In the order of arrival, whichever worker is quicker: the first item of a key computes Q.
  changed_.wait(lock, [&] { return turns_settled_ == task.turn; });
  ++turns_settled_;
  changed_.notify_all();
  if (!key) return true;
  const auto same = std::find_if(leaders_.begin(), leaders_.end(), [&](const Leader &l) { return l.key == *key; });
  if (same == leaders_.end()) {
    leaders_.push_back({*key, task.item, false, {}});
    return true;
  }
  if (same->done) return true;
  same->waiting.push_back(task.item);
  --running_; // it waits without running
  return false;
}

void BatchQueue::done(std::size_t item, bool failed) {
  {
    const std::lock_guard lock(mutex_);
    --running_;
    const auto led = std::find_if(leaders_.begin(), leaders_.end(), [&](const Leader &l) { return l.item == item; });
    if (led != leaders_.end() && !aborted_) release(led, failed);
  }
  changed_.notify_all();
}

// A leader has run: its followers load its Q. When it failed, the next item of its key computes
// Q in its place, the first follower or else the next to arrive (which item computes Q stays the
// order's, not the workers').
void BatchQueue::release(std::vector<Leader>::iterator led, bool failed) {
  if (failed && led->waiting.empty()) {
    leaders_.erase(led);
  } else if (failed) {
    led->item = led->waiting.front();
    led->waiting.erase(led->waiting.begin());
    keyed_.push_back(led->item);
  } else {
    led->done = true;
    keyed_.insert(keyed_.end(), led->waiting.begin(), led->waiting.end());
    led->waiting.clear();
  }
}

} // namespace mri::detail
