// reconstruct_frames on the CUDA backend against the CPU: each frame's operators on the device,
// the one solver template on a stack of device images (FrameStack<DeviceImage>, FrameTermOps).
// Tags: [gpu][sparse][frames]; [small] the quick subset compute-sanitizer runs.
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "mri/dynamic.hpp"
#include "mri/error.hpp"
#include "mri/phantom.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// 4 frames of a 48^2 Shepp-Logan, 12 golden-angle spokes each from one continuous acquisition,
// 2 coils with given constant maps (1 and 0.5i: the same SENSE operator on both backends), SNR 30.
struct Series {
  Grid grid{48, 48};
  std::vector<KSpaceData> frames;
  std::shared_ptr<const CoilSensitivities> maps;
  Series() {
    const int count = 4, spokes = 12, readout = 96;
    const Trajectory all = traj::radial(grid, count * spokes, readout, traj::SpokeOrder::GoldenAngle);
    const std::size_t per = static_cast<std::size_t>(spokes * readout);
    const cfloat second(0.0f, 0.5f);
    for (int f = 0; f < count; ++f) {
      const Trajectory t(2, std::vector<KPoint>(all.points().begin() + static_cast<std::ptrdiff_t>(f * per),
                                                all.points().begin() + static_cast<std::ptrdiff_t>((f + 1) * per)));
      std::vector<cfloat> s = Phantom::shepp_logan_2d().kspace(t, grid);
      for (std::size_t m = 0; m < per; ++m) s.push_back(s[m] * second);
      add_noise(s, 30.0, 60 + static_cast<std::uint64_t>(f));
      frames.emplace_back(t, std::move(s), std::vector<float>{}, 2);
    }
    std::vector<cfloat> values(static_cast<std::size_t>(grid.voxels()), cfloat(1, 0));
    values.resize(2 * values.size(), second);
    maps = std::make_shared<const CoilSensitivities>(grid, 2, std::move(values));
  }
};

ReconOptions options(Backend backend, const Series &s) {
  ReconOptions o;
  o.backend = backend;
  o.method = Method::Exact; // the same F^H D and Q on both backends up to float rounding
  o.solver.iterations = 15;
  o.solver.tolerance = 0;
  o.coils.sensitivities = s.maps;
  return o;
}

} // namespace

TEST_CASE("gpu frames: joint reconstruction iterates as on the CPU", "[gpu][sparse][frames][small]") {
  const Series s;
  const char *terms = GENERATE("", "T:1024:0:0.01", "W:3:0:0.005", "T:3:0:0.005 T:1024:0:0.01");
  INFO("terms: " << terms);
  ReconOptions cpu_o = options(Backend::Cpu, s), gpu_o = options(Backend::Cuda, s);
  std::istringstream words(terms);
  for (std::string spec; words >> spec;) {
    cpu_o.solver.terms.push_back(parse_bart_term(spec));
    gpu_o.solver.terms.push_back(parse_bart_term(spec));
  }
  cpu_o.solver.proximal.cycle_spinning = gpu_o.solver.proximal.cycle_spinning = false;
  const FramesResult cpu = reconstruct_frames(s.frames, s.grid, cpu_o);
  const FramesResult gpu = reconstruct_frames(s.frames, s.grid, gpu_o);
  CHECK(gpu.report.backend == Backend::Cuda);
  CHECK(gpu.report.solver == cpu.report.solver);
  CHECK(gpu.report.iterations == cpu.report.iterations);
  REQUIRE(gpu.frames.size() == 4);
  // Float rounding differs (fused multiply-adds, reduction order): 1e-3 relative after 15
  // iterations separates it from a wrong frame or term, which moves an image by O(1).
  for (std::size_t f = 0; f < 4; ++f) {
    INFO("frame " << f);
    CHECK(test::relative_error(gpu.frames[f], cpu.frames[f]) < 1e-3);
  }
  CHECK(gpu.report.device_seconds.size() == 1);
}

TEST_CASE("gpu frames: locally low rank iterates as on the CPU", "[gpu][sparse][frames][llr][small]") {
  // Cycle spinning on: FrameTermOps draws the block shifts on the host from the solver's seed, so
  // both backends shrink the same block grids at every iteration.
  const Series s;
  ReconOptions cpu_o = options(Backend::Cpu, s), gpu_o = options(Backend::Cuda, s);
  for (ReconOptions *o : {&cpu_o, &gpu_o}) {
    o->solver.terms = {parse_bart_term("L:3:3:0.02")};
    o->solver.terms[0].block = 7; // 48 = 6 x 7 + 6: partial blocks at the wrapped border
  }
  const FramesResult cpu = reconstruct_frames(s.frames, s.grid, cpu_o);
  const FramesResult gpu = reconstruct_frames(s.frames, s.grid, gpu_o);
  CHECK(gpu.report.backend == Backend::Cuda);
  CHECK(gpu.report.solver == cpu.report.solver);
  CHECK(gpu.report.iterations == cpu.report.iterations);
  REQUIRE(gpu.report.objective.size() == cpu.report.objective.size());
  // The objective holds lambda times the nuclear norms (value() on each backend's frames).
  CHECK(std::abs(gpu.report.objective.back() - cpu.report.objective.back()) <=
        1e-3 * std::abs(cpu.report.objective.back()));
  REQUIRE(gpu.frames.size() == 4);
  for (std::size_t f = 0; f < 4; ++f) { // 1e-3 after 15 iterations: as the case above
    INFO("frame " << f);
    CHECK(test::relative_error(gpu.frames[f], cpu.frames[f]) < 1e-3);
  }
  // auto runs it on the device now.
  ReconOptions auto_o = gpu_o;
  auto_o.backend = Backend::Auto;
  auto_o.solver.iterations = 2;
  CHECK(reconstruct_frames(s.frames, s.grid, auto_o).report.backend == Backend::Cuda);
}

TEST_CASE("gpu frames: locally low rank beyond 32 frames is refused on the GPU and runs on the CPU under auto",
          "[gpu][sparse][frames][llr]") {
  // 33 frames of 2 spokes on 16^2 (one coil): only the backend's choice is under test.
  const Grid grid(16, 16);
  const int count = 33, spokes = 2, readout = 32;
  const Trajectory all = traj::radial(grid, count * spokes, readout, traj::SpokeOrder::GoldenAngle);
  const std::size_t per = static_cast<std::size_t>(spokes * readout);
  std::vector<KSpaceData> frames;
  for (int f = 0; f < count; ++f) {
    const Trajectory t(2, std::vector<KPoint>(all.points().begin() + static_cast<std::ptrdiff_t>(f * per),
                                              all.points().begin() + static_cast<std::ptrdiff_t>((f + 1) * per)));
    frames.emplace_back(t, Phantom::shepp_logan_2d().kspace(t, grid), std::vector<float>{}, 1);
  }
  ReconOptions o;
  o.backend = Backend::Cuda;
  o.method = Method::Exact;
  o.solver.iterations = 1;
  o.solver.terms = {parse_bart_term("L:3:3:0.01")};
  o.solver.terms[0].block = 4;
  try {
    reconstruct_frames(frames, grid, o);
    FAIL("33 frames ran on the GPU");
  } catch (const Unsupported &e) {
    CHECK(std::string(e.what()).find("33") != std::string::npos);
  }
  o.backend = Backend::Auto;
  const FramesResult r = reconstruct_frames(frames, grid, o);
  CHECK(r.report.backend == Backend::Cpu);
  CHECK(r.report.backend_note.find("33") != std::string::npos);
}
