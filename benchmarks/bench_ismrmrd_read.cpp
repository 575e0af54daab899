// The streaming ISMRMRD reader alone (IsmrmrdReader, items dropped as they come): how long a
// file takes to open (the header, the acquisitions' headers), to hand over its first item, and to
// read whole. The file is named by MRI_BENCH_ISMRMRD, e.g. issue 13's 64-slice case:
//   mri phantom --matrix 256,256 --traj radial --spokes 256 --readout 512 --coils 8 --snr 30 \
//     --slices 64 --slice-spacing 3 --out ms.h5      (scripts/bench-multislice.sh)
//   MRI_BENCH_ISMRMRD=ms.h5 bench_ismrmrd_read
// Each iteration reads the file once (page cache warm after the first); the counters are the
// best of the iterations, in seconds.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <optional>

#include "mri/io/ismrmrd.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void BM_IsmrmrdRead_Stream(benchmark::State &state) {
  const char *file = std::getenv("MRI_BENCH_ISMRMRD");
  if (file == nullptr) {
    state.SkipWithError("MRI_BENCH_ISMRMRD names no file");
    return;
  }
  constexpr double inf = std::numeric_limits<double>::infinity();
  double open = inf, first_item = inf, whole = inf;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    mri::IsmrmrdReader reader(file);
    open = std::min(open, seconds_since(start));
    std::optional<double> first;
    (void)reader.read([&](std::size_t, mri::IsmrmrdItem &&, const mri::IsmrmrdData &) {
      if (!first) first = seconds_since(start);
    });
    const double all = seconds_since(start);
    state.SetIterationTime(all);
    whole = std::min(whole, all);
    first_item = std::min(first_item, first.value_or(all));
  }
  state.counters["open_s"] = open;
  state.counters["first_item_s"] = first_item;
  state.counters["whole_s"] = whole;
}
BENCHMARK(BM_IsmrmrdRead_Stream)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

} // namespace

BENCHMARK_MAIN();
