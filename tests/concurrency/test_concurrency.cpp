// 16 threads calling the CPU operators and mri::reconstruct at once, on different problems and on
// identical ones (thread t takes problem t % 4: four threads per problem, four problems at once),
// against a serial run of the same calls.
//
// What must be bitwise equal to the serial run: everything tested here. Each call's arithmetic
// depends only on its inputs and its OpenMP team size (gather gridding, per-voxel sums, FFTW plans
// made with FFTW_ESTIMATE, static schedules); the CG dot products are OpenMP reductions whose
// combination order is fixed for teams of at most 2 threads (a + b == b + a), so every thread here,
// serial or concurrent, runs teams of min(2, omp_get_max_threads()) threads. Larger teams give
// results that differ in the last bits (docs/reliability.md, "Determinism").
//
// Thread-safety contracts tested (stated in the headers): a CPU FourierOperator / FhDOperator is
// shared by all threads (its calls only read it); NufftOperator and QOperator own scratch buffers,
// so each thread makes its own (copies of a NufftOperator share the plan, whose calls are
// serialized: tested last);
// reconstruct() and gridding_reconstruction() are free functions safe to call concurrently, also
// with multi-coil data sharing one CoilSensitivities (immutable, read only); so is
// reconstruct_batch(), whose workers are threads of its own.
//
// A deadlock fails: the watchdog ends the process with a message after kDeadline.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "mri/batch.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/fourier.hpp"
#include "mri/gridding.hpp"
#include "mri/nufft.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri/toeplitz.hpp"
#include "run_threads.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

constexpr int kThreads = 16;
constexpr int kProblems = 4;
// Generous for a ThreadSanitizer build on 2 shared cores (the run takes seconds in Release).
constexpr auto kDeadline = std::chrono::minutes(10);

// The OpenMP team every call runs with, serial or concurrent (see the header comment).
int team_size() {
  static const int team = std::min(2, omp_get_max_threads());
  return team;
}

struct Problem {
  Grid grid;
  KSpaceData data;
};

// Different grids, trajectories and weights, small enough for a ThreadSanitizer build.
std::vector<Problem> make_problems() {
  std::vector<Problem> problems;
  for (int i = 0; i < kProblems; ++i) {
    const Grid grid(16 + 4 * i, 12 + 2 * i);
    auto t = i % 2 ? traj::radial(grid, 24 + i, 32) : traj::spiral(grid, 6 + i, 160);
    auto s = Phantom::shepp_logan_2d().kspace(t, grid);
    add_noise(s, 40.0, 10 + i);
    auto w = test::random_weights(t.size(), 20 + i);
    problems.push_back({grid, KSpaceData(std::move(t), std::move(s), std::move(w))});
  }
  return problems;
}

const std::vector<Problem> &problems() {
  static const std::vector<Problem> p = make_problems();
  return p;
}

// Runs body(t) on kThreads threads started together, each with the fixed OpenMP team (a new
// thread starts from the initial ICVs); a deadlock ends the process after kDeadline.
void run_concurrently(const std::function<void(int)> &body) {
  test::run_threads(kThreads, std::chrono::duration_cast<std::chrono::seconds>(kDeadline), [&](int t) {
    omp_set_num_threads(team_size());
    body(t);
  });
}

// What each thread computes, indexed by thread; serial[t] is the same call run alone.
template <class Result> struct Runs { std::vector<Result> serial, concurrent; };

template <class Result> Runs<Result> serial_and_concurrent(const std::function<Result(int)> &call) {
  Runs<Result> r;
  omp_set_num_threads(team_size());
  for (int t = 0; t < kThreads; ++t)
    r.serial.push_back(call(t));
  r.concurrent.resize(kThreads);
  run_concurrently([&](int t) { r.concurrent[static_cast<std::size_t>(t)] = call(t); });
  return r;
}

// Bitwise: operator== on float compares values (and -0 == 0); NaN would compare unequal and fail.
void check_bitwise(const Runs<std::vector<cfloat>> &r) {
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t << ", problem " << t % kProblems);
    const auto &s = r.serial[static_cast<std::size_t>(t)];
    REQUIRE(!s.empty());
    CHECK(std::any_of(s.begin(), s.end(),
                      [](cfloat v) { return v != cfloat{}; })); // equal zeros prove nothing
    CHECK(r.concurrent[static_cast<std::size_t>(t)] == s);
  }
}

