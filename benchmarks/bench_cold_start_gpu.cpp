// Cold start of the GPU reconstruction (docs/performance.md). One process, each step timed on the
// host wall clock:
//   plugin   mri::cuda_available(): the CUDA plugin's dlopen, the driver's initialisation, the
//            device query
//   context  the primary context, made through the driver API alone (cuInit,
//            cuDevicePrimaryCtxRetain): what every CUDA program pays, outside the target
//   first    the first mri::reconstruct of RECON-2D (256^2, spiral M = 2^16, 20 CG iterations)
//   warm     the median of five more
// with each call's report phases, so the first call's extra time is seen by phase. The target:
// first - warm <= 50 ms, the context not counted. Only meaningful as a fresh process:
// tools/dev/bench-cold-start.sh runs it several times and takes medians. --no-context skips the
// context step (the first reconstruct then makes the context itself).
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mri/mri.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

void check(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return;
  const char *name = nullptr;
  cuGetErrorName(r, &name);
  std::fprintf(stderr, "bench_cold_start_gpu: %s failed: %s\n", what, name ? name : "?");
  std::exit(1);
}

double make_context() {
  const auto t0 = Clock::now();
  check(cuInit(0), "cuInit");
  CUdevice device = 0;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context = nullptr;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  return ms_since(t0); // the context stays retained: the runtime inside the plugin shares it
}

struct Call {
  double wall_ms = 0;
  mri::ReconReport report;
};

Call timed_reconstruct(const mri::KSpaceData &data, const mri::Grid &grid) {
  mri::ReconOptions o;
  o.solver.iterations = 20;
  o.solver.tolerance = 0;
  o.backend = mri::Backend::Cuda;
  o.method = mri::Method::Exact; // RECON-2D by the exact sums, as docs/performance.md's table
  const auto t0 = Clock::now();
  mri::ReconResult r = mri::reconstruct(data, grid, o);
  return {ms_since(t0), std::move(r.report)};
}

void print_phases(const char *label, const Call &c) {
  const mri::ReconReport &r = c.report;
  std::printf("%s_ms=%.2f %s_setup_ms=%.2f %s_transfer_ms=%.2f %s_fhd_ms=%.2f %s_q_ms=%.2f %s_fft_setup_ms=%.2f "
              "%s_cg_ms=%.2f ",
              label, c.wall_ms, label, r.setup_seconds * 1e3, label, r.transfer_seconds * 1e3, label,
              r.fhd_seconds * 1e3, label, r.q_seconds * 1e3, label, r.fft_setup_seconds * 1e3, label,
              r.cg_seconds * 1e3);
}

} // namespace

int main(int argc, char **argv) {
  const bool context_step = !(argc > 1 && std::strcmp(argv[1], "--no-context") == 0);
  // The problem is made before anything is timed (host work only).
  const mri::Grid grid(256, 256);
  const mri::Phantom phantom = mri::Phantom::shepp_logan_2d();
  mri::Trajectory t = mri::traj::spiral(grid, 16, 4096);
  std::vector<mri::cfloat> s = phantom.kspace(t, grid);
  mri::add_noise(s, 50.0, 1);
  const mri::KSpaceData data(std::move(t), std::move(s));

  auto t0 = Clock::now();
  if (!mri::cuda_available()) {
    std::printf("SKIPPED: %s\n", mri::cuda_unavailable_reason().c_str());
    return 0;
  }
  const double plugin_ms = ms_since(t0);
  const double context_ms = context_step ? make_context() : 0.0;
  const Call first = timed_reconstruct(data, grid);
  std::vector<Call> warm;
  for (int i = 0; i < 5; ++i) warm.push_back(timed_reconstruct(data, grid));
  std::sort(warm.begin(), warm.end(), [](const Call &a, const Call &b) { return a.wall_ms < b.wall_ms; });
  std::printf("plugin_ms=%.2f context_ms=%.2f ", plugin_ms, context_ms);
  print_phases("first", first);
  print_phases("warm", warm[warm.size() / 2]);
  std::printf("extra_ms=%.2f\n", first.wall_ms - warm[warm.size() / 2].wall_ms);
  return 0;
}
