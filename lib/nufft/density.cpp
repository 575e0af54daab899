// Density compensation: analytic radial and spiral weights, Pipe-Menon iteration.
#include "mri_backend/nufft_access.hpp"
#include "mri/density.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "mri/error.hpp"
#include "nufft_plan.hpp"

namespace mri::density {
namespace {

constexpr double kPi = std::numbers::pi;

void require_2d(const Trajectory &t, const Grid &grid, const char *what) {
  if (t.dims() != 2) detail::invalid_argument("trajectory.dims()", t.dims(), std::string(what) + " weights are 2D");
  if (grid.dims() != 2) detail::invalid_argument("grid.dims()", grid.dims(), std::string(what) + " weights are 2D");
}

void require_runs(const Trajectory &t, const char *name, int runs) {
  if (runs <= 0) detail::invalid_argument(name, runs, "must be positive");
  if (t.size() % static_cast<std::size_t>(runs) != 0)
    detail::invalid_argument(name, runs, "must divide trajectory.size() = " + std::to_string(t.size()));
}

} // namespace

std::vector<float> radial(const Trajectory &t, const Grid &grid, int spokes) {
  require_2d(t, grid, "radial");
  require_runs(t, "spokes", spokes);
  const std::size_t readout = t.size() / static_cast<std::size_t>(spokes);
  const double hx = grid.nx() / 2.0, hy = grid.ny() / 2.0;
  const double du = 2.0 / static_cast<double>(readout); // readout spacing, normalised units
  std::vector<float> w(t.size());
  for (std::size_t m = 0; m < t.size(); ++m) {
    const double ux = t[m].kx / hx, uy = t[m].ky / hy;
    const double r = std::hypot(ux, uy);
    // The DC sample (r ~ 0, up to float rounding of the coordinates) covers a disc of
    // radius du/2 shared by all spokes; every other sample a ring sector.
    const double area = r < 0.25 * du ? kPi * (du / 2) * (du / 2) / spokes : kPi * r * du / spokes;
    w[m] = static_cast<float>(area * hx * hy);
  }
  return w;
}

std::vector<float> spiral(const Trajectory &t, const Grid &grid, int interleaves, double undersampling) {
  require_2d(t, grid, "spiral");
  require_runs(t, "interleaves", interleaves);
  if (!(undersampling > 0) || !std::isfinite(undersampling))
    detail::invalid_argument("undersampling", undersampling, "must be positive and finite");
  const std::size_t per = t.size() / static_cast<std::size_t>(interleaves);
  const double hx = grid.nx() / 2.0, hy = grid.ny() / 2.0;
  // Adjacent arms are `undersampling` cycles/FOV apart along the longer axis (traj::spiral).
  const double n_max = static_cast<double>(std::max(grid.nx(), grid.ny()));
  const double spacing = 2.0 * undersampling / n_max; // normalised units
  std::vector<float> w(t.size());
  auto u = [&](std::size_t m, double &x, double &y) {
    x = t[m].kx / hx;
    y = t[m].ky / hy;
  };
  for (std::size_t i = 0; i < static_cast<std::size_t>(interleaves); ++i) {
    const std::size_t base = i * per;
    for (std::size_t j = 0; j < per; ++j) {
      double x, y;
      u(base + j, x, y);
      const double r = std::hypot(x, y);
      double area;
      if (per == 1 || r == 0.0) {
        // The centre: the disc inside the first step, shared by the interleaves.
        double x1 = 0, y1 = 0;
        if (per > 1) u(base + 1, x1, y1);
        const double r1 = std::hypot(x1, y1);
        area = kPi * (r1 / 2) * (r1 / 2) / interleaves;
      } else {
        double xa, ya, xb, yb;
        u(base + (j > 0 ? j - 1 : j), xa, ya);
        u(base + (j + 1 < per ? j + 1 : j), xb, yb);
        const double steps = (j > 0 && j + 1 < per) ? 2.0 : 1.0;
        const double dx = (xb - xa) / steps, dy = (yb - ya) / steps;
        area = spacing * std::abs(x * dy - y * dx) / r;
      }
      w[base + j] = static_cast<float>(area * hx * hy);
    }
  }
  return w;
}

PipeMenonResult pipe_menon(const Trajectory &trajectory, const Grid &grid, const PipeMenonOptions &options) {
  if (options.iterations < 0) detail::invalid_argument("options.iterations", options.iterations, "must be >= 0");
  if (options.threads < 0) detail::invalid_argument("options.threads", options.threads, "must be >= 0");
  if (options.width < KaiserBessel::kMinWidth || options.width > KaiserBessel::kMaxWidth)
    detail::invalid_argument("options.width", options.width, "must be in [2, 16]");
  if (!(options.oversampling >= 1.25 && options.oversampling <= 4.0))
    detail::invalid_argument("options.oversampling", options.oversampling, "must be in [1.25, 4]");
  NufftOptions o;
  o.threads = options.threads;
  o.gridding = Gridding::Gather;
  o.width = options.width;
  o.oversampling = options.oversampling;
  const NufftOperator op(trajectory, grid, o); // validates the trajectory against the grid
  detail::NufftPlan &plan = *detail::NufftAccess::plan(op);
  const std::size_t m = trajectory.size();

  std::vector<cfloat> w(m, cfloat(1.0f)), cw(m);
  PipeMenonResult result;
  auto residual = [&] {
    plan.grid_then_interpolate(w.data(), cw.data(), Gridding::Gather);
    double s = 0;
    for (std::size_t i = 0; i < m; ++i) {
      const double d = cw[i].real() - 1.0;
      s += d * d;
    }
    return std::sqrt(s / static_cast<double>(m));
  };
  result.residuals.push_back(residual());
  for (int it = 0; it < options.iterations; ++it) {
    for (std::size_t i = 0; i < m; ++i) {
      const float c = cw[i].real();
      // C is a positive kernel and w > 0, so (C w)_m >= w_m kernel(0)^2 > 0.
      w[i] = cfloat(w[i].real() / c, 0.0f);
    }
    result.residuals.push_back(residual());
  }
  // Scale to k-space area: a density of one sample per unit area converges to w_PM with
  // w_PM * prod_a (Phi(0)^2 / sigma_a) = 1 (sigma_a = G_a / n_a), Phi the kernel's transform.
  const KaiserBessel &kb = op.kernel();
  double scale = 1.0;
  for (int a = 0; a < grid.dims(); ++a)
    scale *= kb.fourier(0.0) * kb.fourier(0.0) * static_cast<double>(grid.extent(a)) /
             static_cast<double>(op.oversampled_grid().extent(a));
  result.weights.resize(m);
  for (std::size_t i = 0; i < m; ++i) result.weights[i] = static_cast<float>(w[i].real() * scale);
  return result;
}

} // namespace mri::density