const Problem &problem_of(int t) { return problems()[static_cast<std::size_t>(t % kProblems)]; }

} // namespace

TEST_CASE("concurrency: one shared CPU FourierOperator and FhDOperator per problem, 16 threads",
          "[concurrency]") {
  std::vector<FhDOperator> ops;
  for (const Problem &p : problems())
    ops.emplace_back(p.data.trajectory(), p.grid, OperatorOptions{});
  const auto image_of = [](int t) {
    return test::random_image(problem_of(t).grid, 100 + static_cast<unsigned>(t % kProblems));
  };
  check_bitwise(serial_and_concurrent<std::vector<cfloat>>([&](int t) {
    return mri::forward(ops[static_cast<std::size_t>(t % kProblems)].fourier(), image_of(t));
  }));
  check_bitwise(serial_and_concurrent<std::vector<cfloat>>([&](int t) {
    return ops[static_cast<std::size_t>(t % kProblems)].apply(problem_of(t).data).values();
  }));
}

TEST_CASE("concurrency: a NufftOperator and a QOperator per thread, 16 threads", "[concurrency]") {
  for (const Gridding gridding : {Gridding::Gather, Gridding::Scatter}) {
    INFO("gridding " << to_string(gridding));
    NufftOptions options;
    options.gridding = gridding;
    const auto nufft = [&](int t) {
      const Problem &p = problem_of(t);
      const NufftOperator op(p.data.trajectory(), p.grid, options);
      std::vector<cfloat> out = mri::adjoint(op, p.data.weighted_samples()).values();
      const auto forward = mri::forward(op, test::random_image(p.grid, 7));
      out.insert(out.end(), forward.begin(), forward.end());
      return out;
    };
    check_bitwise(serial_and_concurrent<std::vector<cfloat>>(nufft));
  }
  const auto q = [](int t) {
    const Problem &p = problem_of(t);
    const QOperator op(p.data.trajectory(), p.data.weights(), p.grid);
    return mri::forward(op, test::random_image(p.grid, 8)).values();
  };
  check_bitwise(serial_and_concurrent<std::vector<cfloat>>(q));
}

TEST_CASE("concurrency: 16 reconstructions and gridding reconstructions at once", "[concurrency]") {
  for (const Method method : {Method::Exact, Method::Nufft}) {
    INFO("method " << to_string(method));
    ReconOptions options;
    options.backend = Backend::Cpu;
    options.method = method;
    options.solver.iterations = 6;
    options.solver.lambda = 0.01;
    options.solver.regularizer = Regularizer::FiniteDifference;
    check_bitwise(serial_and_concurrent<std::vector<cfloat>>([&](int t) {
      return reconstruct(problem_of(t).data, problem_of(t).grid, options).image.values();
    }));
  }
  check_bitwise(serial_and_concurrent<std::vector<cfloat>>([](int t) {
    return gridding_reconstruction(problem_of(t).data, problem_of(t).grid).values();
  }));
}

TEST_CASE("concurrency: 16 multi-coil SENSE reconstructions at once: shared maps, estimated maps, compression",
          "[concurrency]") {
  // Three coils per problem (SimulatedCoils); threads of one problem share one map object (read
  // only), and every fourth thread estimates its maps and compresses to two virtual coils.
  struct MultiCoil {
    Grid grid;
    KSpaceData data;
    std::shared_ptr<const CoilSensitivities> maps;
  };
  std::vector<MultiCoil> mc;
  for (int i = 0; i < kProblems; ++i) {
    const Grid grid(20 + 4 * i, 20 + 4 * i);
    const SimulatedCoils array(2, 3);
    auto t = traj::radial(grid, 24 + i, 2 * static_cast<int>(grid.nx()));
    auto s = array.kspace(Phantom::shepp_logan_2d(), t, grid);
    add_noise(s, 40.0, 30 + i);
    mc.push_back({grid, KSpaceData(std::move(t), std::move(s), test::random_weights(t.size(), 40 + i), 3),
                  std::make_shared<const CoilSensitivities>(array.maps(grid))});
  }
  for (const Method method : {Method::Exact, Method::Nufft}) {
    INFO("method " << to_string(method));
    check_bitwise(serial_and_concurrent<std::vector<cfloat>>([&](int t) {
      const MultiCoil &p = mc[static_cast<std::size_t>(t % kProblems)];
      ReconOptions options;
      options.backend = Backend::Cpu;
      options.method = method;
      options.solver.iterations = 5;
      options.solver.lambda = 0.5;
      options.solver.regularizer = Regularizer::Tikhonov;
      if (t % 4 == 3)
        options.coils.virtual_coils = 2;
      else
        options.coils.sensitivities = p.maps;
      return reconstruct(p.data, p.grid, options).image.values();
    }));
  }
}

