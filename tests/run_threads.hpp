#pragma once
// Runs body(t) for t = 0 .. threads-1 on threads started together and rethrows the first
// exception. If they have not all finished by `deadline` the process ends with a message: a hung
// thread cannot be joined, so a deadlock fails the test instead of hanging CI.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mri::test {

inline void run_threads(int threads, std::chrono::seconds deadline, const std::function<void(int)> &body) {
  std::mutex m;
  std::condition_variable done_cv;
  int done = 0;
  std::exception_ptr error;
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      while (!go.load())
        std::this_thread::yield();
      std::exception_ptr e;
      try {
        body(t);
      } catch (...) {
        e = std::current_exception();
      }
      std::lock_guard lock(m);
      if (e && !error)
        error = e;
      ++done;
      done_cv.notify_one();
    });
  go = true;
  {
    std::unique_lock lock(m);
    if (!done_cv.wait_for(lock, deadline, [&] { return done == threads; })) {
      std::fprintf(stderr, "run_threads: %d of %d threads still running after %lld s: deadlock or livelock\n",
                   threads - done, threads, static_cast<long long>(deadline.count()));
      std::_Exit(1);
    }
  }
  for (auto &th : pool)
    th.join();
  if (error)
    std::rethrow_exception(error);
}

} // namespace mri::test
