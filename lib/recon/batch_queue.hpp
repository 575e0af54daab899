#pragma once
// The order in which the items of mri::reconstruct_batch run, as they arrive (a file read while
// the first items are reconstructed): `jobs` at a time; of the items that share a Q (one Toeplitz
// cache key), the first to arrive runs alone and stores Q, and the others wait for it, then load
// Q. Which item computes Q does not depend on the workers' timing: items settle their keys in
// the order they arrived, and when the item computing Q fails, the next of its key to arrive
// computes it instead. Thread-safe: the feeding thread calls arrive and close, the workers the
// rest.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "mri/toeplitz_cache.hpp"

namespace mri::detail {

class BatchQueue {
public:
  // `threads`: the OpenMP threads of the machine, shared among the items that run at once; while
  // the items are fed (until close), `feed_threads` of them are left to the feed (a file's reader).
  BatchQueue(int jobs, int threads, int feed_threads = 0)
      : jobs_(jobs), threads_(threads), feed_threads_(feed_threads) {}

  // Its data are in. q_stored: its Q is already in the Q cache (another process's item stored
  // it: BatchFeed::feed): it neither leads nor waits.
  void arrive(std::size_t item, bool q_stored = false);
  // No more items. aborted (the feed failed): the items not started are dropped.
  void close(bool aborted);

  struct Task {
    std::size_t item;
    bool keyed;       // its Q key is settled (it may run); otherwise call settle first
    int threads;      // its OpenMP team
    std::size_t turn; // not keyed: its place in the order of settling
  };
  // Blocks until there is a task; none when the queue is closed and every item has run.
  std::optional<Task> next();
  // A task that is not keyed, with its item's Q key (none: it cannot share one; every such task
  // must settle, its item failed or not, or the later ones wait for it): blocks until the tasks
  // before it have settled; then true when it may run now, false when it waits for the item that
  // computes its Q (it comes back from next() once that one is done).
  bool settle(const Task &task, const std::optional<ToeplitzCacheKey> &key);
  // The item has run: the items waiting for its Q may run; when it failed, the first of them
  // computes Q instead and the others wait for that one.
  void done(std::size_t item, bool failed);

private:
  struct Leader {
    ToeplitzCacheKey key;
    std::size_t item;
    bool done = false;
    std::vector<std::size_t> waiting;
  };
  int team() const;
  void release(std::vector<Leader>::iterator led, bool failed);

  const int jobs_, threads_, feed_threads_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::size_t> fresh_, keyed_; // arrived; settled and free to run
  std::vector<Leader> leaders_;
  std::size_t turns_given_ = 0, turns_settled_ = 0;
  int running_ = 0;
  bool closed_ = false, aborted_ = false;
};

} // namespace mri::detail