TEST_CASE("concurrency: 16 reconstructions sharing one Q cache directory",
          "[concurrency][q-cache]") {
  test::TempDir dir("concurrency_qcache");
  ReconOptions options;
  options.backend = Backend::Cpu;
  options.solver.iterations = 6;
  options.q_cache_dir = dir.path();
  const auto runs = serial_and_concurrent<ReconResult>(
      [&](int t) { return reconstruct(problem_of(t).data, problem_of(t).grid, options); });
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    const ReconResult &s = runs.serial[static_cast<std::size_t>(t)];
    const ReconResult &c = runs.concurrent[static_cast<std::size_t>(t)];
    // The serial pass filled the cache (one miss per problem), so every concurrent one hits, and
    // a hit computes from the same stored spectrum as the serial hits.
    CHECK(s.report.q_cache == (t < kProblems ? QCacheStatus::Miss : QCacheStatus::Hit));
    CHECK(c.report.q_cache == QCacheStatus::Hit);
    if (t >= kProblems)
      CHECK(c.image.values() == s.image.values());
  }
}

// reconstruct_batch from two threads at once, each call 4 workers over 8 items of 4 trajectories
// sharing Q through the call's own Q cache directory (mri/batch.hpp): the queue's locking under
// ThreadSanitizer, and each call's images and Q cache statuses those of reconstruct on the items
// in order with one Q cache, bitwise (teams of 1 thread: the batch sizes its teams itself).
TEST_CASE("concurrency: two batches of 8 items at once, 4 workers each, against reconstruct in order",
          "[concurrency][batch]") {
  const Grid grid(20, 16);
  std::vector<KSpaceData> items;
  for (int i = 0; i < 8; ++i) {
    auto t = i % 2 ? traj::radial(grid, 24 + i % 4, 32) : traj::spiral(grid, 6 + i % 4, 160);
    auto s = Phantom::shepp_logan_2d().kspace(t, grid);
    add_noise(s, 40.0, 30 + i);
    auto w = test::random_weights(t.size(), 40 + i % 4);
    items.emplace_back(std::move(t), std::move(s), std::move(w));
  }
  ReconOptions options;
  options.backend = Backend::Cpu;
  options.solver.iterations = 6;
  omp_set_num_threads(1);
  test::TempDir dir("concurrency_batch");
  ReconOptions cached = options;
  cached.q_cache_dir = dir.path();
  std::vector<ReconResult> serial;
  for (const KSpaceData &d : items) serial.push_back(reconstruct(d, grid, cached));
  std::vector<std::vector<BatchResult>> batches(2);
  BatchOptions b;
  b.jobs = 4;
  test::run_threads(2, std::chrono::duration_cast<std::chrono::seconds>(kDeadline), [&](int t) {
    omp_set_num_threads(1);
    batches[static_cast<std::size_t>(t)] = reconstruct_batch(items, grid, options, b);
  });
  for (const std::vector<BatchResult> &r : batches)
    for (std::size_t i = 0; i < items.size(); ++i) {
      INFO("item " << i);
      REQUIRE(!r[i].error);
      CHECK(r[i].report.q_cache == serial[i].report.q_cache);
      CHECK(r[i].image.values() == serial[i].image.values());
    }
  omp_set_num_threads(team_size());
}

// Copies of a NufftOperator share its plan and so its buffers (the staging, grid and FFT buffers
// that forward/adjoint write): the plan serializes its calls with a mutex. Without it, 13 of 16
// threads returned wrong images and ThreadSanitizer reported the race on the staging buffer.
TEST_CASE("concurrency: copies of one NufftOperator used at once are serialized, not racing",
          "[concurrency]") {
  const Problem &p = problem_of(0);
  const NufftOperator op(p.data.trajectory(), p.grid);
  const Image x = test::random_image(p.grid, 9);
  check_bitwise(serial_and_concurrent<std::vector<cfloat>>([&](int) {
    const NufftOperator copy = op;
    std::vector<cfloat> out = mri::adjoint(copy, p.data.weighted_samples()).values();
    const auto forward = mri::forward(copy, x);
    out.insert(out.end(), forward.begin(), forward.end());
    return out;
  }));
}
