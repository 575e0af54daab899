#pragma once
// The small vector-operations table ConjugateGradient needs (BART's idea: one solver for CPU
// and GPU vectors). Specialise VectorOps<Vec> for a new vector type; the CUDA plugin does so
// for its internal device vectors (not installed), whose reductions return only the scalar to
// the host. Optional member, used by ConjugateGradient when present:
//   static double update_norm2(std::complex<double> alpha, const Vec &p, const Vec &ap, Vec &x, Vec &r);
// x += alpha p, r -= alpha ap and ||r||^2 in one pass over the four vectors.
//
// Thread safety: the operations read their inputs and write only their output argument: safe from
// any number of threads at once on distinct outputs. Each runs an OpenMP team of the calling
// thread.
#include <complex>

#include "mri/image.hpp"

namespace mri {

template <class Vec> struct VectorOps; // primary template intentionally undefined

// Host images: reductions accumulate in double so CG's scalars do not lose digits at 128^3.
template <> struct VectorOps<Image> {
  static Image like(const Image &v) { return Image(v.grid()); }
  static void copy(const Image &from, Image &to);
  static std::complex<double> dot(const Image &a, const Image &b); // sum conj(a) b
  static double norm2(const Image &a);                              // sum |a|^2
  static void axpy(std::complex<double> alpha, const Image &x, Image &y); // y += alpha x
  static void xpay(const Image &x, std::complex<double> beta, Image &y);  // y = x + beta y
  static void zero(Image &v);
  static bool all_finite(const Image &v);
};

} // namespace mri
