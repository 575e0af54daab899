// The C++ side of the Python call-overhead measurement (issue 44's target: NufftOperator.forward
// from Python at most 20 us over the C++ call, 32^2 voxels, 1,000 samples). What the binding
// does per call: copy the image into an owning mri::Image, then mri::forward(F, x) (value check,
// a new sample vector). Prints the median over 7 runs of 2,000 calls, microseconds per call.
// call_overhead.py runs this and the same call from Python on one machine.
#include <mri/mri.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

int main() {
  const mri::Grid grid(32, 32);
  const mri::NufftOperator op(mri::traj::uniform_random(grid, 1000, 1), grid, {});
  mri::Image x(grid);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = {float(i % 7), float(i % 3)};
  std::vector<double> runs;
  for (int run = 0; run < 7; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i) {
      const mri::Image copy(x);
      const std::vector<mri::cfloat> y = mri::forward(op, copy);
      if (y.empty()) return 1;
    }
    runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 2000 * 1e6);
  }
  std::sort(runs.begin(), runs.end());
  std::printf("%.3f\n", runs[3]);
}
