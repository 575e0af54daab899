// The motion tensor's 10 unique products (sub-task 2 of the GPU motion paper, section 3.2;
// mri/motion.hpp), the per-warp fold of the field into its time column (fold_warp_offset) and the
// Charbonnier data term's reweighting (charbonnier_weight); the Gaussian K_rho is gaussian.cpp.
#include "cpu_stages.hpp"

namespace mri::detail::motion {

template <class T>
void tensor(const Field<T> &g, const Volume<T> &fixed, const Volume<T> &moved, Tensor<T> &j) {
  const std::int64_t n = fixed.grid.voxels();
#pragma omp parallel for schedule(static) if (n >= kMinParallelVoxels)
  for (std::int64_t v = 0; v < n; ++v) {
    T p[kChannels];
    tensor_products(g[0].v[v], g[1].v[v], g[2].v[v], moved.v[v] - fixed.v[v], p);
    for (int c = 0; c < kChannels; ++c)
      j[c].v[v] = p[c];
  }
}

template <class T> void fold(Tensor<T> &j, const Field<T> &w0) {
  const std::int64_t n = w0[0].grid.voxels();
#pragma omp parallel for schedule(static) if (n >= kMinParallelVoxels)
  for (std::int64_t v = 0; v < n; ++v) {
    T p[kChannels];
    for (int c = 0; c < kChannels; ++c)
      p[c] = j[c].v[v];
    fold_warp_offset(p, w0[0].v[v], w0[1].v[v], w0[2].v[v]);
    j[kXT].v[v] = p[kXT], j[kYT].v[v] = p[kYT], j[kZT].v[v] = p[kZT];
  }
}

template <class T>
void charbonnier_reweight(const Tensor<T> &data, const Field<T> &w0, const Field<T> &w,
                          Tensor<T> &j, T inv_eps2) {
  const std::int64_t n = w0[0].grid.voxels();
#pragma omp parallel for schedule(static) if (n >= kMinParallelVoxels)
  for (std::int64_t v = 0; v < n; ++v) {
    T p[kChannels];
    for (int c = 0; c < kChannels; ++c)
      p[c] = data[c].v[v];
    const T weight = charbonnier_weight(p, w[0].v[v] - w0[0].v[v], w[1].v[v] - w0[1].v[v],
                                        w[2].v[v] - w0[2].v[v], inv_eps2);
    for (int c = 0; c < kTT; ++c)
      j[c].v[v] = weight * p[c];
  }
}

template void tensor(const Field<float> &, const Volume<float> &, const Volume<float> &,
                     Tensor<float> &);
template void tensor(const Field<double> &, const Volume<double> &, const Volume<double> &,
                     Tensor<double> &);
template void fold(Tensor<float> &, const Field<float> &);
template void fold(Tensor<double> &, const Field<double> &);
template void charbonnier_reweight(const Tensor<float> &, const Field<float> &,
                                   const Field<float> &, Tensor<float> &, float);
template void charbonnier_reweight(const Tensor<double> &, const Field<double> &,
                                   const Field<double> &, Tensor<double> &, double);

} // namespace mri::detail::motion
