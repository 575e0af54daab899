#pragma once
// The CPU (OpenMP) stages of the motion estimator, one file each, templated on the scalar so the
// float64 reference is the same code as the float32 fast path (explicit instantiations for float
// and double in each file). The per-voxel formulas are in include/mri/detail/motion_stencil.hpp,
// shared with the CUDA kernels.
#include <array>
#include <memory>
#include <vector>

#include "mri/detail/motion_stencil.hpp"
#include "mri/grid.hpp"
#include "mri/motion.hpp"
#include "mri_backend/motion_backend.hpp" // gaussian_taps

namespace mri {
// options.precision chooses float or double.
std::unique_ptr<MotionBackend> make_cpu_motion_backend(const Grid &grid, const MotionOptions &options);
} // namespace mri

namespace mri::detail::motion {

// The stages fork threads only for volumes of at least this many voxels (32^3): below it a
// parallel region's fork/join costs more than the loop, and on a loaded machine with few cores
// far more (a 24^3 test runs an order of magnitude slower on 2 threads than on 1 there).
inline constexpr std::int64_t kMinParallelVoxels = 32768;

template <class T> struct Volume {
  Grid grid;
  std::vector<T> v;
  Volume() = default;
  explicit Volume(const Grid &g) : grid(g), v(static_cast<std::size_t>(g.voxels())) {}
};
template <class T> using Field = std::array<Volume<T>, 3>;
template <class T> using Tensor = std::array<Volume<T>, kChannels>;


// Separable convolution along x, y, z with clamp-to-edge borders; tmp: scratch of f's grid.
template <class T> void gaussian(Volume<T> &f, Volume<T> &tmp, const std::vector<double> &taps);
// Spatial derivatives (the GPU motion paper's section 4.1; mri/motion.hpp), zero at the border.
template <class T> void gradients(const Volume<T> &f, Field<T> &g, MotionDerivative scheme);
// out(x) = f(x + w(x)), trilinear, clamp-to-edge (the paper's section 4.4).
template <class T> void warp(const Volume<T> &f, const Field<T> &w, Volume<T> &out);
// out = f trilinearly resampled onto out.grid (same field of view), times `scale`.
template <class T> void resample(const Volume<T> &f, Volume<T> &out, T scale);
// The 10 products of (Ix, Iy, Iz, It = moved - fixed) (the paper's section 3.2, sub-task 2).
template <class T>
void tensor(const Field<T> &g, const Volume<T> &fixed, const Volume<T> &moved, Tensor<T> &j);
// j -= J3 w0 (fold_warp_offset) at every voxel.
template <class T> void fold(Tensor<T> &j, const Field<T> &w0);
// The Charbonnier data term's reweighting (MotionDataTerm::Charbonnier): j = psi'(e) data on
// channels kXX..kZT at every voxel, e the residual of w - w0 under the unfolded tensor `data`
// (charbonnier_weight); j's kTT is left alone (no solver reads it).
template <class T>
void charbonnier_reweight(const Tensor<T> &data, const Field<T> &w0, const Field<T> &w,
                          Tensor<T> &j, T inv_eps2);
// One solver pass. colour < 0: a Jacobi sweep of every voxel from src into dst (distinct).
// colour >= 0: the SOR pass over the voxels of that colour (voxel_colour(..., colours)), in place
// (src and dst the same field: no neighbour of a voxel has its colour).
template <class T>
void sweep(const Tensor<T> &j, const Field<T> &src, Field<T> &dst, int colour, int colours, T alpha,
           T gamma, T omega);
// The Euler-Lagrange residual r = b - A w of the warp's linear system A w = b (b = -(j's time
// column); r = minus clg_gradient's gradient at every voxel) into r; returns ||r||^2 in double.
template <class T>
double residual(const Tensor<T> &j, const Field<T> &w, Field<T> &r, T alpha, T gamma);
// out = A x (the residual's operator, j's time column ignored); returns <x, A x> in double.
template <class T>
double apply_operator(const Tensor<T> &j, const Field<T> &x, Field<T> &out, T alpha, T gamma);
// ||b||^2 = the squared norm of j's time column (channels kXT, kYT, kZT), in double.
template <class T> double rhs_norm2(const Tensor<T> &j);
// ||r|| / ||b|| from the squares (0 when r = 0; infinite when only b = 0).
double relative_residual(double r2, double b2);
// E(w) up to a constant (motion.hpp), in double: the solvers' convergence measure.
template <class T>
double clg_energy(const Tensor<T> &j, const Field<T> &w, double alpha, double gamma);

} // namespace mri::detail::motion
