// Method::Auto's rule (mri/reconstruct.hpp: choose_method).
//
// On the CPU the NUFFT: O(M W^d + G log G) against the exact sums' O(N M), which only tiny grids
// bring close, and there both take milliseconds.
//
// On the GPU both are fast and the exact sums run near their hardware bound, so the choice is made
// per problem from a cost model of F^H D and Q (the Toeplitz CG's iterations cost the same with
// either method and are left out; with normal = Direct each iteration applies the method's pair):
//   exact: coils N M pairs for F^H D, 2^d N M for Q (the doubled grid), at the measured pair rates;
//   NUFFT: per adjoint M W^d spread (kernel weights) and the FFT of its oversampled grid (2^d N
//          points for F^H D, 4^d N for Q), plus a fixed cost of plans and launches.
// W is the kernel width the plan picks for the tolerance (KaiserBessel::for_tolerance).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "mri/error.hpp"
#include "mri/nufft.hpp"
#include "mri/reconstruct.hpp"
#include "mri_backend/tuning.hpp"

namespace mri {
namespace {

double fft_work(double points) { return points * std::log2(std::max(points, 2.0)); }

struct GpuEstimate {
  double exact_seconds = 0, nufft_seconds = 0;
};

GpuEstimate gpu_estimate(const ReconSize &s, double nufft_tolerance) {
  constexpr detail::tuning::MethodCostRates M = detail::tuning::Gpu::method_cost; // the tuning table's rates
  const double n = s.voxels, m = s.samples, coils = s.coils, doubled = std::pow(2.0, s.dims);
  const double direct = 2.0 * s.direct_iterations; // F and F^H each direct iteration
  GpuEstimate e;
  const double fhd_pairs = coils * n * m;
  const double q_rate = s.dims == 3 ? M.exact_q_3d_pairs_per_second : M.exact_pairs_per_second;
  e.exact_seconds = (1.0 + direct) * fhd_pairs / M.exact_pairs_per_second + doubled * n * m / q_rate;
  const int width = KaiserBessel::for_tolerance(nufft_tolerance, s.dims).width;
  const double spread = m * std::pow(width, s.dims) / M.nufft_spread_per_second;
  const double one_coil = spread + fft_work(doubled * n) / M.nufft_fft_per_second;
  const double q = spread + fft_work(doubled * doubled * n) / M.nufft_fft_per_second;
  e.nufft_seconds = (1.0 + direct) * coils * one_coil + q + M.nufft_fixed_seconds;
  return e;
}

std::string format(const char *fmt, double a, double b = 0) {
  char text[200];
  std::snprintf(text, sizeof text, fmt, a, b);
  return text;
}

} // namespace

MethodChoice choose_method(const ReconSize &size, Backend backend, Precision precision, double nufft_tolerance) {
  if (!(nufft_tolerance > 0 && nufft_tolerance <= kNufftMaxTolerance))
    detail::invalid_argument("nufft_tolerance", nufft_tolerance, "must be in (0, " + std::to_string(kNufftMaxTolerance) + "]");
  const bool on_gpu = backend == Backend::Cuda;
  if (on_gpu && precision == Precision::Float64)
    return {Method::Exact, "auto: exact (precision = float64; the CUDA NUFFT is float32)"};
  const double floor = nufft_min_tolerance(precision);
  if (nufft_tolerance < floor)
    return {Method::Exact, format("auto: exact (the NUFFT reaches %.0e at this precision, not nufft.tolerance %.0e)",
                                  floor, nufft_tolerance)};
  if (!on_gpu)
    return {Method::Nufft, format("auto: nufft (cpu: the NUFFT at tolerance %.0e, O(M W^d + G log G), not the "
                                  "exact sums' O(N M))",
                                  nufft_tolerance)};
  const GpuEstimate e = gpu_estimate(size, nufft_tolerance);
  const Method faster = e.nufft_seconds < e.exact_seconds ? Method::Nufft : Method::Exact;
  return {faster, std::string("auto: ") + to_string(faster) +
                      format(" (gpu cost model for F^H D and Q: nufft %.3g ms, exact %.3g ms)", 1e3 * e.nufft_seconds,
                             1e3 * e.exact_seconds)};
}

} // namespace mri
