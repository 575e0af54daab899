#pragma once
// SENSE as a composition of the single-coil operators, written once for both backends:
//   normal:  out = sum_c conj(S_c) .* N(S_c .* x) + lambda R^H R x   (N = F^H W F, one coil)
//   rhs:     b   = sum_c conj(S_c) .* F^H (w .* D_c)
// `Coils` is the backend's map storage (host maps in lib/sense/recon_coils.cpp, device maps in
// cuda/sense/sense_cuda.cu) and provides, on its vectors Vec:
//   int count() const;
//   void expand(int c, const Vec &x, Vec &out) const;               out = S_c .* x
//   void combine(int c, const Vec &y, Vec &out, bool first) const;  out (first: =, else +=) conj(S_c) .* y
//                                                                   (y: what sense_rhs's slot gives)
//   void regularize(const Vec &x, Vec &out) const;                  out += lambda R^H R x
// Single-coil data without maps skips this layer (N with its fused regulariser is the operator).
#include <algorithm>
#include <utility>

#include "mri/vector_ops.hpp"

namespace mri::detail {

// The SENSE normal operator for ConjugateGradient. `inner` applies N without a regulariser.
template <class Vec, class Coils, class Inner> class SenseNormal {
public:
  SenseNormal(const Coils &coils, Inner inner, const Vec &like)
      : coils_(&coils), inner_(std::move(inner)), coil_in_(VectorOps<Vec>::like(like)),
        coil_out_(VectorOps<Vec>::like(like)) {}

  void operator()(const Vec &x, Vec &out) const {
    for (int c = 0; c < coils_->count(); ++c) {
      coils_->expand(c, x, coil_in_);
      inner_(coil_in_, coil_out_);
      coils_->combine(c, coil_out_, out, c == 0);
    }
    coils_->regularize(x, out);
  }

private:
  const Coils *coils_;
  Inner inner_;
  mutable Vec coil_in_, coil_out_;
};

// b = sum_c conj(S_c) .* F^H (w .* D_c), `block` coils at a time: fhd(c0, count) computes coils
// c0 .. c0 + count - 1 (count <= block; a backend that grids several coils per pass takes
// block > 1), and slot(i) is coil c0 + i's result, as coils.combine takes it.
template <class Vec, class Coils, class BlockFhd, class Slot>
void sense_rhs(const Coils &coils, int block, BlockFhd &&fhd, Slot &&slot, Vec &rhs) {
  for (int c0 = 0; c0 < coils.count(); c0 += block) {
    const int count = std::min(block, coils.count() - c0);
    fhd(c0, count);
    for (int i = 0; i < count; ++i) coils.combine(c0 + i, slot(i), rhs, c0 + i == 0);
  }
}

} // namespace mri::detail
