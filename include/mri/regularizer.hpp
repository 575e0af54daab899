#pragma once
// Regularisation lambda * W^H W of the normal equations (F^H W_d F + lambda W^H W) x = F^H W_d D.
//
// Thread safety: pure functions of their arguments: safe from any number of threads at once (on
// distinct output images).
#include <string>
#include <vector>

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

// W as an operator (mri/linear_operator.hpp) from images on `grid` to: the forward differences
// along each axis of extent > 1, one image-sized block per axis in axis order (FiniteDifference:
// d[v] = x[v + stride] - x[v], 0 at the last index, no wrap); the image itself (Tikhonov);
// nothing (None). normal() is W^H W by the stencil add_regularizer_normal uses.
class RegularizerOperator {
public:
  using Domain = Image;
  using Range = std::vector<cfloat>;
  RegularizerOperator(Regularizer r, Grid grid);
  Regularizer regularizer() const { return r_; }
  Domain domain_vector() const { return Image(grid_); }
  Range range_vector() const;
  // Throw InvalidArgument when a vector is not of the operator's spaces.
  void forward(const Image &x, Range &y) const;
  void adjoint(const Range &y, Image &x) const;
  void normal(const Image &x, Image &out) const; // out = W^H W x

private:
  int difference_axes() const; // axes of extent > 1
  Regularizer r_;
  Grid grid_;
};

} // namespace mri
