// A program that links libmri maps no CUDA library at start, nor after a CPU reconstruction on a
// machine without a usable GPU (the driver probe answers before the plugin is loaded). Reads
// /proc/self/maps; exit 0 when it holds, 1 with the offending mapping otherwise (ctest
// plugin-lazy-load). A separate process: the [plugin] tests load plugins by path on purpose.
#include <cstdio>
#include <fstream>
#include <string>

#include <mri/mri.hpp>

namespace {

// The first mapped CUDA library, or "".
std::string cuda_mapping() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    for (const char *name : {"libcufft", "libcublas", "libcudart", "libnvJitLink", "libmri_cuda"})
      if (line.find(name) != std::string::npos) return line;
  return {};
}

bool holds(const char *when) {
  const std::string m = cuda_mapping();
  if (m.empty()) return true;
  std::fprintf(stderr, "plugin_lazy_load: %s a CUDA library is mapped: %s\n", when, m.c_str());
  return false;
}

} // namespace

int main() {
  if (!holds("at start,")) return 1;
  if (mri::cuda_available()) {
    std::puts("a CUDA device is usable: the plugin is loaded by design; only the start was checked");
    return 0;
  }
  const mri::Grid grid(32, 32);
  mri::Trajectory t = mri::traj::spiral(grid, 4, 300);
  auto samples = mri::Phantom::shepp_logan_2d().kspace(t, grid);
  mri::ReconOptions o;
  o.backend = mri::Backend::Auto;
  o.solver.iterations = 2;
  const mri::ReconResult r = mri::reconstruct(mri::KSpaceData(std::move(t), std::move(samples)), grid, o);
  std::printf("%s\n", r.report.backend_note.c_str());
  return holds("after backend = auto without a GPU,") ? 0 : 1;
}
