#pragma once
// The items of `mri recon` (slices, repetitions ... of a file) through mri::reconstruct_batch
// (mri/batch.hpp: `jobs` at a time on host threads, each with its OpenMP team; one Q per distinct
// trajectory; an item that fails kept as its error while the others go on), reconstructed while
// the file is read: an item starts as soon as its data are in. Around it, the tool's part: the
// feed, the progress line, BART's units, the output crop and the JSON reports.
#include <exception>
#include <functional>
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

// Where the items come from: by default read_problems on the calling thread, with the ISMRMRD
// reader's threads left out of the items' OpenMP teams until the file is read. Another feed (an
// MPI rank's items, cli/batch_mpi.cpp) runs on the calling thread instead (BatchFeed::feed): it
// stores item i's data in inputs.problems[i].data, then calls arrive(i, q_stored), and returns
// once no item is to come. finished(i, failed), when set, is called on a worker thread once item
// i has run (failed: it ended in its error).
struct ItemFeed {
  std::function<void(const BatchArrive &arrive)> feed;
  std::function<void(std::size_t item, bool failed)> finished;
};

// Every item of `inputs` in item order; multi-coil items: SENSE, with the maps of
// options.coils.sensitivities or estimated per item. Throws the reading's error (after the items
// already running have finished; the others are dropped). inputs.source["read_seconds"]: from
// the start of the batch to the end of the file (the default feed).
std::vector<ItemOutcome> reconstruct_batch(ReconInputs &inputs, const ReconOptions &options, const BatchOptions &batch,
                                           Progress &progress, const ItemFeed &feed = {});

} // namespace mri::cli
