// Frames from a continuous acquisition (mri/frames.hpp): equal-count amplitude bins and their
// orientation, time frames with a sliding window, the split keeping every sample exactly once,
// gating signals from files, and bad input.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <set>

#include "catch.hpp"
#include "mri/bart.hpp"
#include "mri/error.hpp"
#include "mri/frames.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// A signal that dwells at its low end (exponentially distributed), as breathing dwells at
// end-expiration, from a fresh seed.
std::vector<double> dwelling_signal(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> e(1.0);
  std::vector<double> s(n);
  for (double &v : s) v = e(rng);
  return s;
}

// Random data of `readouts` readouts of s samples, several coils, weights and sample times.
KSpaceData random_acquisition(std::int64_t readouts, int s, int coils, std::uint64_t seed) {
  const Grid grid(16, 16);
  const auto m = static_cast<std::size_t>(readouts * s);
  std::vector<float> times(m);
  for (std::size_t i = 0; i < m; ++i) times[i] = 1e-5f * static_cast<float>(i % static_cast<std::size_t>(s));
  return KSpaceData(test::random_trajectory(grid, m, seed), test::random_complex(m * static_cast<std::size_t>(coils), seed + 1),
                    test::random_weights(m, seed + 2), coils, times);
}

} // namespace

TEST_CASE("amplitude bins hold equal counts, ordered from end-expiration", "[dynamic]") {
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  for (const std::size_t readouts : {1000u, 1003u}) {
    const std::vector<double> signal = dwelling_signal(readouts, seed);
    const FrameBinning b = bin_by_amplitude(signal, 4);
    REQUIRE(b.frames.size() == 4);
    CHECK_FALSE(b.flipped); // dwells low: the low end is end-expiration
    std::set<std::int64_t> seen;
    for (std::size_t f = 0; f < 4; ++f) {
      CHECK(b.readouts_per_frame[f] == static_cast<std::int64_t>(b.frames[f].size()));
      CHECK(std::abs(static_cast<double>(b.frames[f].size()) - readouts / 4.0) < 1.0); // counts differ by <= 1
      CHECK(std::is_sorted(b.frames[f].begin(), b.frames[f].end()));
      for (std::int64_t r : b.frames[f]) {
        CHECK(seen.insert(r).second); // in one bin only
        const double v = signal[static_cast<std::size_t>(r)];
        CHECK(v >= b.bin_edges[f]);
        CHECK(v <= b.bin_edges[f + 1]);
      }
    }
    CHECK(seen.size() == readouts);
    CHECK(std::is_sorted(b.bin_edges.begin(), b.bin_edges.end()));

    // The same signal upside down: detected, negated, the same bins.
    std::vector<double> negated = signal;
    for (double &v : negated) v = -v;
    const FrameBinning n = bin_by_amplitude(negated, 4);
    CHECK(n.flipped);
    CHECK(n.frames == b.frames);
    // Told which end is expiration, the shape is not consulted (equal bins: 1000 readouts).
    if (readouts == 1000) CHECK(bin_by_amplitude(negated, 4, Expiration::Low).frames[0] == b.frames[3]);
  }
}

TEST_CASE("time frames: disjoint, sliding, and the tail reported", "[dynamic]") {
  const FrameBinning disjoint = bin_by_time(100, 20);
  REQUIRE(disjoint.frames.size() == 5);
  CHECK(disjoint.unassigned.empty());
  for (std::size_t f = 0; f < 5; ++f) {
    CHECK(disjoint.frames[f].front() == static_cast<std::int64_t>(20 * f));
    CHECK(disjoint.frames[f].back() == static_cast<std::int64_t>(20 * f + 19));
  }
  const FrameBinning tail = bin_by_time(107, 20);
  CHECK(tail.frames.size() == 5);
  CHECK(tail.unassigned == std::vector<std::int64_t>{100, 101, 102, 103, 104, 105, 106});
  CHECK_THAT(tail.note, test::contains("the last 7 readouts fill no frame"));

  const FrameBinning sliding = bin_by_time(100, 20, 10);
  REQUIRE(sliding.frames.size() == 9); // (100 - 20) / 10 + 1
  for (std::size_t f = 0; f < 9; ++f) {
    CHECK(sliding.frames[f].size() == 20);
    CHECK(sliding.frames[f].front() == static_cast<std::int64_t>(10 * f));
  }
  CHECK(sliding.unassigned.empty());
}

TEST_CASE("split_frames keeps every sample exactly once, with its coils, weight and time", "[dynamic]") {
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  const int s = 12, coils = 3;
  const std::int64_t readouts = 70;
  const KSpaceData data = random_acquisition(readouts, s, coils, seed);
  const ReadoutLayout layout{s, 0.004, {}};
  const FrameBinning b = bin_by_amplitude(dwelling_signal(static_cast<std::size_t>(readouts), seed + 3), 3);
  const std::vector<KSpaceData> frames = split_frames(data, layout, b);
  REQUIRE(frames.size() == 3);
  const std::size_t m = data.samples_per_coil();
  std::vector<int> copies(m, 0);
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const KSpaceData &fr = frames[f];
    const std::size_t mf = fr.samples_per_coil();
    REQUIRE(mf == b.frames[f].size() * s);
    REQUIRE(fr.coils() == coils);
    for (std::size_t i = 0; i < mf; ++i) {
      const std::size_t src = static_cast<std::size_t>(b.frames[f][i / s]) * s + i % s;
      ++copies[src];
      CHECK(fr.trajectory()[i].kx == data.trajectory()[src].kx);
      CHECK(fr.trajectory()[i].ky == data.trajectory()[src].ky);
      CHECK(fr.weights()[i] == data.weights()[src]);
      CHECK(fr.sample_times()[i] == data.sample_times()[src]);
      for (int c = 0; c < coils; ++c) CHECK(fr.samples()[c * mf + i] == data.samples()[c * m + src]);
    }
  }
  CHECK(std::all_of(copies.begin(), copies.end(), [](int c) { return c == 1; }));

  // Unweighted data stay unweighted.
  const KSpaceData bare(data.trajectory(), data.samples(), {}, coils);
  for (const KSpaceData &fr : split_frames(bare, layout, bin_by_time(readouts, 35)))
    CHECK_FALSE(fr.has_weights());
}

