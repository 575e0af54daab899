// The Toeplitz spectrum cache under faults (mri/toeplitz_cache.hpp): a writer killed at random
// points, two processes writing one entry at once, a read-only directory, a full disk, every
// truncation and every flipped bit of an entry, an entry of the old format. In every case the
// reconstruction finishes with the image of a cache-less run, its report says what the cache did,
// and no damaged entry is ever read as valid. Figures: docs/reliability.md.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri/toeplitz.hpp"
#include "mri/toeplitz_cache.hpp"
#include "test_support.hpp"

using namespace mri;
namespace fs = std::filesystem;

namespace {

// One small problem, its cache entry and the image of a reconstruction without the cache.
struct Problem {
  Grid grid{32, 32};
  KSpaceData data;
  ReconOptions options;
  ToeplitzCacheKey key;
  std::vector<float> spectrum;
  Image reference;

  Problem() : data(make_data(grid)) {
    options.solver.iterations = 5;
    options.backend = Backend::Cpu;
    options.method = Method::Exact; // the entry below: Q by the exact sums
    key = toeplitz_cache_key(data.trajectory(), data.weights(), grid, options.precision);
    spectrum = QOperator(data.trajectory(), data.weights(), grid, {Backend::Cpu, options.precision})
                   .spectrum();
    reference = reconstruct(data, grid, options).image;
  }

  static KSpaceData make_data(const Grid &grid) {
    auto t = traj::spiral(grid, 8, 256);
    auto s = Phantom::shepp_logan_2d().kspace(t, grid);
    add_noise(s, 50.0, 3);
    auto w = test::random_weights(t.size(), 4);
    return KSpaceData(std::move(t), std::move(s), std::move(w));
  }

  // reconstruct() with the cache in `dir`; the image must be the cache-less one whatever the cache
  // did (a hit goes through the stored float32 spectrum, hence a tolerance, not bit equality).
  ReconResult recon(const fs::path &dir) const {
    ReconOptions o = options;
    o.q_cache_dir = dir;
    ReconResult r = reconstruct(data, grid, o);
    INFO("q_cache = " << static_cast<int>(r.report.q_cache)
                      << ", message: " << r.report.q_cache_message);
    CHECK(test::relative_error(r.image, reference) < 1e-5);
    return r;
  }

  fs::path entry(const fs::path &dir) const { return toeplitz_cache_file(dir, key); }
  // Stores this problem's entry in `dir`; returns its path.
  fs::path save(const fs::path &dir) const {
    save_toeplitz_spectrum(entry(dir), key, grid, spectrum);
    return entry(dir);
  }

  // A load that returns must return the very spectrum that was written.
  bool loads_intact(const fs::path &file) const {
    return load_toeplitz_spectrum(file, key, grid) == spectrum;
  }
};

const Problem &problem() {
  static const Problem p;
  return p;
}

std::vector<char> read_bytes(const fs::path &file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path &file, const std::vector<char> &bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::size_t stray_temporaries(const fs::path &dir) {
  std::size_t n = 0;
  for (const auto &e : fs::directory_iterator(dir))
    n += e.path().string().find(".tmp.") != std::string::npos;
  return n;
}

// Runs body() in a forked child that exits 0 if it returns and 1 on any exception. The children
// only write cache entries (no OpenMP, no Catch2), so forking from a process that ran OpenMP
// regions is safe.
template <class Body> pid_t fork_child(Body &&body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = 0;
    try {
      body();
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  return pid;
}

int wait_child(pid_t pid) {
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

// A child process that saves p's entry into `dir`; returns once the child is about to write.
template <class P> pid_t start_writer(const P &p, const fs::path &dir) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = fork_child([&] {
    ::close(ready[0]);
    const char go = 1;
    if (::write(ready[1], &go, 1) != 1)
      throw std::runtime_error("pipe");
    p.save(dir);
  });
  ::close(ready[1]);
  char go = 0;
  REQUIRE(::read(ready[0], &go, 1) == 1);
  ::close(ready[0]);
  return pid;
}

// The calling thread loses write access to `dir`: mode 0555, and where the tests run as root
// (root ignores mode bits) the thread's file-system uid becomes nobody's, which drops root's
// file capabilities for this thread only (setfsuid is per thread on Linux). Restored at scope exit.
class ReadOnlyDir {
public:
  explicit ReadOnlyDir(const fs::path &dir) : dir_(dir) {
    fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec);
    if (::geteuid() == 0) {
      ::setfsuid(65534);
      restore_uid_ = true;
    }
  }
  ~ReadOnlyDir() {
    if (restore_uid_)
      ::setfsuid(0);
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
  }
  ReadOnlyDir(const ReadOnlyDir &) = delete;
  ReadOnlyDir &operator=(const ReadOnlyDir &) = delete;

private:
  fs::path dir_;
  bool restore_uid_ = false;
};

// A process-wide file size limit with SIGXFSZ ignored, so that a write past it fails with EFBIG
// as a write to a full disk fails with ENOSPC: through the same failing write() in the cache.
class FileSizeLimit {
public:
  explicit FileSizeLimit(rlim_t bytes) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved_) == 0);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit &) = delete;
  FileSizeLimit &operator=(const FileSizeLimit &) = delete;

