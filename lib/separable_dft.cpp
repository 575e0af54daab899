// TEMPORARY: forwards to the float64 reference until the separable GEMM path lands.
#include "mri/fourier.hpp"

namespace mri::detail {
void adjoint_sum_f32(const Trajectory &t, std::span<const cfloat> c, const Grid &out,
                     const Grid &period, cfloat *result) {
  adjoint_sum_f64(t, c, out, period, result);
}
void forward_sum_f32(const Trajectory &t, const Image &x, cfloat *result) {
  forward_sum_f64(t, x, result);
}
} // namespace mri::detail