TEST_CASE("gating signals from a text column and a BART file", "[dynamic]") {
  const test::TempDir dir("frames");
  const std::vector<double> signal = dwelling_signal(40, std::random_device{}());
  {
    std::ofstream text(dir / "signal.txt");
    text << "# respiratory trace\n";
    for (double v : signal) text << v << "\n";
  }
  std::vector<cfloat> values;
  for (double v : signal) values.push_back(cfloat(static_cast<float>(v), 0.0f));
  bart::write_cfl(dir / "signal", {1, 40}, values);
  const GatingSignal text = read_gating_signal(dir / "signal.txt", 40);
  const GatingSignal cfl = read_gating_signal(dir / "signal.cfl", 40);
  REQUIRE(text.values.size() == 40);
  REQUIRE(cfl.values.size() == 40);
  for (std::size_t i = 0; i < 40; ++i) {
    CHECK(text.values[i] == Approx(signal[i]).epsilon(1e-5)); // written with 6 digits
    CHECK(cfl.values[i] == Approx(signal[i]).epsilon(1e-6));  // float
  }
  using test::contains;
  CHECK_THROWS_WITH(read_gating_signal(dir / "signal.txt", 41), contains("signal.txt.size() = 40"));
  {
    std::ofstream bad(dir / "bad.txt");
    bad << "1\nbreath\n";
  }
  CHECK_THROWS_AS(read_gating_signal(dir / "bad.txt", 2), IoError);
}

TEST_CASE("frames: bad input names the argument", "[dynamic][bad-input]") {
  using test::contains;
  const KSpaceData data = random_acquisition(64, 8, 2, 7);
  const ReadoutLayout layout{8, 0.005, {}};
  std::vector<double> signal = dwelling_signal(64, 11);
  // Bins: 64 readouts / 9 bins = 7 < the floor of 8.
  CHECK_THROWS_WITH(bin_by_amplitude(signal, 9), contains("bins = 9") && contains("at least 8 readouts per bin"));
  CHECK_THROWS_WITH(bin_by_amplitude(signal, 0), contains("bins = 0"));
  CHECK_NOTHROW(bin_by_amplitude(signal, 8));
  // A trajectory that is not whole readouts.
  CHECK_THROWS_WITH(split_frames(data, {7, 0.005, {}}, bin_by_time(64, 8)), contains("layout.samples_per_readout = 7"));
  CHECK_THROWS_WITH(readout_count(data, {8, 0.0, {}}), contains("layout.readout_seconds = 0"));
  CHECK_THROWS_WITH(readout_count(data, {8, 0.005, {0.0, 1.0}}), contains("layout.times.size() = 2"));
  // Signals: wrong length, constant, NaN.
  CHECK_THROWS_WITH(gating_signal(signal, 65), contains("signal.size() = 64"));
  CHECK_THROWS_WITH(gating_signal(std::vector<double>(64, 0.3), 64), contains("is constant"));
  signal[5] = std::nan("");
  CHECK_THROWS_WITH(gating_signal(signal, 64), contains("signal[5] = nan"));
  CHECK_THROWS_WITH(bin_by_amplitude(signal, 2), contains("signal[5] = nan"));
  // Time frames.
  CHECK_THROWS_WITH(bin_by_time(64, 7), contains("readouts_per_frame = 7"));
  CHECK_THROWS_WITH(bin_by_time(64, 65), contains("readouts_per_frame = 65"));
  CHECK_THROWS_WITH(bin_by_time(64, 16, 17), contains("step = 17"));
  // A binning that names readouts the data do not have.
  FrameBinning b = bin_by_time(64, 16);
  b.frames[1][3] = 64;
  CHECK_THROWS_WITH(split_frames(data, layout, b), contains("binning.frames[1][3] = 64"));
  b.frames[1].clear();
  CHECK_THROWS_WITH(split_frames(data, layout, b), contains("binning.frames[1].size() = 0"));
  // Requests: neither or both of bins and time frames; "header" without a signal.
  FrameRequest request;
  CHECK_THROWS_WITH(plan_frames(data, layout, request), contains("request.bins = 0"));
  request.bins = 2;
  request.frames_readouts = 16;
  CHECK_THROWS_WITH(plan_frames(data, layout, request), contains("request.bins = 2"));
  request.frames_readouts = 0;
  request.gating = "header";
  CHECK_THROWS_WITH(plan_frames(data, layout, request), contains("header_signal.size() = 0"));
  const std::vector<double> header = dwelling_signal(64, 12);
  CHECK(plan_frames(data, layout, request, header).readouts_per_frame == std::vector<std::int64_t>{32, 32});
}
