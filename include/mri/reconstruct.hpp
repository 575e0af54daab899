#pragma once
// mri::reconstruct: F^H D, Q, then conjugate gradient on (F^H W F + lambda R^H R) x = F^H W D.
#include <functional>
#include <vector>

#include "mri/conjugate_gradient.hpp"
#include "mri/kspace.hpp"
#include "mri/options.hpp"
#include "mri/regularizer.hpp"

namespace mri {

struct ReconOptions {
  int iterations = 20;
  double tolerance = 1e-6; // relative residual at which CG stops early
  double lambda = 0.0;
  Regularizer regularizer = Regularizer::None;
  Backend backend = Backend::Auto;
  Precision precision = Precision::Float32; // of F^H D and Q (the CG itself is float32 + double reductions)
  KernelPolicy policy = KernelPolicy::Auto;
  // Called after each CG iteration with (iteration, iterate, relative residual).
  std::function<void(int, const Image &, double)> on_iteration;
};

struct ReconReport {
  Backend backend = Backend::Cpu; // the backend that ran
  double fhd_seconds = 0;         // F^H (w .* D)
  double q_seconds = 0;           // Q on the 2x grid + its FFT (the Toeplitz kernel)
  double cg_seconds = 0;          // all CG iterations
  double total_seconds = 0;
  int iterations = 0;
  CgStatus status = CgStatus::NotRun;
  std::vector<double> residuals; // relative residual before the first and after each iteration
};

struct ReconResult {
  Image image;
  ReconReport report;
};

// Throws InvalidArgument for bad data/grid/options (sizes, dims, k outside the grid,
// lambda < 0, iterations < 0); Unsupported when backend == Cuda cannot run here.
ReconResult reconstruct(const KSpaceData &data, const Grid &grid, const ReconOptions &options = {});

} // namespace mri
