#include "mri/regularizer.hpp"

#include <cmath>

#include "mri/error.hpp"

namespace mri {

const char *to_string(Regularizer r) {
  switch (r) {
  case Regularizer::None: return "none";
  case Regularizer::Tikhonov: return "tikhonov";
  case Regularizer::FiniteDifference: return "finite-difference";
  }
  return "?";
}

namespace {

// D^H D for forward differences with D x[n-1] = 0 (no wrap): the Neumann Laplacian
// 2x[i] - x[i-1] - x[i+1] in the interior, x[0]-x[1] and x[n-1]-x[n-2] at the ends.
void add_difference_normal(float lambda, const Grid &g, const cfloat *in, cfloat *out) {
  const std::int64_t stride[3] = {1, g.nx(), g.nx() * g.ny()};
  const std::int64_t n = g.voxels();
#pragma omp parallel for schedule(static)
  for (std::int64_t v = 0; v < n; ++v) {
    const std::int64_t pos[3] = {v % g.nx(), (v / g.nx()) % g.ny(), v / (g.nx() * g.ny())};
    cfloat acc = 0;
    for (int a = 0; a < 3; ++a) {
      if (pos[a] > 0) acc += in[v] - in[v - stride[a]];
      if (pos[a] + 1 < g.extent(a)) acc += in[v] - in[v + stride[a]];
    }
    out[v] += lambda * acc;
  }
}

} // namespace

void add_regularizer_normal(Regularizer r, double lambda, const Grid &grid, const cfloat *in,
                            cfloat *out) {
  if (!(lambda >= 0) || !std::isfinite(lambda))
    detail::invalid_argument("lambda", lambda, "must be finite and >= 0");
  if (lambda == 0 || r == Regularizer::None) return;
  const float l = static_cast<float>(lambda);
  if (r == Regularizer::Tikhonov) {
#pragma omp parallel for schedule(static)
    for (std::int64_t v = 0; v < grid.voxels(); ++v) out[v] += l * in[v];
    return;
  }
  add_difference_normal(l, grid, in, out);
}

} // namespace mri
