// mri::reconstruct_batch (mri/batch.hpp): each image bitwise equal to reconstruct on the item alone
// at the same OpenMP team, one Q per distinct trajectory (report: one miss, the rest hits), a
// failing item reported while the others run, an item whose Q's first item failed still run,
// items arriving through a BatchFeed, and the refusals.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "catch.hpp"
#include "mri/batch.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/density.hpp"
#include "mri/error.hpp"
#include "mri/phantom.hpp"
#include "omp_threads.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

const Grid kGrid(32, 32);

Trajectory radial_uniform() { return traj::radial(kGrid, 32, 64); }
Trajectory radial_golden() { return traj::radial(kGrid, 24, 64, traj::SpokeOrder::GoldenAngle); }
Trajectory spiral() { return traj::spiral(kGrid, 8, 200); }

// The phantom on `t` with noise of its own (seed), radial density weights where t is radial.
KSpaceData item(const Trajectory &t, std::uint64_t seed, bool radial_weights = true) {
  std::vector<cfloat> y = Phantom::shepp_logan_2d().kspace(t, kGrid);
  add_noise(y, 30, seed);
  std::vector<float> w = radial_weights ? density::radial(t, kGrid, static_cast<int>(t.size() / 64))
                                        : test::random_weights(t.size(), 99); // one key per trajectory
  return KSpaceData(t, std::move(y), std::move(w));
}

// The phantom seen by a simulated 4-coil array on `t` (SENSE with maps estimated per item).
KSpaceData multi_coil_item(const Trajectory &t, std::uint64_t seed) {
  const SimulatedCoils array(2, 4);
  std::vector<cfloat> y = array.kspace(Phantom::shepp_logan_2d(), t, kGrid);
  add_noise(y, 30, seed);
  return KSpaceData(t, std::move(y), density::radial(t, kGrid, static_cast<int>(t.size() / 64)), 4);
}

// A radial item with k four times beyond the grid (up to 2n, past reconstruct's 3n/2): it fails.
KSpaceData beyond_the_grid(std::uint64_t seed) {
  const KSpaceData good = item(radial_uniform(), seed);
  std::vector<KPoint> points = good.trajectory().points();
  for (KPoint &p : points) p.kx *= 4, p.ky *= 4;
  return KSpaceData(Trajectory(2, std::move(points)), good.samples(), good.weights());
}

// Three distinct trajectories (radial uniform: one item of 4 coils; spiral; radial golden angle)
// over seven good items, and item 5 that fails.
std::vector<KSpaceData> mixed_items() {
  std::vector<KSpaceData> items;
  items.push_back(item(radial_uniform(), 1));
  items.push_back(item(spiral(), 2, false));
  items.push_back(multi_coil_item(radial_uniform(), 3));
  items.push_back(item(radial_uniform(), 4));
  items.push_back(item(spiral(), 5, false));
  items.push_back(beyond_the_grid(6));
  items.push_back(item(spiral(), 7, false));
  items.push_back(item(radial_golden(), 8));
  return items;
}

ReconOptions cpu_options() {
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.solver.iterations = 8;
  return o;
}

bool bitwise_equal(const Image &a, const Image &b) {
  return a.grid().extents() == b.grid().extents() && std::equal(a.values().begin(), a.values().end(), b.values().begin());
}

long count_q(const std::vector<BatchResult> &r, QCacheStatus status) {
  return std::count_if(r.begin(), r.end(), [&](const BatchResult &x) { return !x.error && x.report.q_cache == status; });
}

// reconstruct on the items one after another with one Q cache directory (none: empty path):
// what a batch equals; none for an item that throws.
std::vector<std::optional<ReconResult>> serial(const std::vector<KSpaceData> &items, ReconOptions o,
                                               const std::filesystem::path &q_cache_dir) {
  o.q_cache_dir = q_cache_dir;
  std::vector<std::optional<ReconResult>> out;
  for (const KSpaceData &d : items) try {
      out.push_back(reconstruct(d, kGrid, o));
    } catch (const InvalidArgument &) {
      out.emplace_back();
    }
  return out;
}

// Each item's image and Q cache status as `reference`'s, bitwise; failed where it failed.
void check_equal(const std::vector<BatchResult> &r, const std::vector<std::optional<ReconResult>> &reference) {
  REQUIRE(r.size() == reference.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    INFO("item " << i);
    REQUIRE(static_cast<bool>(r[i].error) == !reference[i]);
    if (!reference[i]) continue;
    CHECK(bitwise_equal(r[i].image, reference[i]->image));
    CHECK(r[i].report.q_cache == reference[i]->report.q_cache);
  }
}

