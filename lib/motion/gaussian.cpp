// Separable 3D Gaussian (the GPU motion paper's section 4.2; mri/motion.hpp): three 1D passes
// instead of one (2r+1)^3 convolution.
#include <algorithm>
#include <cmath>
#include <string>

#include "cpu_stages.hpp"
#include "mri/error.hpp"

namespace mri::detail::motion {

std::vector<double> gaussian_taps(double s, const char *name) {
  if (!std::isfinite(s) || s < 0)
    invalid_argument(name, s, "must be finite and >= 0");
  const int r = static_cast<int>(std::ceil(3 * s - 1e-9)); // 3 std; 1e-9: 3 * (7/3) is 7, not 8
  if (2 * r + 1 > kMaxGaussianSize)
    invalid_argument(name, s,
                     "Gaussian kernel 2 ceil(3 std) + 1 = " + std::to_string(2 * r + 1) +
                         " taps exceeds the supported 15 (std <= 7/3)");
  std::vector<double> taps(static_cast<std::size_t>(2 * r + 1), 1.0);
  double sum = 0;
  for (int k = -r; k <= r; ++k)
    sum += taps[k + r] = r ? std::exp(-k * k / (2 * s * s)) : 1.0;
  for (double &t : taps)
    t /= sum;
  return taps;
}

namespace {

// out = taps * in along `axis` (clamp-to-edge).
template <class T>
void convolve_axis(const Volume<T> &in, Volume<T> &out, const std::vector<T> &taps, int axis) {
  const Grid &g = in.grid;
  const std::int64_t n = g.extent(axis), stride = axis == 0   ? 1
                                                  : axis == 1 ? g.nx()
                                                              : g.nx() * g.ny();
  const int r = static_cast<int>(taps.size() / 2);
#pragma omp parallel for collapse(2) schedule(static) if (g.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const std::int64_t v = g.index(x, y, z), i = axis == 0 ? x : axis == 1 ? y : z;
        T acc = 0;
        for (int k = -r; k <= r; ++k) {
          const std::int64_t j = std::clamp<std::int64_t>(i + k, 0, n - 1);
          acc += taps[k + r] * in.v[v + (j - i) * stride];
        }
        out.v[v] = acc;
      }
}

} // namespace

template <class T> void gaussian(Volume<T> &f, Volume<T> &tmp, const std::vector<double> &taps) {
  if (taps.size() == 1)
    return;
  const std::vector<T> t(taps.begin(), taps.end());
  convolve_axis(f, tmp, t, 0);
  convolve_axis(tmp, f, t, 1);
  convolve_axis(f, tmp, t, 2);
  f.v.swap(tmp.v);
}

template void gaussian(Volume<float> &, Volume<float> &, const std::vector<double> &);
template void gaussian(Volume<double> &, Volume<double> &, const std::vector<double> &);

} // namespace mri::detail::motion
