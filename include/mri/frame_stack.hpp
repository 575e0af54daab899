#pragma once
// A stack of frames as one solver vector: the unknown of a joint reconstruction of several frames
// (motion states, time frames; reconstruct_frames in mri/dynamic.hpp), each frame a vector of the
// backend (a host Image, or the CUDA backend's device image). VectorOps<FrameStack<Vec>> applies
// VectorOps<Vec> frame by frame and sums the reductions, so ConjugateGradient and the proximal
// solvers (mri/proximal_solvers.hpp) run on a stack unchanged; the normal operator of a stack is
// block diagonal (FrameNormal): frame f's own operator on frame f.
//
// Thread safety: as VectorOps<Vec>: distinct outputs from any number of threads.
#include <complex>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "mri/error.hpp"
#include "mri/vector_ops.hpp"

namespace mri {

template <class Vec> struct FrameStack {
  std::vector<Vec> frames;
  std::size_t size() const { return frames.size(); }
  Vec &operator[](std::size_t f) { return frames[f]; }
  const Vec &operator[](std::size_t f) const { return frames[f]; }
};

template <class Vec> struct VectorOps<FrameStack<Vec>> {
  using Stack = FrameStack<Vec>;
  using Ops = VectorOps<Vec>;
  static Stack like(const Stack &v) {
    Stack out;
    out.frames.reserve(v.size());
    for (const Vec &f : v.frames) out.frames.push_back(Ops::like(f));
    return out;
  }
  static void copy(const Stack &from, Stack &to) {
    for (std::size_t f = 0; f < from.size(); ++f) Ops::copy(from[f], to[f]);
  }
  static std::complex<double> dot(const Stack &a, const Stack &b) {
    std::complex<double> s = 0;
    for (std::size_t f = 0; f < a.size(); ++f) s += Ops::dot(a[f], b[f]);
    return s;
  }
  static double norm2(const Stack &a) {
    double s = 0;
    for (const Vec &f : a.frames) s += Ops::norm2(f);
    return s;
  }
  static void axpy(std::complex<double> alpha, const Stack &x, Stack &y) {
    for (std::size_t f = 0; f < x.size(); ++f) Ops::axpy(alpha, x[f], y[f]);
  }
  static void xpay(const Stack &x, std::complex<double> beta, Stack &y) {
    for (std::size_t f = 0; f < x.size(); ++f) Ops::xpay(x[f], beta, y[f]);
  }
  static void zero(Stack &v) {
    for (Vec &f : v.frames) Ops::zero(f);
  }
  static bool all_finite(const Stack &v) {
    for (const Vec &f : v.frames)
      if (!Ops::all_finite(f)) return false;
    return true;
  }
};

// The block-diagonal normal operator of a stack: out_f = N_f x_f, N_f frame f's normal operator
// (its data term, SENSE and l2 term), as the callable ConjugateGradient and the proximal solvers
// take. The operators are held by reference (the caller keeps them alive).
template <class Vec> class FrameNormal {
public:
  using Apply = std::function<void(const Vec &, Vec &)>;
  explicit FrameNormal(std::vector<Apply> frames) : frames_(std::move(frames)) {}
  void operator()(const FrameStack<Vec> &x, FrameStack<Vec> &out) const {
    if (x.size() != frames_.size())
      detail::invalid_argument("x.size()", x.size(), "the stack's frames must match the operator's");
    for (std::size_t f = 0; f < frames_.size(); ++f) frames_[f](x[f], out[f]);
  }

private:
  std::vector<Apply> frames_;
};

} // namespace mri