private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

} // namespace

TEST_CASE("q-cache faults: a writer killed at random points never leaves a readable corrupt entry "
          "(100 trials)",
          "[q-cache-faults]") {
  const Problem &p = problem();
  test::TempDir dir("qcache_kill");
  // How long a child's write takes (create, write, fsync, rename, directory fsync), timed as the
  // trials time it: from the child's "go" to its exit, the longest of 5. The kills are spread
  // over 2.5 times that: wide enough that kills land both before and after the rename although
  // fsync's latency varies from run to run by an order of magnitude. (Timed in this process
  // instead, the write is too short under ASan: the forked children, paying the copy-on-write
  // faults of a process with a sanitizer's shadow memory, take far longer, and every kill landed
  // before the rename.)
  double write_us = 0;
  for (int i = 0; i < 5; ++i) {
    const pid_t pid = start_writer(p, dir / "timing");
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(WEXITSTATUS(wait_child(pid)) == 0);
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - t0;
    write_us = std::max(write_us, took.count());
  }

  std::mt19937_64 rng(14);
  std::uniform_real_distribution<double> when(0.0, 2.5 * write_us);
  int killed = 0, absent = 0, intact = 0, hits = 0, misses = 0;
  std::size_t strays = 0;
  constexpr int kTrials = 100;
  for (int trial = 0; trial < kTrials; ++trial) {
    const fs::path trial_dir = dir / ("trial" + std::to_string(trial));
    fs::create_directory(trial_dir);
    const pid_t pid = start_writer(p, trial_dir);
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(when(rng)));
    ::kill(pid, SIGKILL);
    const int status = wait_child(pid);
    killed += WIFSIGNALED(status) ? 1 : 0;
    if (!WIFSIGNALED(status))
      CHECK(WEXITSTATUS(status) == 0);

    // The entry is either absent or whole: a load never throws "rejected" and never returns other
    // bytes.
    if (fs::exists(p.entry(trial_dir))) {
      CHECK(p.loads_intact(p.entry(trial_dir)));
      ++intact;
    } else {
      ++absent;
    }
    strays += stray_temporaries(trial_dir);
    const ReconResult r = p.recon(trial_dir);
    CHECK(r.report.q_cache != QCacheStatus::Rejected);
    hits += r.report.q_cache == QCacheStatus::Hit;
    misses += r.report.q_cache == QCacheStatus::Miss;
  }
  std::printf("q-cache kill trials: %d, write %.0f us, killed %d, entry absent %d, whole %d, stray "
              "temporaries %zu; "
              "reconstruction hit %d, miss %d, rejected 0\n",
              kTrials, write_us, killed, absent, intact, strays, hits, misses);
  CHECK(absent + intact == kTrials);
  CHECK(hits + misses == kTrials);
  // The kills must have landed both before and after the rename, or the trials tested nothing.
  CHECK(absent > 0);
  CHECK(intact > 0);
}

TEST_CASE("q-cache faults: two processes writing the same entry at once while it is read",
          "[q-cache-faults]") {
  const Problem &p = problem();
  test::TempDir dir("qcache_two");
  const fs::path file = p.entry(dir.path());
  constexpr int kWrites = 100;
  const auto writer = [&] {
    for (int i = 0; i < kWrites; ++i)
      p.save(dir.path());
  };
  const pid_t a = fork_child(writer);
  const pid_t b = fork_child(writer);
  // Read while both write, until both are done: every load finds no entry yet or the whole one.
  int loads = 0, intact = 0, rejected = 0, running = 2, status = 0;
  while (running > 0) {
    for (const pid_t pid : {a, b})
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        CHECK(status == 0);
        --running;
      }
    if (!fs::exists(file))
      continue;
    ++loads;
    try {
      intact += p.loads_intact(file);
    } catch (const IoError &e) {
      INFO(e.what());
      ++rejected;
    }
  }
  std::printf(
      "q-cache two writers: %d writes each, %d loads during the writes, %d intact, %d rejected\n",
      kWrites, loads, intact, rejected);
  CHECK(intact == loads);
  CHECK(rejected == 0);
  CHECK(stray_temporaries(dir.path()) == 0);
  CHECK(p.loads_intact(file));
  CHECK(p.recon(dir.path()).report.q_cache == QCacheStatus::Hit);
}

TEST_CASE("q-cache faults: a read-only cache directory", "[q-cache-faults]") {
  const Problem &p = problem();
  test::TempDir dir("qcache_ro");
  {
    ReadOnlyDir read_only(dir.path());
    // The guard must really deny writes here, or the case below would test nothing.
    CHECK(::open((dir / "probe").c_str(), O_WRONLY | O_CREAT, 0644) < 0);
    const ReconResult miss = p.recon(dir.path());
    CHECK(miss.report.q_cache == QCacheStatus::Miss);
    CHECK_THAT(miss.report.q_cache_message,
               test::contains("not stored") && test::contains("Permission denied"));
    CHECK_FALSE(fs::exists(p.entry(dir.path())));
  }
  // An entry stored earlier is still read from a directory that became read-only.
  p.save(dir.path());
  ReadOnlyDir read_only(dir.path());
  const ReconResult hit = p.recon(dir.path());
  CHECK(hit.report.q_cache == QCacheStatus::Hit);
  CHECK(hit.report.q_cache_message.empty());
}

