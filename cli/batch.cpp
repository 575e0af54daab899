#include "batch.hpp"

#include <omp.h>

#include <atomic>
#include <cmath>
#include <thread>

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

} // namespace

std::vector<ItemOutcome> reconstruct_batch(const ReconInputs &in, const ReconOptions &o, int jobs, Progress &progress) {
  std::vector<ItemOutcome> out(in.problems.size());
  std::atomic<std::size_t> next{0};
  const int threads = std::max(1, omp_get_max_threads() / std::max(1, jobs));
  const auto work = [&] {
    omp_set_num_threads(threads); // this thread's OpenMP team for its reconstructions
    for (std::size_t i = next++; i < out.size(); i = next++) {
      try {
        out[i].image = reconstruct_item(in.problems[i], in, o, progress, out[i].reports);
      } catch (...) { // one item failing does not lose the others
        out[i].error = std::current_exception();
        out[i].image = Image(in.output);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int j = 1; j < std::min<int>(jobs, static_cast<int>(out.size())); ++j) pool.emplace_back(work);
  work(); // the calling thread is one of the jobs
  for (std::thread &t : pool) t.join();
  return out;
}

} // namespace mri::cli
