// Trilinear warping of the moving frame (the GPU motion paper's section 4.4; mri/motion.hpp) and
// the pyramid's resampling: both are detail::motion::trilinear (clamp-to-edge), shared with
// cuda/motion/motion_warp.cu.
#include "cpu_stages.hpp"

namespace mri::detail::motion {

template <class T> void warp(const Volume<T> &f, const Field<T> &w, Volume<T> &out) {
  const Grid &g = f.grid;
#pragma omp parallel for collapse(2) schedule(static) if (g.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const std::int64_t v = g.index(x, y, z);
        out.v[v] = trilinear(f.v.data(), g.nx(), g.ny(), g.nz(), T(x) + w[0].v[v], T(y) + w[1].v[v],
                             T(z) + w[2].v[v]);
      }
}

template <class T> void resample(const Volume<T> &f, Volume<T> &out, T scale) {
  const Grid &from = f.grid, &to = out.grid;
#pragma omp parallel for collapse(2) schedule(static) if (to.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < to.nz(); ++z)
    for (std::int64_t y = 0; y < to.ny(); ++y)
      for (std::int64_t x = 0; x < to.nx(); ++x)
        out.v[to.index(x, y, z)] = scale * trilinear(f.v.data(), from.nx(), from.ny(), from.nz(),
                                                     resample_position<T>(x, to.nx(), from.nx()),
                                                     resample_position<T>(y, to.ny(), from.ny()),
                                                     resample_position<T>(z, to.nz(), from.nz()));
}

template void warp(const Volume<float> &, const Field<float> &, Volume<float> &);
template void warp(const Volume<double> &, const Field<double> &, Volume<double> &);
template void resample(const Volume<float> &, Volume<float> &, float);
template void resample(const Volume<double> &, Volume<double> &, double);

} // namespace mri::detail::motion