TEST_CASE("q-cache faults: a full disk (file size limit) stores nothing and leaves nothing",
          "[q-cache-faults]") {
  const Problem &p = problem();
  test::TempDir dir("qcache_full");
  {
    // Room for the header and part of the payload: the write fails in the middle of the entry.
    FileSizeLimit limit(p.spectrum.size() * sizeof(float) / 2);
    const ReconResult r = p.recon(dir.path());
    CHECK(r.report.q_cache == QCacheStatus::Miss);
    CHECK_THAT(r.report.q_cache_message,
               test::contains("not stored") && test::contains("File too large"));
  }
  CHECK_FALSE(fs::exists(p.entry(dir.path())));
  CHECK(stray_temporaries(dir.path()) == 0);
  // With room again, the next reconstruction stores the entry and the one after reads it.
  CHECK(p.recon(dir.path()).report.q_cache == QCacheStatus::Miss);
  CHECK(p.recon(dir.path()).report.q_cache == QCacheStatus::Hit);
}

TEST_CASE("q-cache faults: every truncation and every flipped bit of an entry is rejected",
          "[q-cache-faults]") {
  const Problem &p = problem();
  test::TempDir dir("qcache_flip");
  const fs::path file = p.save(dir.path());
  const std::vector<char> good = read_bytes(file);
  REQUIRE(good.size() > p.spectrum.size() * sizeof(float));

  std::size_t accepted = 0, tried = 0;
  const auto rejects = [&](const std::vector<char> &bytes) {
    write_bytes(file, bytes);
    ++tried;
    try {
      load_toeplitz_spectrum(file, p.key, p.grid);
      ++accepted;
    } catch (const IoError &) {
    }
  };
  // Every byte of the header and the first payload values, then every 97th byte (a write per
  // case: all 16 KiB would take a minute for no new kind of damage).
  const auto cases = [&](std::size_t i) { return i < 256 || i % 97 == 0; };
  for (std::size_t size = 0; size < good.size(); ++size)
    if (cases(size))
      rejects(std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)));
  for (std::size_t byte = 0; byte < good.size(); ++byte)
    for (int bit = 0; bit < 8 && cases(byte); ++bit) {
      std::vector<char> flipped = good;
      flipped[byte] = static_cast<char>(flipped[byte] ^ (1 << bit));
      rejects(flipped);
    }
  std::vector<char> longer = good;
  longer.push_back(0);
  rejects(longer);
  std::printf("q-cache damaged entries: %zu tried, %zu accepted\n", tried, accepted);
  std::size_t expected = 1;
  for (std::size_t i = 0; i < good.size(); ++i)
    expected += cases(i) ? 9 : 0;
  CHECK(tried == expected);
  CHECK(accepted == 0);

  // The reconstruction over a damaged entry: rejected, said why, recomputed, replaced.
  struct Damage {
    std::size_t byte;
    const char *message;
  };
  for (const Damage d : {Damage{20, "another trajectory"}, Damage{100, "checksum"},
                         Damage{good.size() - 1, "checksum"}}) {
    std::vector<char> bytes = good;
    bytes[d.byte] = static_cast<char>(bytes[d.byte] ^ 0x04);
    write_bytes(file, bytes);
    const ReconResult r = p.recon(dir.path());
    CHECK(r.report.q_cache == QCacheStatus::Rejected);
    CHECK_THAT(r.report.q_cache_message, test::contains(d.message));
    CHECK(p.loads_intact(file));
  }
  write_bytes(file, std::vector<char>(good.begin(), good.end() - 7));
  const ReconResult truncated = p.recon(dir.path());
  CHECK(truncated.report.q_cache == QCacheStatus::Rejected);
  CHECK_THAT(truncated.report.q_cache_message, test::contains("truncated"));
}

TEST_CASE("q-cache faults: an entry of format version 1 is rejected, never read",
          "[q-cache-faults]") {
  const Problem &p = problem();
  test::TempDir dir("qcache_v1");
  const fs::path file = p.save(dir.path());
  std::vector<char> bytes = read_bytes(file);
  // The version field follows the 8-byte magic; version 1 had the same header layout.
  const std::uint32_t v1 = 1;
  std::memcpy(bytes.data() + 8, &v1, sizeof v1);
  write_bytes(file, bytes);
  CHECK_THROWS_WITH(load_toeplitz_spectrum(file, p.key, p.grid),
                    test::contains("format version 1"));
  const ReconResult r = p.recon(dir.path());
  CHECK(r.report.q_cache == QCacheStatus::Rejected);
  CHECK_THAT(r.report.q_cache_message, test::contains("format version 1"));
  CHECK(p.recon(dir.path()).report.q_cache == QCacheStatus::Hit);
}