// This process's Q cache directories of reconstruct_batch under TMPDIR (TemporaryQCache).
std::size_t run_q_caches() {
  const std::string prefix = "mri-q-" + std::to_string(::getpid()) + "-";
  std::size_t n = 0;
  for (const auto &e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    n += e.path().filename().string().rfind(prefix, 0) == 0;
  return n;
}

} // namespace

TEST_CASE("batch: images bitwise equal to reconstruct in order, one Q per trajectory, a failed item alone", "[batch]") {
  const std::vector<KSpaceData> items = mixed_items();
  const ReconOptions o = cpu_options();
  const test::OmpThreads team(1); // every item's team: 1 thread, whatever the jobs
  BatchOptions b;
  b.jobs = 3;
  const std::vector<BatchResult> r = reconstruct_batch(items, kGrid, o, b);
  REQUIRE(r.size() == items.size());
  CHECK(run_q_caches() == 0); // the call's Q cache is gone

  CHECK(count_q(r, QCacheStatus::Miss) == 3); // one Q per distinct trajectory ...
  CHECK(count_q(r, QCacheStatus::Hit) == 4);  // ... the others loaded it
  for (const std::size_t first : {0, 1, 7}) CHECK(r[first].report.q_cache == QCacheStatus::Miss);
  REQUIRE(r[5].error);
  CHECK_THROWS_AS(std::rethrow_exception(r[5].error), InvalidArgument);
  CHECK(r[2].report.coils == 4);
  CHECK(r[2].report.maps.rfind("estimated", 0) == 0);
  const Image truth = Phantom::shepp_logan_2d().rasterize(kGrid);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i == 5) continue;
    INFO("item " << i);
    CHECK(r[i].threads == 1);
    CHECK(r[i].arrived_seconds <= r[i].started_seconds);
    CHECK(r[i].started_seconds <= r[i].finished_seconds);
    if (i != 2) CHECK(test::relative_error(r[i].image, truth) < 0.5); // the phantom, not noise
  }
  test::TempDir dir("batch");
  check_equal(r, serial(items, o, dir.path()));
}

TEST_CASE("batch: jobs = 1 and jobs = 3 give the same images; a team of 2 as reconstruct's", "[batch]") {
  const std::vector<KSpaceData> items = mixed_items();
  const ReconOptions o = cpu_options();
  std::vector<BatchResult> one, three;
  {
    const test::OmpThreads team(1);
    BatchOptions b;
    one = reconstruct_batch(items, kGrid, o, b);
    b.jobs = 3;
    three = reconstruct_batch(items, kGrid, o, b);
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    INFO("item " << i);
    CHECK(static_cast<bool>(one[i].error) == (i == 5));
    CHECK(static_cast<bool>(three[i].error) == (i == 5));
    if (i != 5) CHECK(bitwise_equal(one[i].image, three[i].image));
  }
  // One job alone gets the caller's whole team (2 threads here): reconstruct's at that team.
  const test::OmpThreads team(2);
  const std::vector<KSpaceData> two_items{items[0], items[1]};
  const std::vector<BatchResult> r = reconstruct_batch(two_items, kGrid, o);
  for (const BatchResult &x : r) CHECK(x.threads == 2);
  test::TempDir dir("batch");
  check_equal(r, serial(two_items, o, dir.path()));
}

TEST_CASE("batch: when the item computing Q fails, the next of its trajectory computes it", "[batch]") {
  // Maps of one coil: the single-coil items run as a one-coil SENSE, the 2-coil item (first of
  // the trajectory, so the others wait for its Q) fails on the coil count.
  const Trajectory t = radial_uniform();
  std::vector<cfloat> y = SimulatedCoils(2, 2).kspace(Phantom::shepp_logan_2d(), t, kGrid);
  add_noise(y, 30, 11);
  std::vector<KSpaceData> items;
  items.emplace_back(t, std::move(y), density::radial(t, kGrid, 32), 2);
  for (const std::uint64_t seed : {12, 13, 14}) items.push_back(item(t, seed));
  ReconOptions o = cpu_options();
  o.coils.sensitivities = std::make_shared<const CoilSensitivities>(SimulatedCoils(2, 1).maps(kGrid));
  const test::OmpThreads team(1);
  BatchOptions b;
  b.jobs = 3;
  const std::vector<BatchResult> r = reconstruct_batch(items, kGrid, o, b);
  REQUIRE(r[0].error);
  CHECK_THROWS_AS(std::rethrow_exception(r[0].error), InvalidArgument);
  CHECK(r[1].report.q_cache == QCacheStatus::Miss);
  test::TempDir dir("batch");
  check_equal(r, serial(items, o, dir.path()));
}

