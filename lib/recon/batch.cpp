// mri::reconstruct_batch (mri/batch.hpp): the feed on the calling thread, `jobs` workers taking
// the items in the order of a BatchQueue (lib/recon/batch_queue.hpp).
#include "mri/batch.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <system_error>
#include <thread>

#include "batch_queue.hpp"
#include "method_choice.hpp"
#include "mri/error.hpp"

namespace mri {
namespace {

using Clock = std::chrono::steady_clock;

// What the workers of one call share.
struct Batch {
  const BatchFeed &feed;
  const Grid &grid;
  const ReconOptions &options; // with the Q cache directory the items share
  bool share_q;
  detail::BatchQueue queue;
  std::vector<BatchResult> results;
  std::vector<const KSpaceData *> data; // each item's, once asked of the feed (a waiting item keeps it)
  Clock::time_point t0 = Clock::now();

  double seconds() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
};

const KSpaceData &data_of(Batch &b, std::size_t i) {
  if (!b.data[i]) b.data[i] = &b.feed.data(i);
  return *b.data[i];
}

// Settles a task's Q key with the queue, its data failing or not (the later tasks wait for every
// earlier one to settle): false when the item waits for its Q.
bool settle(Batch &b, const detail::BatchQueue::Task &task) {
  std::optional<ToeplitzCacheKey> key;
  try {
    key = reconstruct_q_key(data_of(b, task.item), b.grid, b.options);
  } catch (...) { // BatchFeed::data threw: the item runs alone, into its error
    b.results[task.item].error = std::current_exception();
  }
  return b.queue.settle(task, key);
}

void reconstruct_item(Batch &b, const detail::BatchQueue::Task &task) {
  BatchResult &r = b.results[task.item];
  try {
    const KSpaceData &data = data_of(b, task.item);
    omp_set_num_threads(task.threads);
    r.threads = task.threads;
    r.started_seconds = b.seconds();
    ReconResult done = reconstruct(data, b.grid, b.options);
    r.image = std::move(done.image);
    r.report = std::move(done.report);
  } catch (...) { // one item failing does not lose the others
    r.error = std::current_exception();
  }
  r.finished_seconds = b.seconds();
}

void work(Batch &b) {
  while (const std::optional<detail::BatchQueue::Task> task = b.queue.next()) {
    const std::size_t i = task->item;
    if (b.share_q && !task->keyed && !settle(b, *task)) continue; // back from next() once its Q is stored
    if (!b.results[i].error) reconstruct_item(b, *task);
    b.queue.done(i, b.results[i].error != nullptr); // before `finished`: the items waiting for its Q go on
    if (!b.feed.finished) continue;
    try {
      b.feed.finished(i, b.results[i]);
    } catch (...) {
      b.results[i].error = std::current_exception();
    }
  }
}

void feed_items(Batch &b) {
  const BatchArrive arrive = [&b](std::size_t i, bool q_stored) {
    if (i >= b.results.size())
      detail::invalid_argument("arrive(item)", i, "is not an item of the batch (" + std::to_string(b.results.size()) + ")");
    b.results[i].arrived_seconds = b.seconds(); // read by the worker after the queue's lock
    b.queue.arrive(i, q_stored);
  };
  if (b.feed.feed) return b.feed.feed(arrive);
  for (std::size_t i = 0; i < b.results.size(); ++i) arrive(i, false);
}

} // namespace

// The key names the method that will run: Method::Auto resolved as reconstruct() resolves it.
std::optional<ToeplitzCacheKey> reconstruct_q_key(const KSpaceData &data, const Grid &grid, const ReconOptions &o) {
  if (o.solver.normal != Normal::Toeplitz) return std::nullopt;
  // A non-zero field map: the field-corrected kernels are the item's own (not cached).
  if (o.offresonance.field_map && !o.offresonance.field_map->is_zero()) return std::nullopt;
  try {
    const Method method = detail::resolve_method(data, grid, o, detail::recon_backend(o)).method;
    return toeplitz_cache_key(data.trajectory(), data.weights(), grid, o.precision,
                              method == Method::Nufft ? o.nufft.tolerance : 0.0);
  } catch (const InvalidArgument &) {
    return std::nullopt;
  } catch (const Unsupported &) { // reconstruct() refuses the item alike
    return std::nullopt;
  }
}

std::vector<BatchResult> reconstruct_batch(const BatchFeed &feed, const Grid &grid, const ReconOptions &options,
                                           const BatchOptions &batch) {
  if (batch.jobs < 1) detail::invalid_argument("batch.jobs", batch.jobs, "must be >= 1");
  if (feed.items == 0) return {};
  ReconOptions o = options;
  const bool share_q = batch.share_q && o.solver.normal == Normal::Toeplitz && feed.items > 1;
  std::optional<TemporaryQCache> run_cache;
  if (share_q && o.q_cache_dir.empty()) o.q_cache_dir = run_cache.emplace().path();
  const int workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(batch.jobs), feed.items));
  Batch b{feed, grid, o, share_q,
          detail::BatchQueue(workers, omp_get_max_threads(), feed.feed ? feed.feed_threads : 0),
          std::vector<BatchResult>(feed.items), std::vector<const KSpaceData *>(feed.items)};
  std::exception_ptr feed_error;
  std::vector<std::jthread> pool;
  try {
    for (int j = 0; j < workers; ++j) pool.emplace_back([&b] { work(b); });
    feed_items(b);
  } catch (...) { // the items not started are dropped, the running ones finish
    feed_error = std::current_exception();
  }
  b.queue.close(feed_error != nullptr);
  pool.clear(); // joins the workers
  if (feed_error) std::rethrow_exception(feed_error);
  return std::move(b.results);
}

std::vector<BatchResult> reconstruct_batch(std::span<const KSpaceData> items, const Grid &grid,
                                           const ReconOptions &options, const BatchOptions &batch) {
  BatchFeed feed;
  feed.items = items.size();
  feed.data = [items](std::size_t i) -> const KSpaceData & { return items[i]; };
  return reconstruct_batch(feed, grid, options, batch);
}

TemporaryQCache::TemporaryQCache() {
  static std::atomic<int> made{0}; // several in one process: one directory each
  path_ = std::filesystem::temp_directory_path() /
          ("mri-q-" + std::to_string(::getpid()) + "-" + std::to_string(made++));
  std::filesystem::create_directories(path_);
}

TemporaryQCache::~TemporaryQCache() {
  std::error_code ec; // a destructor does not throw: what cannot be removed stays
  std::filesystem::remove_all(path_, ec);
}

} // namespace mri
