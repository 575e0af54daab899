#pragma once
// What the CUDA motion tests share: the GPU estimate against the CPU's on the same pair with the
// same options, and the bounds it is held to (each test file states why its bounds hold).
#include <algorithm>
#include <cmath>

#include "catch.hpp"
#include "mri/motion.hpp"

namespace mri::gpu_test::motion {

inline double max_difference(const DisplacementField &a, const DisplacementField &b) {
  double m = 0;
  for (std::size_t i = 0; i < a.u.size(); ++i)
    m = std::max({m, double(std::abs(a.u[i] - b.u[i])), double(std::abs(a.v[i] - b.v[i])),
                  double(std::abs(a.w[i] - b.w[i]))});
  return m;
}

// Bounds on |gpu - cpu| in voxels (mean over all voxels, max) and on the endpoint errors'
// relative difference.
struct Agreement {
  double mean = 1e-4, worst = 5e-2, epe = 0.01;
};

struct GpuCpuRun {
  DisplacementField gpu, cpu;
  MotionReport gpu_report, cpu_report;
};

// fixed -> moving estimated with `o` on the CPU and on CUDA (the GPU's report checked to be
// CUDA's).
inline GpuCpuRun estimate_both(const RealVolume &fixed, const RealVolume &moving, MotionOptions o) {
  o.backend = Backend::Cpu;
  MotionEstimator cpu(fixed.grid(), o);
  o.backend = Backend::Cuda;
  MotionEstimator gpu(fixed.grid(), o);
  GpuCpuRun run{gpu.estimate(fixed, moving), cpu.estimate(fixed, moving), {}, {}};
  run.gpu_report = gpu.report(), run.cpu_report = cpu.report();
  CHECK(run.gpu_report.backend == Backend::Cuda);
  return run;
}

// The fields agree within `bound`, the endpoint errors against `truth` (over voxels >= 3 from
// the faces) included.
inline void check_agreement(const GpuCpuRun &run, const DisplacementField &truth,
                            const Agreement &bound = {}) {
  const double mean = average_endpoint_error(run.gpu, run.cpu),
               worst = max_difference(run.gpu, run.cpu);
  const double epe_gpu = average_endpoint_error(run.gpu, truth, 3),
               epe_cpu = average_endpoint_error(run.cpu, truth, 3);
  INFO("mean |gpu - cpu| " << mean << ", max " << worst << ", epe gpu " << epe_gpu << ", cpu "
                           << epe_cpu);
  CHECK(mean < bound.mean);
  CHECK(worst < bound.worst);
  CHECK(std::abs(epe_gpu - epe_cpu) < bound.epe * epe_cpu);
}

// The multigrid's bounds (test_motion_multigrid_cuda.cpp says why): the point solvers' where the
// stopping rule took the CPU's decisions (the same V-cycle count), else what one cycle more or
// less leaves (a residual at the tolerance 1e-3, within rounding of it on one backend).
inline Agreement multigrid_agreement(const GpuCpuRun &run) {
  if (run.gpu_report.solver_cycles == run.cpu_report.solver_cycles)
    return {};
  WARN("the multigrid's cycle counts differ (gpu " << run.gpu_report.solver_cycles << ", cpu "
                                                   << run.cpu_report.solver_cycles
                                                   << "): the loose bounds apply");
  return {2e-3, 5e-2, 0.02};
}

// Both estimates, held to the point solvers' bounds, or the multigrid's where o asks for it.
inline GpuCpuRun check_gpu_matches_cpu(const RealVolume &fixed, const RealVolume &moving,
                                       const DisplacementField &truth, const MotionOptions &o) {
  GpuCpuRun run = estimate_both(fixed, moving, o);
  check_agreement(run, truth,
                  o.solver == MotionSolver::Multigrid ? multigrid_agreement(run) : Agreement{});
  return run;
}

} // namespace mri::gpu_test::motion