TEST_CASE("batch: items through a BatchFeed in their order of arrival; a caller's Q cache; no sharing", "[batch]") {
  const std::vector<KSpaceData> items = mixed_items();
  const test::OmpThreads team(1);
  const ReconOptions o = cpu_options();
  std::mutex mutex;
  std::vector<std::size_t> finished;
  BatchFeed feed;
  feed.items = items.size();
  feed.data = [&](std::size_t i) -> const KSpaceData & { return items[i]; };
  feed.feed = [&](const BatchArrive &arrive) {
    for (std::size_t i = items.size(); i-- > 0;) arrive(i, false); // last first
  };
  feed.finished = [&](std::size_t i, BatchResult &r) {
    const std::lock_guard lock(mutex);
    finished.push_back(i);
    if (i == 0) r.image = Image(kGrid); // the hook may change the result
  };
  test::TempDir dir("batch");
  ReconOptions cached = o;
  cached.q_cache_dir = dir.path();
  BatchOptions b;
  b.jobs = 2;
  std::vector<BatchResult> r = reconstruct_batch(feed, kGrid, cached, b);
  CHECK(finished.size() == items.size());
  CHECK(bitwise_equal(r[0].image, Image(kGrid)));
  CHECK(r[6].report.q_cache == QCacheStatus::Miss); // the last spiral item arrived first
  test::TempDir reference_dir("batch");
  std::vector<KSpaceData> reversed(items.rbegin(), items.rend());
  std::vector<std::optional<ReconResult>> reference = serial(reversed, o, reference_dir.path());
  std::reverse(reference.begin(), reference.end());
  r[0].image = reference[0]->image;
  check_equal(r, reference);
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 3); // the caller's cache kept them
  CHECK(count_q(reconstruct_batch(items, kGrid, cached, b), QCacheStatus::Hit) == 7); // all stored already

  // share_q = false: no waiting, no Q cache of the call: each item computes its own Q.
  b.share_q = false;
  check_equal(reconstruct_batch(items, kGrid, o, b), serial(items, o, {}));
}

TEST_CASE("batch: a failing feed is rethrown after the running items; bad jobs and empty batches", "[batch][bad-input]") {
  const std::vector<KSpaceData> items = mixed_items();
  const ReconOptions o = cpu_options();
  BatchOptions b;
  for (const int jobs : {0, -2}) {
    b.jobs = jobs;
    CHECK_THROWS_AS(reconstruct_batch(items, kGrid, o, b), InvalidArgument);
    CHECK_THROWS_WITH(reconstruct_batch(items, kGrid, o, b), "batch.jobs = " + std::to_string(jobs) + ": must be >= 1");
    CHECK_THROWS_AS(reconstruct_batch(std::vector<KSpaceData>{}, kGrid, o, b), InvalidArgument);
  }
  b.jobs = 2;
  CHECK(reconstruct_batch(std::vector<KSpaceData>{}, kGrid, o, b).empty());

  const test::OmpThreads team(1);
  BatchFeed feed;
  feed.items = items.size();
  feed.data = [&](std::size_t i) -> const KSpaceData & { return items[i]; };
  feed.feed = [](const BatchArrive &arrive) {
    arrive(0, false);
    throw IoError("the file ends mid-way");
  };
  CHECK_THROWS_AS(reconstruct_batch(feed, kGrid, o, b), IoError);
  CHECK_THROWS_WITH(reconstruct_batch(feed, kGrid, o, b), "the file ends mid-way");
  feed.feed = [&](const BatchArrive &arrive) { arrive(items.size(), false); };
  CHECK_THROWS_WITH(reconstruct_batch(feed, kGrid, o, b), test::contains("is not an item of the batch (8)"));
  // An item whose data cannot be had: its error; the others run.
  feed.feed = nullptr;
  feed.data = [&](std::size_t i) -> const KSpaceData & {
    if (i == 1) throw std::runtime_error("item 1 unreadable");
    return items[i];
  };
  const std::vector<BatchResult> r = reconstruct_batch(feed, kGrid, o, b);
  CHECK_THROWS_WITH(std::rethrow_exception(r[1].error), "item 1 unreadable");
  CHECK(!r[0].error);
  CHECK(!r[4].error); // a spiral item: its Q computed by another
  CHECK(r[5].error);
}
