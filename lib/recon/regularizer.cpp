#include "mri/regularizer.hpp"

#include <algorithm>
#include <cmath>
#include <string>

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

RegularizerOperator::RegularizerOperator(Regularizer r, Grid grid) : r_(r), grid_(grid) {
  if (r != Regularizer::None && r != Regularizer::Tikhonov && r != Regularizer::FiniteDifference)
    detail::invalid_argument("regularizer", static_cast<int>(r), "is not a Regularizer");
}

int RegularizerOperator::difference_axes() const {
  int axes = 0;
  for (int a = 0; a < 3; ++a) axes += grid_.extent(a) > 1;
  return axes;
}

std::vector<cfloat> RegularizerOperator::range_vector() const {
  const auto n = static_cast<std::size_t>(grid_.voxels());
  switch (r_) {
  case Regularizer::None: return {};
  case Regularizer::Tikhonov: return std::vector<cfloat>(n);
  case Regularizer::FiniteDifference: return std::vector<cfloat>(n * static_cast<std::size_t>(difference_axes()));
  }
  return {};
}

namespace {

void check_spaces(const Grid &grid, const Image &x, std::size_t range_size, std::size_t y_size) {
  if (x.grid() != grid)
    detail::invalid_argument("image.grid().voxels()", x.grid().voxels(), "differs from the operator's grid");
  if (y_size != range_size)
    detail::invalid_argument("range vector size", y_size, "must be " + std::to_string(range_size));
}

// Calls f(block, stride, extent, position along the axis) for each axis of extent > 1 and each voxel.
template <class F> void for_each_difference(const Grid &grid, F &&f) {
  const std::int64_t e[3] = {grid.nx(), grid.ny(), grid.nz()};
  const std::int64_t stride[3] = {1, e[0], e[0] * e[1]};
  const std::int64_t n = grid.voxels();
  std::int64_t block = 0;
  for (int a = 0; a < 3; ++a) {
    if (e[a] == 1) continue;
#pragma omp parallel for schedule(static)
    for (std::int64_t v = 0; v < n; ++v) f(block * n + v, v, stride[a], (v / stride[a]) % e[a] + 1 < e[a], (v / stride[a]) % e[a] > 0);
    ++block;
  }
}

} // namespace

void RegularizerOperator::forward(const Image &x, std::vector<cfloat> &y) const {
  check_spaces(grid_, x, range_vector().size(), y.size());
  if (r_ == Regularizer::Tikhonov) std::copy(x.data(), x.data() + x.size(), y.begin());
  if (r_ != Regularizer::FiniteDifference) return;
  const cfloat *in = x.data();
  for_each_difference(grid_, [&](std::int64_t i, std::int64_t v, std::int64_t stride, bool has_next, bool) {
    y[static_cast<std::size_t>(i)] = has_next ? in[v + stride] - in[v] : cfloat(0);
  });
}

void RegularizerOperator::adjoint(const std::vector<cfloat> &y, Image &x) const {
  check_spaces(grid_, x, range_vector().size(), y.size());
  cfloat *out = x.data();
  std::fill(out, out + x.size(), cfloat(0));
  if (r_ == Regularizer::Tikhonov) std::copy(y.begin(), y.end(), out);
  if (r_ != Regularizer::FiniteDifference) return;
  // (D^H d)[v] = d[v - stride] (v not first along the axis) - d[v] (v not last): one writer per voxel.
  for_each_difference(grid_, [&](std::int64_t i, std::int64_t v, std::int64_t stride, bool has_next, bool has_prev) {
    if (has_prev) out[v] += y[static_cast<std::size_t>(i - stride)];
    if (has_next) out[v] -= y[static_cast<std::size_t>(i)];
  });
}

void RegularizerOperator::normal(const Image &x, Image &out) const {
  check_spaces(grid_, x, 0, 0);
  check_spaces(grid_, out, 0, 0);
  std::fill(out.data(), out.data() + out.size(), cfloat(0));
  add_regularizer_normal(r_, 1.0, grid_, x.data(), out.data());
}

} // namespace mri
