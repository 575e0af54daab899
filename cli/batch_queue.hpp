#pragma once
// The order in which a batch's items run, as they arrive (a file read while the first items
// are reconstructed): `jobs` at a time; of the items that share a Q (one Toeplitz cache key),
// the first to arrive runs alone and stores Q, and the others wait for it, then load Q.
// Thread-safe: the reading thread calls arrive and close, the workers the rest.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include <mri/mri.hpp>

namespace mri::cli {

class BatchQueue {
public:
  // `threads`: the OpenMP threads of the machine, shared among the items that run at once; while
  // the file is read (until close), `reader_threads` of them are left to the reader.
  BatchQueue(int jobs, int threads, int reader_threads = 0)
      : jobs_(jobs), threads_(threads), reader_threads_(reader_threads) {}

  // Its data are in. q_stored: its Q is already in the Q cache (another MPI rank's item stored
  // it, cli/batch_mpi.cpp): it neither leads nor waits.
  void arrive(std::size_t item, bool q_stored = false);
  // No more items. aborted (the reading failed): the items not started are dropped.
  void close(bool aborted);

  struct Task {
    std::size_t item;
    bool keyed;  // its Q key is settled (it may run); otherwise call settle first
    int threads; // its OpenMP team
  };
  // Blocks until there is a task; none when the queue is closed and every item has run.
  std::optional<Task> next();
  // The item's Q key (none: it cannot share one): true when it may run now, false when it
  // waits for the item that computes its Q (it comes back from next() once that one is done).
  bool settle(std::size_t item, const std::optional<ToeplitzCacheKey> &key);
  // The item has run (or failed): the items waiting for its Q may run.
  void done(std::size_t item);

private:
  struct Leader {
    ToeplitzCacheKey key;
    std::size_t item;
    bool done = false;
    std::vector<std::size_t> waiting;
  };
  int team() const;

  const int jobs_, threads_, reader_threads_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::size_t> fresh_, keyed_; // arrived; settled and free to run
  std::vector<Leader> leaders_;
  int running_ = 0;
  bool closed_ = false, aborted_ = false;
};

} // namespace mri::cli
