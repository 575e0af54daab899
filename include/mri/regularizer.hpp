#pragma once
// Regularisation lambda * W^H W of the normal equations (F^H W_d F + lambda W^H W) x = F^H W_d D.
//
// Thread safety: pure functions of their arguments: safe from any number of threads at once (on
// distinct output images).
#include <string>

#include "mri/image.hpp"

namespace mri {

enum class Regularizer {
  None,
  Tikhonov,        // W = identity
  FiniteDifference // W = forward differences along each axis of extent > 1 (zero past the edge)
};
const char *to_string(Regularizer);

// out += lambda * W^H W in, on `grid`. Throws InvalidArgument if lambda < 0 or not finite.
void add_regularizer_normal(Regularizer r, double lambda, const Grid &grid, const cfloat *in,
                            cfloat *out);

} // namespace mri
