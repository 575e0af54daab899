// ImageWarp (mri/mcir.hpp): the trilinear warp of complex images by a displacement field and its
// exact transpose. Per-voxel formulas: mri/detail/mcir_stencil.hpp (shared with cuda/mcir/).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "mri/detail/mcir_stencil.hpp"
#include "mri/error.hpp"
#include "mri/mcir.hpp"

namespace mri {

namespace dm = detail::mcir;

struct ImageWarp::Plan {
  Grid grid;
  ImageWarpOptions options;
  DisplacementField field;
  std::vector<float> jacobian; // with options.jacobian_weighting
  bool identity = false;
  int slow_axis = 0;     // the axis the adjoint's slabs cut (z in 3D, y in 2D)
  std::int64_t slab = 1; // slab thickness: at least twice the field's reach along slow_axis
  std::int64_t n[3] = {1, 1, 1};
};

namespace {

// Images smaller than this run serially (the OpenMP team costs more than the loop).
constexpr std::int64_t kMinParallelVoxels = 4096;

void check_finite(const RealVolume &c, const char *name) {
  for (std::size_t i = 0; i < c.size(); ++i)
    if (!std::isfinite(c[i]))
      detail::invalid_argument(std::string("field.") + name + "[" + std::to_string(i) + "]", c[i], "must be finite");
}

bool all_zero(const DisplacementField &f, int dims) {
  const auto zero = [](const RealVolume &c) {
    return std::all_of(c.values().begin(), c.values().end(), [](float x) { return x == 0.0f; });
  };
  return zero(f.u) && zero(f.v) && (dims == 2 || zero(f.w));
}

// The adjoint's slab thickness along `axis`: a voxel at index i scatters into [i - r, i + r] with
// r = ceil(max |u_axis|) + 1 (clamping only moves positions inward), so slabs of the same colour
// (every other slab) write disjoint voxels when the thickness is at least 2 r.
std::int64_t slab_thickness(const RealVolume &component) {
  float reach = 0;
  for (const float d : component.values())
    reach = std::max(reach, std::abs(d));
  return 2 * (static_cast<std::int64_t>(std::ceil(reach)) + 1);
}

std::vector<float> jacobian_weights(const DisplacementField &f, const std::int64_t (&n)[3]) {
  std::vector<float> j(static_cast<std::size_t>(n[0] * n[1] * n[2]));
#pragma omp parallel for collapse(2) schedule(static) if (n[0] * n[1] * n[2] >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < n[2]; ++z)
    for (std::int64_t y = 0; y < n[1]; ++y)
      for (std::int64_t x = 0; x < n[0]; ++x)
        j[static_cast<std::size_t>(x + n[0] * (y + n[1] * z))] =
            dm::jacobian_weight(f.u.data(), f.v.data(), f.w.data(), n, x, y, z);
  return j;
}

void check_image(const Image &x, const Grid &grid, const char *name) {
  if (!(x.grid() == grid))
    detail::invalid_argument(std::string(name) + ".grid().voxels()", x.grid().voxels(),
                             "differs from the warp's grid (" + std::to_string(grid.voxels()) + " voxels)");
}

dm::Stencil stencil_of(const ImageWarp::Plan &p, std::int64_t x, std::int64_t y, std::int64_t z, std::int64_t v) {
  const float pos[3] = {float(x) + p.field.u[v], float(y) + p.field.v[v], float(z) + p.field.w[v]};
  return dm::stencil_at(p.n, pos);
}

} // namespace

ImageWarp::ImageWarp(const DisplacementField &field, ImageWarpOptions options) {
  for (const RealVolume *c : {&field.u, &field.v, &field.w})
    if (c->size() != static_cast<std::size_t>(c->grid().voxels()))
      detail::invalid_argument("field.u.size()", c->size(),
                               "a field needs one value per voxel (an empty field: "
                               "use ImageWarp::identity)");
  check_finite(field.u, "u");
  check_finite(field.v, "v");
  check_finite(field.w, "w");
  if (!(field.v.grid() == field.u.grid()) || !(field.w.grid() == field.u.grid()))
    detail::invalid_argument("field.v.grid().voxels()", field.v.grid().voxels(), "the components differ in grid");
  auto plan = std::make_shared<Plan>();
  plan->grid = field.grid();
  plan->options = options;
  for (int a = 0; a < 3; ++a)
    plan->n[a] = plan->grid.extent(a);
  plan->identity = all_zero(field, plan->grid.dims());
  plan->field = field;
  plan->slow_axis = plan->grid.dims() == 3 ? 2 : 1;
  plan->slab = slab_thickness(plan->slow_axis == 2 ? field.w : field.v);
  // A zero field's Jacobian is 1 everywhere: the weighted warp is the identity too.
  if (options.jacobian_weighting && !plan->identity)
    plan->jacobian = jacobian_weights(field, plan->n);
  plan_ = std::move(plan);
}

ImageWarp ImageWarp::identity(const Grid &grid) { return ImageWarp(DisplacementField(grid)); }

const Grid &ImageWarp::grid() const { return plan_->grid; }
const ImageWarpOptions &ImageWarp::options() const { return plan_->options; }
bool ImageWarp::is_identity() const { return plan_->identity; }
const DisplacementField &ImageWarp::field() const { return plan_->field; }
const std::vector<float> &ImageWarp::jacobian() const { return plan_->jacobian; }

void ImageWarp::forward(const Image &reference, Image &state) const {
  const Plan &p = *plan_;
  check_image(reference, p.grid, "reference");
  check_image(state, p.grid, "state");
  if (&reference == &state)
    detail::invalid_argument("state", "the input image", "must not alias the input");
  if (p.identity) {
    std::copy(reference.values().begin(), reference.values().end(), state.values().begin());
    return;
  }
  const float *in = reinterpret_cast<const float *>(reference.data());
  const bool weighted = !p.jacobian.empty();
#pragma omp parallel for collapse(2) schedule(static) if (p.grid.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < p.n[2]; ++z)
    for (std::int64_t y = 0; y < p.n[1]; ++y)
      for (std::int64_t x = 0; x < p.n[0]; ++x) {
        const std::int64_t v = x + p.n[0] * (y + p.n[1] * z);
        const dm::Stencil s = stencil_of(p, x, y, z, v);
        cfloat value(dm::interpolate(in, 2, s, p.n), dm::interpolate(in + 1, 2, s, p.n));
        if (weighted)
          value *= p.jacobian[static_cast<std::size_t>(v)];
        state[static_cast<std::size_t>(v)] = value;
      }
}

// The transpose: every state voxel adds its value times each corner's weight to that corner.
// Slabs along the slow axis, even slabs in parallel then odd ones (Plan::slab: same-colour slabs
// write disjoint voxels), each slab's voxels in index order: the sum at every voxel has a fixed
// order whatever the thread count.
void ImageWarp::adjoint(const Image &state, Image &reference) const {
  const Plan &p = *plan_;
  check_image(state, p.grid, "state");
  check_image(reference, p.grid, "reference");
  if (&reference == &state)
    detail::invalid_argument("reference", "the input image", "must not alias the input");
  if (p.identity) {
    std::copy(state.values().begin(), state.values().end(), reference.values().begin());
    return;
  }
  std::fill(reference.values().begin(), reference.values().end(), cfloat(0));
  const bool weighted = !p.jacobian.empty();
  const std::int64_t extent = p.n[p.slow_axis], slabs = (extent + p.slab - 1) / p.slab;
  const bool parallel = p.grid.voxels() >= kMinParallelVoxels;
  for (int colour = 0; colour < 2; ++colour) {
#pragma omp parallel for schedule(static) if (parallel)
    for (std::int64_t b = colour; b < slabs; b += 2) {
      // Slow-axis indices i of the slab; (j, x) the plane's other two (3D: y and x; 2D: x alone).
      const std::int64_t middle = p.slow_axis == 2 ? p.n[1] : 1;
      for (std::int64_t i = b * p.slab; i < std::min(extent, (b + 1) * p.slab); ++i)
        for (std::int64_t j = 0; j < middle; ++j)
          for (std::int64_t x = 0; x < p.n[0]; ++x) {
            const std::int64_t y = p.slow_axis == 2 ? j : i, z = p.slow_axis == 2 ? i : 0;
            const std::int64_t v = x + p.n[0] * (y + p.n[1] * z);
            const dm::Stencil s = stencil_of(p, x, y, z, v);
            cfloat value = state[static_cast<std::size_t>(v)];
            if (weighted)
              value *= p.jacobian[static_cast<std::size_t>(v)];
            for (int k = 0; k < 8; ++k) {
              const float w = dm::corner_weight(s, k);
              if (w != 0.0f)
                reference[static_cast<std::size_t>(dm::corner_index(s, p.n, k))] += w * value;
            }
          }
    }
  }
}

} // namespace mri
