// The streaming ISMRMRD reader alone (IsmrmrdReader, items dropped as they come): how long a
// file takes to open (the header, the acquisitions' headers), to hand over its first item, and to
// read whole. The file is named by MRI_BENCH_ISMRMRD, e.g. the 64-slice case of docs/cli.md:
//   mri phantom --matrix 256,256 --traj radial --spokes 256 --readout 512 --coils 8 --snr 30 \
//     --slices 64 --slice-spacing 3 --out ms.h5      (tools/dev/bench-multislice.sh)
//   MRI_BENCH_ISMRMRD=ms.h5 bench_ismrmrd_read
// Each iteration reads the file once (page cache warm after the first); the counters are the
// best of the iterations, in seconds. BM_IsmrmrdRead_HeapGuard times the global-heap guard of
// the acquisitions alone (lib/io/hdf5_heap_guard.hpp), as the reader runs it: made when the file
// is opened, then each block of 256 acquisitions checked.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <optional>

#include <hdf5.h>

#include "hdf5_heap_guard.hpp" // lib/io: the guard alone
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

// The number of elements of a rank-1 dataset.
hsize_t extent(hid_t dataset) {
  const hid_t space = H5Dget_space(dataset);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space, &n, nullptr);
  H5Sclose(space);
  return n;
}

void BM_IsmrmrdRead_HeapGuard(benchmark::State &state) {
  const char *file = std::getenv("MRI_BENCH_ISMRMRD");
  const hid_t h5 = file == nullptr ? -1 : H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t set = h5 < 0 ? -1 : H5Dopen2(h5, "dataset/data", H5P_DEFAULT);
  if (set < 0) {
    state.SkipWithError("MRI_BENCH_ISMRMRD names no ISMRMRD file with acquisitions");
    if (h5 >= 0) H5Fclose(h5);
    return;
  }
  const hsize_t n = extent(set);
  constexpr hsize_t kBlock = 256; // the reader's (lib/io/ismrmrd_blocks.cpp)
  constexpr double inf = std::numeric_limits<double>::infinity();
  double made = inf, checks = inf;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    mri::detail::VlenHeapGuard guard(file, h5, set, "dataset/data");
    const double open = seconds_since(start);
    for (hsize_t first = 0; first < n; first += kBlock) guard.check(first, kBlock);
    const double all = seconds_since(start);
    state.SetIterationTime(all);
    made = std::min(made, open);
    checks = std::min(checks, all - open);
  }
  state.counters["made_s"] = made;
  state.counters["checks_s"] = checks;
  H5Dclose(set);
  H5Fclose(h5);
}
BENCHMARK(BM_IsmrmrdRead_HeapGuard)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

} // namespace

BENCHMARK_MAIN();
