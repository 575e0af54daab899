// The gridding reconstruction baseline (gridding.hpp).
#include "mri/gridding.hpp"

#include "mri/density.hpp"
#include "mri/error.hpp"

namespace mri {

Image gridding_reconstruction(const KSpaceData &data, const Grid &grid, const GriddingOptions &options) {
  if (data.coils() != 1)
    detail::invalid_argument("data.coils()", data.coils(), "multi-coil gridding is not implemented yet");
  if (options.pipe_menon_iterations < 0)
    detail::invalid_argument("options.pipe_menon_iterations", options.pipe_menon_iterations, "must be >= 0");
  const Trajectory &t = data.trajectory();
  const NufftOperator op(t, grid, options.nufft);
  std::vector<float> w = data.weights();
  if (w.empty()) {
    density::PipeMenonOptions pm;
    pm.iterations = options.pipe_menon_iterations;
    pm.threads = options.nufft.threads;
    w = density::pipe_menon(t, grid, pm).weights;
  }
  std::vector<cfloat> y(t.size());
  const float scale = 1.0f / static_cast<float>(grid.voxels());
  for (std::size_t m = 0; m < y.size(); ++m) y[m] = data.samples()[m] * (w[m] * scale);
  return op.adjoint(y);
}

} // namespace mri
