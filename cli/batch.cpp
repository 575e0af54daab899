#include "batch.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <thread>

#include "batch_queue.hpp"
#include "report.hpp"
#include "run_q_cache.hpp"

namespace mri::cli {
namespace {

// One item through mri::reconstruct (SENSE for multi-coil data), advancing the progress line per
// CG iteration (and by the iterations left when CG stops early); the phases before CG (coil maps,
// F^H D, Q) are named on the line while they run.
ReconResult reconstruct_one(const KSpaceData &data, const Grid &grid, ReconOptions options, Progress &progress) {
  int seen = 0;
  if (progress.active()) {
    options.on_iteration = [&progress, &seen](int, const Image &, double residual) {
      ++seen;
      progress.advance(1, "residual " + std::to_string(residual));
    };
    options.on_phase = [&progress](const ReconPhase &phase) {
      if (phase.fraction == 0 && phase.name != "CG")
        progress.phase_started(std::string(phase.name), phase.expected_seconds);
      else
        progress.phase_ended();
    };
  }
  struct PhaseOver { // the item's phase leaves the line however reconstruct ends
    Progress &progress;
    ~PhaseOver() { progress.phase_ended(); }
  } phase_over{progress};
  ReconResult r = reconstruct(data, grid, options);
  progress.advance(options.iterations - seen);
  return r;
}

// BART's pics solves with the unitary F / sqrt(N): its image is sqrt(N) times ours.
void to_bart_units(Image &x) {
  const auto s = static_cast<float>(1.0 / bart::nufft_scale(x.grid()));
  for (cfloat &v : x.values()) v *= s;
}

Image reconstruct_item(const KSpaceData &data, const ReconInputs &in, const ReconOptions &o, Progress &progress,
                       nlohmann::json &reports) {
  ReconResult r = reconstruct_one(data, in.grid, o, progress);
  reports.push_back(to_json(r.report));
  Image x = std::move(r.image);
  if (in.bart) to_bart_units(x);
  return centre_crop(x, in.output);
}

using Clock = std::chrono::steady_clock;

// The ISMRMRD reader's threads: the caller's, the next block's read-ahead, the items' allocation
// (lib/io/ismrmrd_blocks.cpp).
constexpr int kReaderThreads = 3;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One worker: the queue's items until it closes, each with its OpenMP team; an item's data are
// released once it has run.
void work(BatchQueue &queue, ReconInputs &in, const ReconOptions &o, bool share_q, Progress &progress,
          std::vector<ItemOutcome> &out, Clock::time_point t0, const BatchFeed &feed) {
  while (const std::optional<BatchQueue::Task> task = queue.next()) {
    const std::size_t i = task->item;
    if (share_q && !task->keyed && !queue.settle(i, q_key(in.problems[i].data, in, o))) continue; // waits for its Q
    omp_set_num_threads(task->threads);
    out[i].started = seconds_since(t0);
    try {
      out[i].image = reconstruct_item(take_data(in, i), in, o, progress, out[i].reports);
    } catch (...) { // one item failing does not lose the others
      out[i].error = std::current_exception();
      out[i].image = Image(in.output);
    }
    out[i].finished = seconds_since(t0);
    queue.done(i);
    if (feed.finished) feed.finished(i);
  }
}

} // namespace

std::optional<ToeplitzCacheKey> q_key(const KSpaceData &data, const ReconInputs &in, const ReconOptions &o) {
  try {
    return toeplitz_cache_key(data.trajectory(), data.weights(), in.grid, o.precision,
                              o.method == Method::Nufft ? o.nufft_tolerance : 0.0);
  } catch (const InvalidArgument &) {
    return std::nullopt;
  }
}

std::vector<ItemOutcome> reconstruct_batch(ReconInputs &in, const ReconOptions &options, const BatchOptions &batch,
                                           Progress &progress, const BatchFeed &feed) {
  std::vector<ItemOutcome> out(in.problems.size());
  ReconOptions o = options;
  // Items sharing a Q: the first stores it, the others load it (report: miss, then hit).
  // Without --q-cache the store is a directory of this run only.
  std::optional<RunQCache> run_cache;
  if (batch.share_q && in.problems.size() > 1 && o.normal == Normal::Toeplitz && o.q_cache_dir.empty())
    o.q_cache_dir = run_cache.emplace().path();
  const int workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(batch.jobs), in.problems.size()));
  BatchQueue queue(workers, omp_get_max_threads(), kReaderThreads);
  const Clock::time_point t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int j = 0; j < workers; ++j) pool.emplace_back([&] { work(queue, in, o, batch.share_q, progress, out, t0, feed); });
  std::exception_ptr read_error;
  try {
    const auto arrive = [&](std::size_t i, bool q_stored) {
      out[i].data_in = seconds_since(t0);
      queue.arrive(i, q_stored);
    };
    if (feed.feed) {
      feed.feed(arrive);
    } else {
      read_problems(in, [&](std::size_t i) { arrive(i, false); });
      in.source["read_seconds"] = seconds_since(t0);
    }
  } catch (...) { // a file damaged mid-way: the items not started are dropped, the run fails
    read_error = std::current_exception();
  }
  queue.close(read_error != nullptr);
  for (std::thread &t : pool) t.join();
  if (read_error) std::rethrow_exception(read_error);
  for (ItemOutcome &item : out)
    for (nlohmann::json &r : item.reports)
      r["batch"] = {{"data_in_s", item.data_in}, {"started_s", item.started}, {"finished_s", item.finished}};
  return out;
}

} // namespace mri::cli
