#pragma once
// k-space sample positions in cycles per field of view, as BART's `traj` writes them:
// a sample at k contributes exp(-i 2 pi sum_a k_a x_a / n_a) in the forward operator.
//
// Thread safety: Trajectory and KPoint are immutable values after construction; the generators
// below are pure functions of their arguments: all may be used from any number of threads at once.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mri/grid.hpp"

namespace mri {

// One sample position; kz == 0 for 2D trajectories. AoS so a sample's coordinates share a
// cache line (the constant-memory layout of the F^H D stages, Stone et al. 2008;
// docs/architecture.md).
struct KPoint {
  float kx = 0, ky = 0, kz = 0;
};

class Trajectory {
public:
  Trajectory() = default;
  // Throws InvalidArgument when dims is not 2 or 3, a coordinate is NaN/Inf, or a 2D
  // trajectory has kz != 0.
  Trajectory(int dims, std::vector<KPoint> points);

  int dims() const { return dims_; }
  std::size_t size() const { return points_.size(); }
  bool empty() const { return points_.empty(); }
  const KPoint &operator[](std::size_t m) const { return points_[m]; }
  const std::vector<KPoint> &points() const { return points_; }
  const KPoint *data() const { return points_.data(); }

  // Throws InvalidArgument unless every sample lies in [-n/2, n/2) on each axis of `grid`
  // and the trajectory's dimensionality matches the grid's. Names the first bad sample.
  void check_within(const Grid &grid) const;

  // What the operators accept. On the integer voxel grid a sample at k and at k + n are the
  // same DFT sample (exp(i 2 pi (k + n) x / n) = exp(i 2 pi k x / n) for integer x), so a
  // spiral ending exactly at |k| = n/2 or a gradient overshoot is valid data. Throws
  // InvalidArgument when dims differ from the grid's or a coordinate lies beyond 3n/2 on its
  // axis (almost always a unit mistake: cycles per FOV are expected, not [-0.5, 0.5]), naming
  // the first such sample; returns how many samples lie outside [-n/2, n/2).
  std::size_t check_range(const Grid &grid) const;
  // Every coordinate outside [-n/2, n/2) replaced by its periodic image k - n round(k / n)
  // (check_range's errors first): the same operators, and a trajectory that passes check_within.
  Trajectory wrapped(const Grid &grid) const &;
  Trajectory wrapped(const Grid &grid) &&;

private:
  int dims_ = 2;
  std::vector<KPoint> points_;
};

// Trajectory generators. Every generator returns points strictly inside [-n/2, n/2) of the
// grid it is given (so they pass check_within), ordered readout-fastest.
namespace traj {

// Every grid point, in voxel-index order (kx fastest).
Trajectory cartesian(const Grid &grid);

enum class SpokeOrder { Uniform, GoldenAngle };
// 2D radial: `spokes` full-diameter spokes of `readout` samples, k = -n/2 .. n/2 - n/readout
// along the spoke (DC at sample readout/2). Uniform: angles pi*s/spokes; GoldenAngle:
// s * 111.246 degrees (mod 180).
Trajectory radial(const Grid &grid, int spokes, int readout, SpokeOrder order = SpokeOrder::Uniform);

// 2D Archimedean spiral, `interleaves` rotated copies of `samples_per_interleave` points
// from the centre to radius n/2 (exclusive). Radial spacing between turns is 1 cycle/FOV
// times `undersampling`, so undersampling = 1 is Nyquist-sampled.
Trajectory spiral(const Grid &grid, int interleaves, int samples_per_interleave,
                  double undersampling = 1.0);

// 2D PROPELLER: `blades` rectangular blades of `lines_per_blade` parallel Cartesian lines of
// `readout` samples, blade b rotated by pi*b/blades around the centre.
Trajectory propeller(const Grid &grid, int blades, int lines_per_blade, int readout);

// 3D stack of stars: a 2D radial pattern (spokes x readout) on each of the nz Cartesian
// kz partitions.
Trajectory stack_of_stars(const Grid &grid, int spokes, int readout,
                          SpokeOrder order = SpokeOrder::GoldenAngle);

// 3D koosh ball: `spokes` full-diameter spokes of `readout` samples through the centre.
// Uniform: directions spread over the sphere by a Fibonacci (golden-spiral) lattice, ordered by
// height (uniform as a whole, not in any shorter run). GoldenAngle: the multidimensional golden
// means of Chan et al. (MRM 61:354, 2009), height frac(s phi1) and azimuth 2 pi frac(s phi2):
// every contiguous run of spokes is nearly uniform, as continuous free-breathing acquisitions
// sorted into frames need.
Trajectory koosh(const Grid &grid, int spokes, int readout, SpokeOrder order = SpokeOrder::Uniform);

// M points uniform in [-n/2, n/2)^d, reproducible from `seed`.
Trajectory uniform_random(const Grid &grid, std::size_t m, std::uint64_t seed);

} // namespace traj
} // namespace mri
