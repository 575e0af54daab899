// Low-resolution coil images from the k-space centre (calibration.hpp).
#include "calibration.hpp"

#include <algorithm>
#include <cmath>
#include <list>
#include <mutex>
#include <numbers>
#include <string>

#include "mri/density.hpp"
#include "mri/error.hpp"
#include "mri/nufft.hpp"
#include "mri_backend/nufft_access.hpp"

namespace mri::detail {
namespace {

// Pipe-Menon's weights of the calibration samples, kept for the last few (trajectory, grid)
// pairs: the slices and repetitions of a batch share one trajectory, and the iteration is a large
// share of a 2D direct estimate (docs/cli.md, the 64-slice batch's coil maps). Entries are matched
// on the whole point list, not a hash, so a match is never a collision.
std::vector<float> calibration_weights(const Trajectory &cal, const Grid &grid) {
  struct Entry {
    Grid grid;
    std::vector<KPoint> points;
    std::vector<float> weights;
  };
  static std::mutex mutex;
  static std::list<Entry> kept; // most recent first
  constexpr std::size_t kKept = 4;
  const auto same = [&](const Entry &e) {
    return e.grid == grid && e.points.size() == cal.size() &&
           std::equal(e.points.begin(), e.points.end(), cal.points().begin(), [](const KPoint &a, const KPoint &b) {
             return a.kx == b.kx && a.ky == b.ky && a.kz == b.kz;
           });
  };
  {
    std::lock_guard lock(mutex);
    const auto hit = std::find_if(kept.begin(), kept.end(), same);
    if (hit != kept.end()) {
      kept.splice(kept.begin(), kept, hit);
      return kept.front().weights;
    }
  }
  std::vector<float> w = density::pipe_menon(cal, grid).weights; // outside the lock: callers run at once
  std::lock_guard lock(mutex);
  kept.push_front({grid, cal.points(), w});
  if (kept.size() > kKept) kept.pop_back();
  return w;
}

} // namespace

std::vector<cfloat> low_resolution_images(const KSpaceData &data, const Grid &grid, int calibration, bool taper,
                                          double tolerance, Backend backend) {
  const Trajectory trajectory = data.trajectory().wrapped(grid);
  const double half = calibration / 2.0;
  std::vector<std::size_t> index;
  std::vector<KPoint> points;
  std::vector<float> factor; // Hann taper (1 without)
  for (std::size_t m = 0; m < trajectory.size(); ++m) {
    const KPoint &k = trajectory[m];
    if (std::abs(k.kx) >= half || std::abs(k.ky) >= half || std::abs(k.kz) >= half) continue;
    const double r = std::min(1.0, std::sqrt(double(k.kx) * k.kx + double(k.ky) * k.ky + double(k.kz) * k.kz) / half);
    index.push_back(m);
    points.push_back(k);
    factor.push_back(taper ? static_cast<float>(0.5 * (1.0 + std::cos(std::numbers::pi * r))) : 1.0f);
  }
  if (index.size() < 8)
    invalid_argument("calibration samples", index.size(),
                     "too few samples with |k| < sensitivity.calibration / 2 = " + std::to_string(half) +
                         " to estimate coil maps (need >= 8)");
  Trajectory cal(trajectory.dims(), std::move(points));
  if (data.has_weights())
    for (std::size_t i = 0; i < index.size(); ++i) factor[i] *= data.weights()[index[i]];
  else {
    const std::vector<float> w = calibration_weights(cal, grid);
    for (std::size_t i = 0; i < index.size(); ++i) factor[i] *= w[i];
  }

  NufftOptions o;
  o.tolerance = tolerance;
  o.backend = backend;
  const NufftOperator op(std::move(cal), grid, o);
  const std::size_t m = data.samples_per_coil(), n = static_cast<std::size_t>(grid.voxels());
  std::vector<cfloat> images(n * static_cast<std::size_t>(data.coils())), y(index.size());
  for (int c = 0; c < data.coils(); ++c) {
    const cfloat *coil = data.samples().data() + static_cast<std::size_t>(c) * m;
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = coil[index[i]] * factor[i];
    NufftAccess::adjoint(op, y.data(), images.data() + static_cast<std::size_t>(c) * n); // into the coil's slot
  }
  return images;
}

} // namespace mri::detail
