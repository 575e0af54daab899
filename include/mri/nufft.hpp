#pragma once
// Fast approximate F and F^H by Kaiser-Bessel gridding (a NUFFT): O(M W^d + G log G) instead
// of the exact O(N M) sums of fourier.hpp, with the same conventions and scaling, so a
// NufftOperator is a drop-in approximation of FourierOperator:
//   forward  (F x)_m   ~ sum_n x_n exp(-i 2 pi k_m . x_n / n)      image -> k-space
//   adjoint  (F^H y)_n ~ sum_m y_m exp(+i 2 pi k_m . x_n / n)      k-space -> image
// unnormalised, voxel coordinates {-n/2 .. n/2-1}, k in cycles/FOV in [-n/2, n/2).
//
// Adjoint (type 1): grid (convolve every sample with the kernel onto an oversampled grid of
// G = sigma n points per axis, periodically), inverse FFT, deapodize (divide by the kernel's
// Fourier transform), crop. Forward (type 2): the exact transpose - pad with the same
// deapodization, FFT, interpolate with the same kernel - so <F x, y> = <x, F^H y> holds to
// rounding, whatever the tolerance.
//
// Gridding comes in the two forms of the reverse-gridding paper (Yang, Feng, Zhao 2013):
//   Scatter (GA):  each sample adds its kernel window into the grid (CPU: per-thread grids
//                  reduced in thread order, atomics where those do not fit in memory; GPU:
//                  thread per sample, float2 atomics);
//   Gather (RGA):  CPU: the grid is cut into tiles; once per trajectory every tile gets the
//                  list of samples whose window reaches it, and each tile sums exactly those
//                  in a fixed order. GPU: thread per grid point over the samples sorted by
//                  cell. No write conflicts: bitwise identical run to run (and on the CPU for
//                  any thread count).
// Interpolation (forward) is a gather by nature and shared by both. A plan (the trajectory
// sorted, lists, FFT plans, buffers) is made once per trajectory and executed many times.
// Measured accuracy per tolerance and timings: docs/performance.md, "Gridding NUFFT".
#include <array>
#include <memory>
#include <span>
#include <vector>

