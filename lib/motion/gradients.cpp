// Spatial derivatives of the fixed frame (the GPU motion paper's section 4.1; mri/motion.hpp),
// zero at the border; the formula is detail::motion::derivative, shared with
// cuda/motion/motion_gradients.cu.
#include "cpu_stages.hpp"

namespace mri::detail::motion {

template <class T> void gradients(const Volume<T> &f, Field<T> &g, MotionDerivative scheme) {
  const Grid &grid = f.grid;
  const bool central = scheme == MotionDerivative::Central;
  const std::int64_t nx = grid.nx(), ny = grid.ny(), nz = grid.nz();
#pragma omp parallel for collapse(2) schedule(static) if (grid.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x = 0; x < nx; ++x) {
        const std::int64_t v = grid.index(x, y, z);
        g[0].v[v] = derivative(f.v.data(), v, std::int64_t{1}, x, nx, central);
        g[1].v[v] = derivative(f.v.data(), v, nx, y, ny, central);
        g[2].v[v] = derivative(f.v.data(), v, nx * ny, z, nz, central);
      }
}

template void gradients(const Volume<float> &, Field<float> &, MotionDerivative);
template void gradients(const Volume<double> &, Field<double> &, MotionDerivative);

} // namespace mri::detail::motion
