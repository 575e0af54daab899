#include "mri/regularizer.hpp"

#include <cmath>

#include "mri/detail/regularizer_stencil.hpp"
#include "mri/error.hpp"

namespace mri {

static_assert(static_cast<int>(Regularizer::None) == detail::kRegNone &&
                  static_cast<int>(Regularizer::Tikhonov) == detail::kRegTikhonov &&
                  static_cast<int>(Regularizer::FiniteDifference) == detail::kRegFiniteDifference,
              "the kernels' regulariser codes are the enum's values");

const char *to_string(Regularizer r) {
  switch (r) {
  case Regularizer::None: return "none";
  case Regularizer::Tikhonov: return "tikhonov";
  case Regularizer::FiniteDifference: return "finite-difference";
  }
  return "?";
}

void add_regularizer_normal(Regularizer r, double lambda, const Grid &grid, const cfloat *in,
                            cfloat *out) {
  if (!(lambda >= 0) || !std::isfinite(lambda))
    detail::invalid_argument("lambda", lambda, "must be finite and >= 0");
  if (lambda == 0 || r == Regularizer::None) return;
  // The per-voxel definition the CUDA kernels share (mri/detail/regularizer_stencil.hpp).
  const float l = static_cast<float>(lambda);
  const int code = static_cast<int>(r);
  const std::int64_t nx = grid.nx(), ny = grid.ny(), nz = grid.nz();
  const std::int64_t n = grid.voxels();
  const float *x = reinterpret_cast<const float *>(in); // std::complex<float> is float[2]
#pragma omp parallel for schedule(static)
  for (std::int64_t v = 0; v < n; ++v) {
    float re, im;
    detail::regularizer_normal_voxel<std::int64_t>(code, l, x, v, v % nx, (v / nx) % ny, v / (nx * ny), nx, ny, nz,
                                                   re, im);
    out[v] += cfloat(re, im);
  }
}

} // namespace mri
