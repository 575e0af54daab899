#pragma once
// The raw exact sums behind FourierOperator, FhDOperator and QOperator on the CPU
// (lib/exact/direct_dft.cpp: float64; lib/exact/separable_dft.cpp: float32), for the backends,
// tests and stage benchmarks (not part of the public API).
#include <span>

#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/trajectory.hpp"

namespace mri::detail {

// The sum s(x) = sum_m c_m exp(+i 2 pi sum_a k_ma x_a / period_a) on an output grid `out`
// (coordinates {-L/2 .. L/2-1} per axis). F^H uses out == period == the image grid; Q uses
// out = 2n, period = n. Implementations: float64 direct sum, float32 separable GEMM.
void adjoint_sum_f64(const Trajectory &t, std::span<const cfloat> c, const Grid &out,
                     const Grid &period, cfloat *result);
// The same in complex double end to end (FourierOperator's cdouble forms).
void adjoint_sum_f64(const Trajectory &t, std::span<const cdouble> c, const Grid &out,
                     const Grid &period, cdouble *result);
void adjoint_sum_f32(const Trajectory &t, std::span<const cfloat> c, const Grid &out,
                     const Grid &period, cfloat *result);
// (F x)_m on the image grid, float64 direct sum and float32 separable path.
void forward_sum_f64(const Trajectory &t, const Image &x, cfloat *result);
void forward_sum_f64(const Trajectory &t, const Grid &grid, const cdouble *x, cdouble *result);
void forward_sum_f32(const Trajectory &t, const Image &x, cfloat *result);

} // namespace mri::detail
