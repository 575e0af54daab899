#pragma once
// mri::reconstruct_batch: many items (slices, frames, repetitions, files) through reconstruct,
// `jobs` at a time on host threads, with one Q per distinct trajectory:
//
//   std::vector<mri::KSpaceData> items = ...;
//   mri::BatchOptions b;
//   b.jobs = 2;
//   std::vector<mri::BatchResult> r = mri::reconstruct_batch(items, grid, options, b);
//   // r[i].image and r[i].report, or r[i].error for an item that failed; in the items' order
//
// Each item is reconstruct(items[i], grid, options): SENSE for multi-coil items (maps from
// options.coils.sensitivities, or estimated per item), so items may differ in trajectory, sample and
// coil count. An item that fails (bad data: reconstruct throws) keeps its exception in
// BatchResult::error and the others run.
//
// One Q per distinct trajectory (share_q, solver.normal = Toeplitz): items whose Q has one Toeplitz
// cache key (reconstruct_q_key: trajectory, weights, grid, precision, method) share it through
// the Q cache, options.q_cache_dir or, when that is empty, a directory of this call under TMPDIR
// (TemporaryQCache, removed before the call returns). The first item of each key (in the items'
// order; BatchFeed: the order of arrival) runs before the others of its key and stores Q
// (report.q_cache: Miss); they wait for it, then load Q (Hit). When that item fails, the next of
// its key computes Q instead: no item waits forever.
//
// OpenMP: each worker thread runs its item with a team of omp_get_max_threads() (the caller's) /
// the items running or ready to run (at most jobs; at least 1 thread): the machine is shared, not
// oversubscribed. BatchResult::threads says the team an item had. Run the process with
// OMP_WAIT_POLICY=passive (docs/api.md): idle teams otherwise spin against each other. On the
// GPU (backend Cuda, or Auto with one) each worker's reconstruct runs on a stream of its own, as
// concurrent reconstruct calls do (tests/gpu/recon/test_reliability_cuda.cpp; mri recon --jobs runs
// so; tests/recon/test_batch.cpp covers the CPU).
//
// Deterministic, whatever `jobs` and however the workers interleave: the images and reports'
// q_cache are those of calling reconstruct on the items one after another, in that order, with
// the batch's Q cache directory (share_q = false: with options as given), each at the team the
// batch gave it (omp_set_num_threads(r[i].threads)): bitwise, where reconstruct is
// bitwise run to run at that team (on the CPU up to 2 threads, docs/reliability.md). So with
// omp_get_max_threads() == 1 every `jobs` gives the same images (tests/recon/test_batch.cpp). An item
// that loaded Q runs the very kernel bits the item that computed it ran (both backends keep the
// spectrum's real part only; CPU tested bitwise, tests/toeplitz/test_toeplitz_cache.cpp). Not deterministic: which worker runs which item, the
// teams when omp_get_max_threads() > 1 (how many items are running at that moment), the timings.
//
// Thread safety: reconstruct_batch may be called from several threads at once (each call its own
// workers; sharing one q_cache_dir is safe, toeplitz_cache.hpp). options.on_iteration and
// options.on_phase are called from the worker threads, concurrently: they must be thread-safe.
// The items must not change while the call runs.
#include <cstddef>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "mri/reconstruct.hpp"
#include "mri/toeplitz_cache.hpp"

namespace mri {

struct BatchOptions {
  int jobs = 1;         // items reconstructed at once (host threads); InvalidArgument when < 1
  bool share_q = true;  // false: no waiting, each item computes its own Q (where Q is cheap: the
                        // GPU's NUFFT) or uses options.q_cache_dir as reconstruct alone would
};

struct BatchResult {
  Image image;               // empty when the item failed
  ReconReport report;        // default when the item failed
  std::exception_ptr error;  // what reconstruct (or BatchFeed::data) threw for this item
  int threads = 0;           // the OpenMP team it ran with
  // Seconds from the start of the call: its data in (BatchFeed: when it arrived), its
  // reconstruction started and finished (how feeding and reconstructions overlapped).
  double arrived_seconds = 0, started_seconds = 0, finished_seconds = 0;
};

// An empty `items` returns an empty vector. Throws InvalidArgument for batch.jobs < 1 (before any
// work) and the Q cache directory's errors (std::filesystem::filesystem_error when TMPDIR cannot
// hold it); every error of an item is that item's.
std::vector<BatchResult> reconstruct_batch(std::span<const KSpaceData> items, const Grid &grid,
                                           const ReconOptions &options, const BatchOptions &batch = {});

// Items that arrive while the batch runs (read from a file, received from other processes): the
// general form, on which the span form is built.
using BatchArrive = std::function<void(std::size_t item, bool q_stored)>;
struct BatchFeed {
  std::size_t items = 0; // 0: an empty result, `feed` not called
  // Item i's data, called once per item on a worker thread after it arrived; the reference must
  // stay valid until `finished` returns for it (or until the call returns). An exception is the
  // item's error.
  std::function<const KSpaceData &(std::size_t item)> data;
  // Runs on the calling thread while the workers reconstruct: calls arrive(i, q_stored) once for
  // each item whose data(i) may be called, then returns. q_stored: its Q is already stored in
  // options.q_cache_dir (by another process: it neither goes first nor waits). Empty: every item
  // has arrived, in order. When it throws, the items not started are dropped, the running ones
  // finish, and reconstruct_batch rethrows it.
  std::function<void(const BatchArrive &arrive)> feed;
  // Threads the feed itself uses while it runs (a file reader's): left out of the items' teams
  // until it returns.
  int feed_threads = 0;
  // Optional: on the worker thread once item i has run or failed, its result final but for what
  // this does to it (e.g. crop the image); data(i) may be released here. An exception becomes the
  // item's error. Items waiting for this item's Q are already free to run.
  std::function<void(std::size_t item, BatchResult &result)> finished;
};
std::vector<BatchResult> reconstruct_batch(const BatchFeed &feed, const Grid &grid, const ReconOptions &options,
                                           const BatchOptions &batch = {});

// The Toeplitz cache key under which reconstruct(data, grid, options) stores or loads Q: items
// with one key share Q. None where it has no Q to share: normal = Direct, a non-zero field map
// (options.offresonance: its kernels are not cached), or a key that cannot be made (weights of the
// wrong length: reconstruct then says why).
std::optional<ToeplitzCacheKey> reconstruct_q_key(const KSpaceData &data, const Grid &grid, const ReconOptions &options);

// A Q cache directory of its own under TMPDIR (std::filesystem::temp_directory_path()), removed
// with everything in it when destroyed: Q shared among the reconstructions of one run (what
// reconstruct_batch makes when options.q_cache_dir is empty) without keeping it.
class TemporaryQCache {
public:
  TemporaryQCache(); // throws std::filesystem::filesystem_error when it cannot be made
  ~TemporaryQCache();
  TemporaryQCache(const TemporaryQCache &) = delete;
  TemporaryQCache &operator=(const TemporaryQCache &) = delete;
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace mri
