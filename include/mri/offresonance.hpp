#pragma once
// Off-resonance (B0) correction: the signal model with a field map (docs/conventions.md),
//   y_c(t_m) = sum_x S_c(x) rho(x) exp(-2 pi i (k_m . x / n + f(x) t_m)),
// k_m in cycles per FOV, x in voxels from the grid centre, f the field map in Hz on the image
// grid, t_m the time of sample m in seconds from the echo: the field term has the k term's sign
// (Sutton, Noll and Fessler, IEEE TMI 2003; MIRT). Two forms of the model's F (docs/offresonance.md):
//   FieldFourierOperator    the exact sums with the extra phase per (sample, voxel), O(N M)
//   SegmentedFieldOperator  time segmentation: exp(-2 pi i f t) ~ sum_l b_l(t) exp(-2 pi i f tau_l),
//                           L NUFFTs per application, within the bound TimeSegmentation::error states
// and SegmentedToeplitz, the segmented model's normal operator A^H W A by Toeplitz kernels.
// mri::reconstruct uses them when ReconOptions::offresonance.field_map is set (method = Exact:
// the exact sums; Nufft or Auto: time segmentation).
//
// Thread safety: FieldMap and TimeSegmentation are immutable values. The operators' forward and
// adjoint only read them (scratch per call): a FieldFourierOperator on the CPU may be called from any
// number of threads at once (on the CUDA backend copies share the device plan: one call at a time,
// as FourierOperator); a SegmentedFieldOperator as its NufftOperator (one call at a time per plan,
// serialised); SegmentedToeplitz owns FFT buffers: one call at a time.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mri/image.hpp"
#include "mri/linear_operator.hpp"
#include "mri/nufft.hpp"
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace mri {

namespace detail {
class DeviceFieldFourier; // the CUDA backend's plan, behind the plugin interface
}

// The off-resonance frequency f(x) in Hz on a grid (voxel index order as Image).
class FieldMap {
public:
  FieldMap() = default;
  // Throws InvalidArgument when hz.size() != grid.voxels() or a value is NaN/Inf.
  FieldMap(Grid grid, std::vector<float> hz);
  const Grid &grid() const { return grid_; }
  const std::vector<float> &hz() const { return hz_; }
  float min_hz() const { return min_; }
  float max_hz() const { return max_; }
  bool is_zero() const { return min_ == 0 && max_ == 0; }
  // The map on another grid of the same field of view: voxel i of an axis of n voxels sits at
  // (i - n/2) / n of the FOV on both grids; linear interpolation per axis, clamped at the edges.
  FieldMap resampled(const Grid &to) const;

private:
  Grid grid_;
  std::vector<float> hz_;
  float min_ = 0, max_ = 0;
};

// A field map from two echoes of one acquisition at echo times TE1 and TE2 = TE1 + delta_te (a
// dual-echo prescan): by the model's sign (docs/conventions.md) echo2 / echo1 = exp(-2 pi i f delta_te),
// so f = -arg(conj(echo1) echo2) / (2 pi delta_te), unambiguous for |f| < 1 / (2 delta_te).
// Unwrap-free: the complex product conj(echo1) echo2 (magnitude-weighted by construction) is
// smoothed by a box of (2 smooth + 1) voxels per axis before its angle is taken, so noise in
// weak voxels does not wrap the estimate; voxels below `mask` of the largest |echo1| (air) take the
// field of the nearest signal by widening that box until it reaches signal (a smooth extension, as
// the reconstruction needs the map everywhere).
struct FieldMapEstimation {
  double mask = 0.1; // fraction of the largest |echo1|, in [0, 1)
  int smooth = 1;    // half-width of the box, voxels, in [0, 16]
};
// Throws InvalidArgument for echoes on different grids, NaN/Inf values, delta_te not finite and
// > 0, options outside their ranges, or no voxel above the mask.
FieldMap estimate_field_map(const Image &echo1, const Image &echo2, double delta_te,
                            const FieldMapEstimation &options = {});

// How b_l(t) is chosen (Fessler, Lee, Olafsson, Shi, Noll, IEEE TSP 2005, "Toeplitz-based
// iterative image reconstruction for MRI with correction for magnetic field inhomogeneity").
enum class SegmentInterpolator {
  LeastSquares, // b(t) minimises sum_j h_j |exp(-2 pi i f_j t) - sum_l b_l exp(-2 pi i f_j tau_l)|^2
                // over the field map's histogram (bins f_j, counts h_j)
  Hanning       // b_l(t) = (1 + cos(pi (t - tau_l) / dtau)) / 2 within dtau of tau_l (Noll et al. 1991)
};
const char *to_string(SegmentInterpolator);

struct SegmentationOptions {
  SegmentInterpolator interpolator = SegmentInterpolator::LeastSquares;
  int segments = 0;        // L; 0: the smallest L whose error meets `tolerance` (as MIRT's auto mode)
  double tolerance = 1e-3; // the bound the automatic L meets (TimeSegmentation::error), in (0, 1)
  int max_segments = 32;   // an automatic L beyond it is refused, naming the L needed
  int histogram_bins = 64; // the least-squares fit's field histogram, in [8, 4096]
};

// exp(-2 pi i f(x) t_m) ~ sum_l B[l][m] E[l][x]: the factor exp(-2 pi i f0 t_m) of the map's
// mid-range f0 goes exactly into B, the interpolator approximates the rest, over (f - f0).
struct TimeSegmentation {
  int segments = 1;
  SegmentInterpolator interpolator = SegmentInterpolator::LeastSquares;
  double reference_hz = 0;         // f0: (min + max) / 2 of the map
  std::vector<double> centres;     // tau_l in seconds, uniform over [min t, max t]
  std::vector<cfloat> sample_coefficients; // B: L x M, sample fastest: b_l(t_m) exp(-2 pi i f0 t_m)
  std::vector<cfloat> voxel_phases;        // E: L x N, voxel fastest: exp(-2 pi i (f(x) - f0) tau_l)
  // The stated bound: the largest, over the sample times, histogram-weighted RMS of the factor's
  // error, max_t sqrt(sum_j h_j |exp(-2 pi i f_j t) - approx_j(t)|^2 / sum_j h_j) on a fine
  // histogram of the map (1024 bins, each at its values' mean). For an image of uniform magnitude and independent phases it
  // is the expected relative error of every sample of the segmented forward (NUFFT error aside).
  double error = 0;
  double max_error = 0; // the worst (field bin, time) pair of that histogram
};

// The segmentation of `field` for `times` (M values, seconds >= 0). Throws InvalidArgument for
// an empty or invalid times vector, options outside their ranges, or an automatic L beyond
// options.max_segments (the message names the L the tolerance needs).
TimeSegmentation segment_field(const FieldMap &field, std::span<const float> times, const SegmentationOptions &options);

// The exact field-corrected F (forward) and F^H (adjoint), unnormalised like FourierOperator:
//   (A x)_m   = sum_x x(x) exp(-2 pi i (k_m . x / n + f(x) t_m))
//   (A^H y)_x = sum_m y_m exp(+2 pi i (k_m . x / n + f(x) t_m))
// Float64: sums in double; Float32: the phase and a vectorised sine/cosine in float, chunks of 256 terms summed in float then in double. A map that is
// zero everywhere (or times all zero) makes the field term vanish: today's FourierOperator runs,
// bitwise. backend = Cuda (or Auto with a usable device): the field kernels of cuda/offresonance/,
// the adjoint's kernel chosen by options.policy (docs/offresonance.md), a vanishing field the
// uncorrected device sums.
class FieldFourierOperator {
public:
  // Throws InvalidArgument when the field map's grid differs from `grid`, times are not M finite
  // values >= 0, or the trajectory is invalid for the grid (as FourierOperator).
  FieldFourierOperator(Trajectory trajectory, Grid grid, std::shared_ptr<const FieldMap> field,
                       std::vector<float> times, OperatorOptions options = {});
  const Trajectory &trajectory() const { return trajectory_; }
  const Grid &grid() const { return grid_; }

  using Domain = Image;
  using Range = std::vector<cfloat>;
  Image domain_vector() const { return Image(grid_); }
  std::vector<cfloat> range_vector() const { return std::vector<cfloat>(trajectory_.size()); }
  void forward(const Image &image, std::span<cfloat> samples) const;
  void adjoint(std::span<const cfloat> samples, Image &image) const;

private:
  Trajectory trajectory_;
  Grid grid_;
  std::shared_ptr<const FieldMap> field_;
  std::shared_ptr<const std::vector<float>> times_;
  OperatorOptions options_;
  bool vanishes_ = false;
  std::shared_ptr<detail::DeviceFieldFourier> device_plan_; // null on the CPU backend
};

// The time-segmented field-corrected F: A x = sum_l B_l .* F(E_l .* x), A^H y = sum_l conj(E_l) .*
// F^H(conj(B_l) .* y), F the gridding NUFFT (one plan; the L adjoints batched as its coils).
class SegmentedFieldOperator {
public:
  // Throws as segment_field and NufftOperator; InvalidArgument when the map's grid differs from
  // `grid` or times are not M values.
  SegmentedFieldOperator(Trajectory trajectory, Grid grid, const FieldMap &field, std::span<const float> times,
                         const SegmentationOptions &segmentation = {}, NufftOptions nufft = {});
  const TimeSegmentation &segmentation() const { return *segmentation_; }
  const NufftOperator &nufft() const { return nufft_; }
  const Grid &grid() const { return nufft_.grid(); }

  using Domain = Image;
  using Range = std::vector<cfloat>;
  Image domain_vector() const { return Image(grid()); }
  std::vector<cfloat> range_vector() const { return std::vector<cfloat>(nufft_.trajectory().size()); }
  void forward(const Image &image, std::span<cfloat> samples) const;
  void adjoint(std::span<const cfloat> samples, Image &image) const;

private:
  NufftOperator nufft_;
  std::shared_ptr<const TimeSegmentation> segmentation_;
};

// A^H W A of a SegmentedFieldOperator by Toeplitz embedding: kernels K_ll'(d) = sum_m w_m
// conj(b_l(t_m)) b_l'(t_m) exp(+2 pi i k_m . d / n) on the doubled grid, L(L+1)/2 of them (K_l'l is
// K_ll''s conjugate transpose), computed by one batched adjoint NUFFT; an application is L forward
// and L inverse FFTs on the doubled grid and L^2 spectral products. Self-adjoint.
class SegmentedToeplitz {
public:
  // weights: empty (all ones) or one finite weight >= 0 per sample.
  SegmentedToeplitz(const SegmentedFieldOperator &op, std::span<const float> weights);
  // The bytes its kernels and buffers take for `segments` on `grid` (L(L+1)/2 spectra and L
  // buffers on the doubled grid, and a chunk of 8 kernels while they are made): reconstruct runs
  // the direct normal instead where this passes its budget.
  static std::size_t kernel_bytes(const Grid &grid, int segments);
  ~SegmentedToeplitz();
  SegmentedToeplitz(SegmentedToeplitz &&) noexcept;
  SegmentedToeplitz &operator=(SegmentedToeplitz &&) noexcept;

  using Domain = Image;
  using Range = Image;
  Image domain_vector() const { return Image(grid_); }
  Image range_vector() const { return Image(grid_); }
  void forward(const Image &in, Image &out) const;
  void adjoint(const Image &in, Image &out) const { forward(in, out); }

private:
  struct Plan;
  Grid grid_;
  std::unique_ptr<Plan> plan_;
};

} // namespace mri
