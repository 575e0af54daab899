#pragma once
// The items of `mri recon` (slices, repetitions ... of a file), reconstructed while the file is
// read (an item starts as soon as its data are in), `jobs` at a time on host threads (each calls
// mri::reconstruct: on the CPU with its own OpenMP team, on the GPU on its own stream), results
// in the items' order; an item that fails is kept as its error, the others go on. One Q per
// distinct trajectory: the first item of each trajectory to be read runs before the items that
// share it and stores the Toeplitz spectrum in the Q cache (options.q_cache_dir, or a directory
// of this run under TMPDIR, removed at the end); the others load it.
#include <exception>
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>

#include "progress.hpp"
#include "recon_inputs.hpp"

namespace mri::cli {

struct ItemOutcome {
  Image image;                                               // on the output grid (zeros on failure)
  nlohmann::json reports = nlohmann::json::array();          // the item's reconstruction report
  std::exception_ptr error;                                  // set when the item failed
  // Seconds from the start of the batch: its data in, its reconstruction started and finished
  // (the report's "batch" of the item: how reading and reconstructions overlapped).
  double data_in = 0, started = 0, finished = 0;
};

// Reads the inputs' data (read_problems) on the calling thread while batch.jobs workers reconstruct.
// Each worker runs its own OpenMP team of omp_get_max_threads() / the items running or ready to
// run (at most jobs; at least 1 thread), so the machine is shared, not oversubscribed.
// Multi-coil items: SENSE, with the maps of options.sensitivities or estimated per item. Throws
// the reading's error (after the items already running have finished; the others are dropped).
// inputs.source["read_seconds"]: from the start of the batch to the end of the file.
struct BatchOptions {
  int jobs = 1;         // items at once
  bool share_q = true;  // false: no Q cache of the run, no waiting: each item computes its own Q
};
// Where the items come from: by default read_problems on the calling thread. Another feed (an
// MPI rank's items, cli/batch_mpi.cpp) runs on the calling thread instead, stores item i's data in
// inputs.problems[i].data and calls arrive(i, q_stored) (q_stored: its Q is in options.q_cache_dir
// already, so it neither leads nor waits; BatchQueue::arrive), and returns once no item is to come.
// finished(i), when set, is called on a worker thread once item i has run (or failed).
struct BatchFeed {
  std::function<void(const std::function<void(std::size_t item, bool q_stored)> &arrive)> feed;
  std::function<void(std::size_t item)> finished;
};
std::vector<ItemOutcome> reconstruct_batch(ReconInputs &inputs, const ReconOptions &options, const BatchOptions &batch,
                                           Progress &progress, const BatchFeed &feed = {});

// The key of the Q that an item's reconstruction computes or loads (the Toeplitz cache's): items
// with one key share Q. None when it cannot be made (weights of the wrong length): the item
// runs alone, and reconstruct reports the problem.
std::optional<ToeplitzCacheKey> q_key(const KSpaceData &data, const ReconInputs &inputs, const ReconOptions &options);

} // namespace mri::cli
