#include "batch.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <optional>
#include <cmath>
#include <thread>
#include <unistd.h>

#include "report.hpp"

namespace mri::cli {
namespace {

// One item through mri::reconstruct (SENSE for multi-coil data), advancing the progress line per
// CG iteration (and by the iterations left when CG stops early).
ReconResult reconstruct_one(const KSpaceData &data, const Grid &grid, ReconOptions options, Progress &progress) {
  int seen = 0;
  if (progress.active())
    options.on_iteration = [&progress, &seen](int, const Image &, double residual) {
      ++seen;
      progress.advance(1, "residual " + std::to_string(residual));
    };
  ReconResult r = reconstruct(data, grid, options);
  progress.advance(options.iterations - seen);
  return r;
}

// BART's pics solves with the unitary F / sqrt(N): its image is sqrt(N) times ours.
void to_bart_units(Image &x) {
  const auto s = static_cast<float>(1.0 / bart::nufft_scale(x.grid()));
  for (cfloat &v : x.values()) v *= s;
}

Image reconstruct_item(const ReconProblem &p, const ReconInputs &in, const ReconOptions &o, Progress &progress,
                       nlohmann::json &reports) {
  ReconResult r = reconstruct_one(p.data, in.grid, o, progress);
  reports.push_back(to_json(r.report));
  Image x = std::move(r.image);
  if (in.bart) to_bart_units(x);
  return centre_crop(x, in.output);
}

// Item i's Q is computed by leader[i], the first item with the same trajectory, weights, grid
// and way of computing Q (the Toeplitz cache's key): the others can load its spectrum. An item
// whose key cannot be made (weights of the wrong length) leads itself: reconstruct reports it.
std::vector<std::size_t> q_leaders(const ReconInputs &in, const ReconOptions &o) {
  const double q_tolerance = o.method == Method::Nufft ? o.nufft_tolerance : 0.0;
  std::vector<std::optional<ToeplitzCacheKey>> keys;
  std::vector<std::size_t> leader;
  for (const ReconProblem &p : in.problems) {
    try {
      keys.emplace_back(toeplitz_cache_key(p.data.trajectory(), p.data.weights(), in.grid, o.precision, q_tolerance));
    } catch (const InvalidArgument &) {
      keys.emplace_back();
    }
    const auto same = keys.back() ? std::find(keys.begin(), keys.end(), keys.back()) : keys.end() - 1;
    leader.push_back(static_cast<std::size_t>(same - keys.begin()));
  }
  return leader;
}

// A Q cache directory for one run (under TMPDIR), removed with everything in it at the end.
class RunQCache {
public:
  RunQCache() {
    static std::atomic<int> runs{0};
    path_ = std::filesystem::temp_directory_path() /
            ("mri-q-" + std::to_string(::getpid()) + "-" + std::to_string(runs++));
    std::filesystem::create_directories(path_);
  }
  ~RunQCache() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  RunQCache(const RunQCache &) = delete;
  RunQCache &operator=(const RunQCache &) = delete;
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

// The items `todo`, `jobs` at a time (the calling thread is one of them); the cores are shared
// among the threads that run (one leader alone gets them all).
void run_items(const std::vector<std::size_t> &todo, const ReconInputs &in, const ReconOptions &o, int jobs,
               Progress &progress, std::vector<ItemOutcome> &out) {
  if (todo.empty()) return;
  std::atomic<std::size_t> next{0};
  jobs = std::min<int>(jobs, static_cast<int>(todo.size()));
  const int threads = std::max(1, omp_get_max_threads() / jobs);
  const auto work = [&] {
    omp_set_num_threads(threads); // this thread's OpenMP team for its reconstructions
    for (std::size_t n = next++; n < todo.size(); n = next++) {
      const std::size_t i = todo[n];
      try {
        out[i].image = reconstruct_item(in.problems[i], in, o, progress, out[i].reports);
      } catch (...) { // one item failing does not lose the others
        out[i].error = std::current_exception();
        out[i].image = Image(in.output);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int j = 1; j < jobs; ++j) pool.emplace_back(work);
  work();
  for (std::thread &t : pool) t.join();
}

} // namespace

std::vector<ItemOutcome> reconstruct_batch(const ReconInputs &in, const ReconOptions &options, int jobs,
                                           Progress &progress) {
  std::vector<ItemOutcome> out(in.problems.size());
  ReconOptions o = options;
  const std::vector<std::size_t> leader = q_leaders(in, o);
  std::vector<std::size_t> first, rest;
  for (std::size_t i = 0; i < leader.size(); ++i) (leader[i] == i ? first : rest).push_back(i);
  // Items sharing a Q: their leaders run first and store it, the rest load it (report: miss,
  // then hit). Without --q-cache the store is a directory of this run only.
  std::optional<RunQCache> run_cache;
  if (!rest.empty() && o.normal == Normal::Toeplitz && o.q_cache_dir.empty()) o.q_cache_dir = run_cache.emplace().path();
  run_items(first, in, o, jobs, progress, out);
  run_items(rest, in, o, jobs, progress, out);
  return out;
}

} // namespace mri::cli
