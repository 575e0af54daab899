#include "batch.hpp"

#include <chrono>
#include <string>
#include <utility>

#include "report.hpp"

namespace mri::cli {
namespace {

// The ISMRMRD reader's threads: the caller's, the next block's read-ahead, the items' allocation
// (lib/io/ismrmrd_blocks.cpp).
constexpr int kReaderThreads = 3;

// The CG iterations that this worker thread's item has counted on the progress line.
int &iterations_seen() {
  thread_local int seen = 0;
  return seen;
}

// The progress line advanced per CG iteration; the phases before CG (coil maps, F^H D, Q) named
// on it while they run (Progress keeps one phase per thread: the worker's item).
ReconOptions with_progress(ReconOptions options, Progress &progress) {
  if (!progress.active()) return options;
  options.on_iteration = [&progress](int, const Image &, double residual) {
    ++iterations_seen();
    progress.advance(1, "residual " + std::to_string(residual));
  };
  options.on_phase = [&progress](const ReconPhase &phase) {
    if (phase.fraction == 0 && phase.name != "CG")
      progress.phase_started(std::string(phase.name), phase.expected_seconds);
    else
      progress.phase_ended();
  };
  return options;
}

// An item over, however it ended: the iterations it did not run (CG stopped early, or it
// failed) counted, its phase off the line.
void item_over(Progress &progress, int iterations) {
  progress.advance(iterations - std::exchange(iterations_seen(), 0));
  progress.phase_ended();
}

// BART's pics solves with the unitary F / sqrt(N): its image is sqrt(N) times ours.
void to_bart_units(Image &x) {
  const auto s = static_cast<float>(1.0 / bart::nufft_scale(x.grid()));
  for (cfloat &v : x.values()) v *= s;
}

// What the outputs and the report take of an item: its image in the inputs' units on the output
// grid (zeros when it failed), its report as JSON with the item's timeline.
ItemOutcome outcome(BatchResult &r, const ReconInputs &in) {
  ItemOutcome o;
  o.error = r.error;
  o.data_in = r.arrived_seconds, o.started = r.started_seconds, o.finished = r.finished_seconds;
  if (r.error) {
    o.image = Image(in.output);
    return o;
  }
  if (in.bart) to_bart_units(r.image);
  o.image = centre_crop(r.image, in.output);
  nlohmann::json report = to_json(r.report);
  report["batch"] = {{"data_in_s", o.data_in}, {"started_s", o.started}, {"finished_s", o.finished}};
  o.reports.push_back(std::move(report));
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

std::vector<ItemOutcome> reconstruct_batch(ReconInputs &in, const ReconOptions &options, const BatchOptions &batch,
                                           Progress &progress, const ItemFeed &items) {
  std::vector<ItemOutcome> out(in.problems.size());
  const auto t0 = std::chrono::steady_clock::now();
  BatchFeed feed;
  feed.items = in.problems.size();
  // Prewhitened on the worker; kept in the inputs while the item runs, released once it has.
  feed.data = [&in](std::size_t i) -> const KSpaceData & { return in.problems[i].data = take_data(in, i); };
  feed.feed = items.feed;
  if (!feed.feed)
    feed.feed = [&in, t0](const BatchArrive &arrive) {
      read_problems(in, [&](std::size_t i) { arrive(i, false); });
      in.source["read_seconds"] = seconds_since(t0);
    };
  feed.feed_threads = kReaderThreads;
  feed.finished = [&](std::size_t i, BatchResult &r) {
    item_over(progress, options.solver.iterations);
    in.problems[i].data = KSpaceData();
    out[i] = outcome(r, in);
    r = {}; // the image on the reconstruction grid is not kept twice
    if (items.finished) items.finished(i, out[i].error != nullptr);
  };
  (void)mri::reconstruct_batch(feed, in.grid, with_progress(options, progress), batch);
  return out;
}

} // namespace mri::cli