#include "mri/image.hpp"
#include "mri/linear_operator.hpp" // the value forms mri::forward / mri::adjoint
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace mri {

// The Kaiser-Bessel gridding kernel (Jackson et al. 1991) on an oversampled grid:
//   kernel(u) = I0(beta sqrt(1 - (2u/W)^2)) / I0(beta)   for |u| <= W/2, else 0,
// u in points of the oversampled grid, W the width in those points, sigma = G/n the
// oversampling. Each sample touches the W grid points with u in [-W/2, W/2) per axis.
//
// How W and beta are chosen (kaiser_bessel.cpp). Gridding one sample at fractional offset t
// and deapodizing at frequency xi (cycles per grid point, |xi| <= 1/(2 sigma) for the kept
// voxels) returns exp(i 2 pi t xi) (1 + E(t, xi)) per axis, with
//   E(t, xi) = sum_{W window points u} kernel(u) exp(i 2 pi u xi) / Phi(xi) - 1
//            = sum_{p != 0} Phi(xi + p) exp(i 2 pi p t) / Phi(xi)        (Poisson summation),
// the aliases of the kernel's transform Phi. aliasing_error() = max over t, xi of |E|; a
// tensor-product kernel multiplies the axes' (1 + E), and a polynomial fit off by delta adds
// at most W delta / Phi(1/(2 sigma)) per axis, so a d-dimensional NUFFT errs by at most
//   error_estimate = (1 + aliasing_error + W delta / Phi(1/(2 sigma)))^d - 1   (relative),
// reached by samples sharing one offset t and an image at one voxel (a corner for d axes).
// beta: the value minimising aliasing_error(), tabulated for sigma = 2 and W <= 10 (within
// 2.5 % of Beatty et al.'s for W >= 3, yet 30 % less error at W = 4); Beatty's formula
// elsewhere. W: for_tolerance takes the smallest W whose estimate, at sigma = 2 and the
// plan's fit accuracy, is within the tolerance (table: docs/performance.md). Measured errors
// on random inputs are 5-10x below the estimate, but tiny or aligned inputs come close.
struct KaiserBessel {
  int width = 4;
  double oversampling = 2.0;
  double beta = 0.0;

  static constexpr int kMinWidth = 2, kMaxWidth = 16;
  // Beatty, Nishimura and Pauly (IEEE TMI 2005, eq. 5): pi sqrt((W/sigma)^2 (sigma - 1/2)^2 - 0.8).
  static double beatty_beta(int width, double oversampling);
  // Throws InvalidArgument for width outside [2, 16] or oversampling outside [1.25, 4]. beta:
  // the tuned value at oversampling 2 and width <= 10, else Beatty's.
  static KaiserBessel make(int width, double oversampling);
  // The plan's choice for a target relative L2 error in `dims` dimensions (oversampling 2):
  // the smallest W whose aliasing leaves room in the per-axis budget, so that
  // error_estimate(dims, fit_accuracy(tolerance, dims)) <= tolerance. Throws InvalidArgument
  // outside [kNufftMinTolerance, kNufftMaxTolerance] or for dims outside [1, 3].
  static KaiserBessel for_tolerance(double tolerance, int dims = 3);
  // The max error of the kernel polynomial a plan fits (kernel peak 1): half of the per-axis
  // budget the aliasing leaves (a tenth of the aliasing when it leaves none).
  double fit_accuracy(double tolerance, int dims) const;

  // The kernel at offset u (oversampled-grid points); 1 at u = 0, 0 for |u| > W/2.
  double operator()(double u) const;
  // Its continuous Fourier transform, integral kernel(u) exp(i 2 pi u xi) du, at xi cycles
  // per oversampled-grid point (closed form: W sinh(sqrt(beta^2 - (pi W xi)^2)) / (I0(beta)
  // sqrt(...))). Deapodization divides by it.
  double fourier(double xi) const;
  // max |E(t, xi)| over t and |xi| <= 1/(2 sigma): sampled on a 257 x 65 grid, plus 3 % for
  // the peaks between samples (about 1 ms; for_tolerance uses a table of it).
  double aliasing_error() const;
  // The worst-case relative error of a `dims`-dimensional NUFFT with this kernel and a kernel
  // polynomial within fit_error of it (formula above).
  double error_estimate(int dims, double fit_error) const;
};

// The tolerance range a NUFFT plan accepts (relative L2 error against the exact operator).
inline constexpr double kNufftMinTolerance = 1e-6;
// Up to 1e-1: W = 3 (worst case 2.5e-2 in 3D) for previews and coarse iterations; W = 2 is
// never chosen (its worst case, 0.22 in 2D, is above every tolerance accepted).
inline constexpr double kNufftMaxTolerance = 1e-1;
// Float32 plans (float grid, float FFT) reach about this; tighter tolerances need Float64.
inline constexpr double kNufftFloat32MinTolerance = 1e-5;
// The tightest tolerance a plan of `precision` reaches.
inline constexpr double nufft_min_tolerance(Precision precision) {
  return precision == Precision::Float64 ? kNufftMinTolerance : kNufftFloat32MinTolerance;
}

// How the adjoint grids. Gather and ScatterFixed give the same bits on every run; CUDA's Scatter
// (float atomics) may differ in the last bits from run to run.
enum class Gridding {
  Auto,        // the fastest deterministic method measured, resolved in options(): CPU Gather;
               // CUDA ScatterFixed, but Gather in 3D at kernel width 3 (docs/performance.md)
  Scatter,     // CPU: per-thread grids; CUDA: shared-memory tiles (SM) or global atomics (GA)
  Gather,      // RGA: each grid point sums its samples in a fixed order
  ScatterFixed // CUDA: SM's tiles summed in fixed point (integer atomics); on the CPU, Gather
};
const char *to_string(Gridding);

struct NufftOptions {
  // Target relative L2 error of F and F^H against the exact sums, in [1e-6, 1e-1].
  double tolerance = 1e-3;
  // Float32: kernel, grid and FFT in float (tolerance >= 1e-5). Float64: all in double
  // (inputs and outputs stay complex<float>), for tolerances down to 1e-6.
  Precision precision = Precision::Float32;
  Gridding gridding = Gridding::Auto; // how the adjoint grids (the forward always gathers)
  // Cuda: float32 only (kernel width <= 8); Auto: Cuda when a device is usable and the
  // options fit it, else Cpu.
  Backend backend = Backend::Cpu;
  int threads = 0;                    // OpenMP threads, 0 = omp_get_max_threads()
  // Expert override of the tolerance's choice: kernel width in [2, 16] (0 = from the
  // tolerance) and oversampling in [1.25, 4] (0 = 2). The achieved error is then the caller's.
  int width = 0;
  double oversampling = 0;
};

namespace detail {
class NufftPlan;   // the CPU plan (lib/nufft/nufft_plan.hpp)
class DeviceNufft; // the CUDA plan, behind the plugin interface
struct NufftAccess; // the backends' access to the plans (lib/interface/mri_backend/nufft_access.hpp)
} // namespace detail

// Set the trajectory once, execute many times: the plan sorts the samples by grid tile,
// builds the gather lists, plans the FFTs and owns every buffer. Copies share one plan.
// Thread safety: forward/adjoint write the plan's buffers (grid, FFT). On the CPU the plan
// serializes them with a mutex, so one operator or its copies may be called from several
// threads, one call at a time; for parallel work make one NufftOperator per thread (different
// operators, even for the same trajectory, run at once; both tested in tests/concurrency). On
// CUDA, copies share the device plan: no concurrent calls on one operator or its copies. The const accessors may be called from any thread. nufft_q makes
// its own plan per call and may be called from any number of threads at once.
class NufftOperator {
public:
  // Throws InvalidArgument when the trajectory is empty, its dims differ from the grid's, a
  // sample lies beyond 3n/2 (samples outside [-n/2, n/2) are used as their periodic images,
  // Trajectory::check_range; trajectory() returns them wrapped), the tolerance is outside [1e-6, 1e-1] (or below 1e-5
  // with Float32), threads < 0; Unsupported for backend = Cuda without a usable device or
  // with precision = Float64. options() tells which backend runs.
  NufftOperator(Trajectory trajectory, Grid grid, NufftOptions options = {});

  const Trajectory &trajectory() const { return trajectory_; }
  const Grid &grid() const { return grid_; }
  const NufftOptions &options() const { return options_; } // gridding/backend resolved
  const KaiserBessel &kernel() const { return kernel_; }
  const Grid &oversampled_grid() const { return oversampled_; }

  // The operator core's form (mri/linear_operator.hpp): F x and F^H y into the caller's vectors;
  // the samples any M contiguous values (one coil's of a coil-major array, a std::vector). Throws
  // InvalidArgument if the image's grid differs from grid() or the samples are not M; values are
  // not checked. mri::forward(F, x) and mri::adjoint(F, y) return a new vector and refuse NaN/Inf.
  using Domain = Image;
  using Range = std::vector<cfloat>;
  Image domain_vector() const { return Image(grid_); }
  std::vector<cfloat> range_vector() const { return std::vector<cfloat>(trajectory_.size()); }
  void forward(const Image &image, std::span<cfloat> samples) const;
  void adjoint(std::span<const cfloat> samples, Image &image) const;

  // F^H of `coils` coils at once (BART layout): coil c's M samples at samples + c M, its image
  // (grid().voxels() values) at images + c voxels. Each image equals adjoint() of its coil
  // bitwise. On the CPU the gridding spreads a block of coils per pass over the sorted samples
  // (each sample's kernel weights and cells evaluated once for the block; up to 8 coils, fewer
  // where their oversampled grids pass 512 MiB), then FFTs and deapodizes each coil; on CUDA the
  // gather (Gridding::Gather) reads each sample's cells and weights once for 4 coils, Scatter and
  // ScatterFixed run per coil (so Auto's ScatterFixed too; for many coils Gather can be faster:
  // docs/performance.md, bench_nufft_gpu NUFFT_adjoint_coils). Values unchecked, as adjoint's;
  // throws InvalidArgument for coils <= 0 or a null pointer. Thread safety: as adjoint.
  void adjoint_coils(const cfloat *samples, int coils, cfloat *images) const;

  // F x and F^H y on the caller's device memory (options().backend == Cuda): `image` holds
  // grid().voxels() values and `samples` trajectory().size(), both device (or managed) memory of the
  // device the operator was planned on - a cudaMalloc'd array, a CuPy or PyTorch CUDA array (the
  // Python package's zero-copy path). No host copy. The call waits for all work queued on that
  // device before it reads (the array's producer may have used any stream) and returns when the
  // result is written; the same sums as forward/adjoint. Throws Unsupported on the CPU backend,
  // InvalidArgument naming the argument for a null pointer, host memory or another device's memory.
  // Thread safety: as forward/adjoint.
  void forward_device(const cfloat *image, cfloat *samples) const;
  void adjoint_device(const cfloat *samples, cfloat *image) const;

private:
  friend struct detail::NufftAccess;
  Trajectory trajectory_;
  Grid grid_;
  NufftOptions options_;
  KaiserBessel kernel_;
  Grid oversampled_;
  std::shared_ptr<detail::NufftPlan> plan_;
  std::shared_ptr<detail::DeviceNufft> device_plan_;
};

// Q(d) = sum_m w_m exp(+i 2 pi k_m . d / n) on grid.doubled(), d in {-n .. n-1} per axis
// (QOperator::q()'s layout), by one adjoint NUFFT on the doubled grid with the trajectory
// scaled by 2. weights: empty (all ones) or one finite, non-negative weight per sample.
Image nufft_q(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
              const NufftOptions &options = {});

} // namespace mri
