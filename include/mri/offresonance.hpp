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
#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mri/coils.hpp"
#include "mri/image.hpp"
#include "mri/kspace.hpp"
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

// Simulation (examples/spiral_b0, the off-resonance benchmarks and tests): a field-corrupted
// acquisition of a known image.
//
// A smooth field map spanning `range_hz`: a bump (an air-tissue boundary's susceptibility) on a
// ramp along x, from -0.4 range to +0.6 range Hz (issue 43's -80 .. +120 Hz at range 200); in 3D the
// bump is centred on the middle slice. Throws InvalidArgument for a range not finite and >= 0.
FieldMap simulated_field_map(const Grid &grid, double range_hz = 200);

// The sample times of `readouts` readouts of `samples` samples each, readout after readout (as
// traj::spiral orders its interleaves): sample s at duration_s * s / samples seconds from the echo.
// Throws InvalidArgument for readouts or samples < 1 or a duration not finite and > 0.
std::vector<float> readout_times(int readouts, int samples, double duration_s);

// The data of `image` through the field model: coil c's samples are A (S_c .* image) (maps null: one
// coil, the image itself), A the time-segmented model at an error bound below 1e-7 (least squares,
// up to 64 segments) on a float64 NUFFT at 1e-6 (far tighter than the reconstructions' operators,
// so that none of them sees its own model), then complex white noise at linear SNR `snr`
// (mri::add_noise with `seed`; none when snr == 0). The result carries `times`. Throws
// InvalidArgument when image, field and maps are not on one grid, times are not one per sample, or
// snr is negative or not finite; otherwise as SegmentedFieldOperator.
KSpaceData simulate_field_acquisition(const Image &image, const Trajectory &trajectory, const FieldMap &field,
                                      std::span<const float> times, const CoilSensitivities *maps, double snr,
                                      std::uint64_t seed = 2026);

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
  // b(t) as the fit made it, from which B can be made elsewhere (a device): with `projector`
  // non-empty b(t) = P e(t), e_j(t) = exp(-2 pi i fit_hz[j] t), P = projector (L x J, the bin
  // fastest; a uniform field or one Hanning segment: P = 1, fit_hz = 0, so b = 1); empty: the
  // Hanning windows of width centres[1] - centres[0] around the centres.
  std::vector<double> fit_hz;
  std::vector<std::complex<double>> projector;
};

// The segmentation of `field` for `times` (M values, seconds >= 0): fit_segmentation, then
// make_segment_tables. Throws InvalidArgument for an empty or invalid times vector, options
// outside their ranges, or an automatic L beyond options.max_segments (the message names the L
// the tolerance needs).
TimeSegmentation segment_field(const FieldMap &field, std::span<const float> times, const SegmentationOptions &options);

// The segmentation without its tables (sample_coefficients and voxel_phases left empty): L, the
// centres, the interpolator's fit and the bound. Its cost depends on the histogram and on at most
// 1024 distinct times, not on M x L or N x L (the tables' cost). The last 8 results are kept in
// memory, keyed by a 128-bit hash of the map's grid and values, the times and the options: a
// repeated call with the same inputs (a series of reconstructions of one trajectory and map) costs
// the hash, O(N + M). Thread-safe. Throws as segment_field.
TimeSegmentation fit_segmentation(const FieldMap &field, std::span<const float> times, const SegmentationOptions &options);

// Fills s.sample_coefficients (L x M) and s.voxel_phases (L x N) from s's fit for the `field` and
// `times` it was fitted to. Throws InvalidArgument when s has no fit (fit_hz and projector of a
// least-squares segmentation empty) or the sizes differ from the field's grid.
void make_segment_tables(TimeSegmentation &s, const FieldMap &field, std::span<const float> times);

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
