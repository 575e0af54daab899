#pragma once
// Reconstruction options shared by the tests that compare two solves of one problem (two
// backends, two formulations, two solvers) iteration for iteration.
#include "mri/reconstruct.hpp"

namespace mri::test {

// Exactly `iterations` solver iterations (tolerance 0: no early stop, so both solves run the same
// count), by `method` on `backend`.
inline ReconOptions fixed_iterations(int iterations, Method method = Method::Nufft, Backend backend = Backend::Cpu) {
  ReconOptions o;
  o.backend = backend;
  o.method = method;
  o.solver.iterations = iterations;
  o.solver.tolerance = 0;
  return o;
}

// The same, Tikhonov-regularised at lambda 1e-3: the normal equations of random k-space stay well
// conditioned, so float rounding in the operators stays small in the image.
inline ReconOptions tikhonov_fixed_iterations(int iterations, Method method = Method::Nufft,
                                              Backend backend = Backend::Cpu) {
  ReconOptions o = fixed_iterations(iterations, method, backend);
  o.solver.lambda = 1e-3;
  o.solver.regularizer = Regularizer::Tikhonov;
  return o;
}

} // namespace mri::test
