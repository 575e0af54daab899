// The gridding reconstruction baseline (gridding.hpp).
#include "mri/gridding.hpp"

#include "mri/coils.hpp"
#include "mri/density.hpp"
#include "mri/error.hpp"
#include "mri/linear_operator.hpp"

namespace mri {

Image gridding_reconstruction(const KSpaceData &data, const Grid &grid, const GriddingOptions &options) {
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
  std::vector<Image> coil_images;
  for (int c = 0; c < data.coils(); ++c) {
    const cfloat *coil = data.samples().data() + static_cast<std::size_t>(c) * t.size();
    for (std::size_t m = 0; m < y.size(); ++m) y[m] = coil[m] * (w[m] * scale);
    coil_images.push_back(mri::adjoint(op, y));
  }
  return data.coils() == 1 ? std::move(coil_images[0]) : root_sum_of_squares(coil_images);
}

} // namespace mri
