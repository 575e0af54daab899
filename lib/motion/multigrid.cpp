// The multigrid solver of a warp's linear system (multigrid.hpp: the scheme and its sources).
#include "multigrid.hpp"

#include <algorithm>
#include <cmath>

namespace mri::detail::motion {
namespace {

template <class T> Field<T> make_field(const Grid &g) {
  return {Volume<T>(g), Volume<T>(g), Volume<T>(g)};
}

// coarse(i) = scale * the mean of fine's children of coarse voxel i (2i and 2i + 1 per axis, the
// second only where it exists).
template <class T> void restrict_mean(const Volume<T> &fine, Volume<T> &coarse, T scale) {
  const Grid &f = fine.grid, &c = coarse.grid;
#pragma omp parallel for collapse(2) schedule(static) if (f.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < c.nz(); ++z)
    for (std::int64_t y = 0; y < c.ny(); ++y)
      for (std::int64_t x = 0; x < c.nx(); ++x) {
        T sum = 0;
        int children = 0;
        for (std::int64_t cz = 2 * z; cz < std::min(2 * z + 2, f.nz()); ++cz)
          for (std::int64_t cy = 2 * y; cy < std::min(2 * y + 2, f.ny()); ++cy)
            for (std::int64_t cx = 2 * x; cx < std::min(2 * x + 2, f.nx()); ++cx, ++children)
              sum += fine.v[f.index(cx, cy, cz)];
        coarse.v[c.index(x, y, z)] = scale * sum / T(children);
      }
}

// fine += the trilinear interpolation of coarse at children_position (multigrid.hpp: why not the
// pyramid's field-of-view-aligned resample_position).
template <class T> void prolong_add(const Volume<T> &coarse, Volume<T> &fine) {
  const Grid &f = fine.grid, &c = coarse.grid;
#pragma omp parallel for collapse(2) schedule(static) if (f.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < f.nz(); ++z)
    for (std::int64_t y = 0; y < f.ny(); ++y)
      for (std::int64_t x = 0; x < f.nx(); ++x)
        fine.v[f.index(x, y, z)] +=
            trilinear(coarse.v.data(), c.nx(), c.ny(), c.nz(), children_position<T>(x),
                      children_position<T>(y), children_position<T>(z));
}

// coarse = scale * P^T fine, P the trilinear prolongation above (clamp-to-edge), applied one axis
// at a time (P is the tensor product of the axes' linear interpolations): the restriction that
// makes the V-cycle symmetric, as conjugate gradients needs of its preconditioner.
template <class T>
void transpose_axis(const std::vector<T> &in, const std::int64_t (&n_in)[3], std::vector<T> &out,
                    const std::int64_t (&n_out)[3], int axis) {
  const std::int64_t nf = n_in[axis], nc = n_out[axis];
  std::vector<std::int64_t> i0(nf), i1(nf);
  std::vector<T> t(nf);
  for (std::int64_t i = 0; i < nf; ++i) { // trilinear()'s weights along the axis
    T q = std::clamp(children_position<T>(i), T(0), T(nc - 1));
    i0[i] = static_cast<std::int64_t>(q);
    i1[i] = std::min(i0[i] + 1, nc - 1);
    t[i] = q - T(i0[i]);
  }
  const std::int64_t stride_in[3] = {1, n_in[0], n_in[0] * n_in[1]},
                     stride_out[3] = {1, n_out[0], n_out[0] * n_out[1]};
  const int a1 = axis == 0 ? 1 : 0, a2 = axis == 2 ? 1 : 2; // the other two axes
  std::fill(out.begin(), out.end(), T(0));
  const std::int64_t lines = n_out[a1] * n_out[a2];
#pragma omp parallel for schedule(static) if (lines * nf >= kMinParallelVoxels)
  for (std::int64_t line = 0; line < lines; ++line) {
    const std::int64_t p1 = line % n_out[a1], p2 = line / n_out[a1];
    const T *src = in.data() + p1 * stride_in[a1] + p2 * stride_in[a2];
    T *dst = out.data() + p1 * stride_out[a1] + p2 * stride_out[a2];
    for (std::int64_t i = 0; i < nf; ++i) {
      const T f = src[i * stride_in[axis]];
      dst[i0[i] * stride_out[axis]] += (T(1) - t[i]) * f;
      dst[i1[i] * stride_out[axis]] += t[i] * f;
    }
  }
}

template <class T> void restrict_transpose(const Volume<T> &fine, Volume<T> &coarse, T scale) {
  const Grid &f = fine.grid, &c = coarse.grid;
  std::int64_t n0[3] = {f.nx(), f.ny(), f.nz()}, n1[3] = {c.nx(), f.ny(), f.nz()},
               n2[3] = {c.nx(), c.ny(), f.nz()}, n3[3] = {c.nx(), c.ny(), c.nz()};
  std::vector<T> a(static_cast<std::size_t>(n1[0] * n1[1] * n1[2])),
      b(static_cast<std::size_t>(n2[0] * n2[1] * n2[2]));
  transpose_axis(fine.v, n0, a, n1, 0);
  transpose_axis(a, n1, b, n2, 1);
  transpose_axis(b, n2, coarse.v, n3, 2);
  for (T &x : coarse.v)
    x *= scale;
}

template <class T> void zero(Field<T> &f) {
  for (Volume<T> &c : f)
    std::fill(c.v.begin(), c.v.end(), T(0));
}

// The passes of the coarsest grid (extent 2-3: a few dozen voxels): enough block Gauss-Seidel
// passes to solve it far below any tolerance the finer levels meet (each pass is exact per voxel).
constexpr int kCoarsestPasses = 20;

} // namespace

template <class T>
Multigrid<T>::Multigrid(const Grid &fine, const MotionMultigridOptions &options)
    : options_(options) {
  for (const Grid &g : multigrid_grids(fine)) {
    Level l{g, {}, {}, make_field<T>(g), T(0), T(0)};
    if (!levels_.empty()) { // the finest level's tensor and unknown are the caller's
      for (Volume<T> &c : l.j)
        c = Volume<T>(g);
      l.e = make_field<T>(g);
    }
    levels_.push_back(std::move(l));
  }
  last_ = make_field<T>(fine);
}

template <class T> void Multigrid<T>::make_symmetric() {
  symmetric_ = true;
  pre_ = post_ = std::max(options_.pre_smoothing, options_.post_smoothing);
  const Grid &fine = levels_[0].grid;
  if (r_[0].v.empty()) {
    for (Volume<T> &c : pre_j_)
      c = Volume<T>(fine);
    r_ = make_field<T>(fine), z_ = make_field<T>(fine), p_ = make_field<T>(fine);
    q_ = make_field<T>(fine);
  }
}

namespace {
template <class T> double dot(const Field<T> &a, const Field<T> &b) {
  const std::int64_t n = a[0].grid.voxels();
  double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static) if (n >= kMinParallelVoxels)
  for (std::int64_t v = 0; v < n; ++v)
    for (int c = 0; c < 3; ++c)
      sum += double(a[c].v[v]) * double(b[c].v[v]);
  return sum;
}
// y += s x
template <class T> void axpy(T s, const Field<T> &x, Field<T> &y) {
  const std::int64_t n = x[0].grid.voxels();
#pragma omp parallel for schedule(static) if (n >= kMinParallelVoxels)
  for (std::int64_t v = 0; v < n; ++v)
    for (int c = 0; c < 3; ++c)
      y[c].v[v] += s * x[c].v[v];
}
} // namespace

template <class T> void Multigrid<T>::precondition() {
  const int time[3] = {kXT, kYT, kZT};
  for (int c = 0; c < 3; ++c)
    std::transform(r_[c].v.begin(), r_[c].v.end(), pre_j_[time[c]].v.begin(),
                   [](T r) { return -r; });
  zero(z_);
  const Tensor<T> *j = fine_j_;
  Field<T> *w = fine_w_;
  fine_j_ = &pre_j_, fine_w_ = &z_;
  v_cycle(0);
  fine_j_ = j, fine_w_ = w;
}

// Preconditioned conjugate gradients (the V-cycle is symmetric positive definite: adjoint pre- and
// post-smoothing, restriction a multiple of the prolongation's transpose), so that the few
// components the smoother leaves (gamma > 0: divergence-free high frequencies relaxed through a
// diagonal that carries gamma) are removed by the Krylov space instead of cycle after cycle.
template <class T>
void Multigrid<T>::conjugate_gradients(MultigridResult &result, double tolerance, double b2) {
  const Tensor<T> &j = *fine_j_;
  Field<T> &w = *fine_w_;
  const T alpha = levels_[0].alpha, gamma = levels_[0].gamma;
  const int data[6] = {kXX, kXY, kXZ, kYY, kYZ, kZZ};
  for (int c : data)
    pre_j_[c].v = j[c].v;
  bool restart = true;
  double rz = 0;
  const auto copy = [](const Field<T> &from, Field<T> &to) {
    for (int c = 0; c < 3; ++c)
      to[c].v = from[c].v;
  };
  while (result.residual > tolerance && result.cycles < options_.max_cycles) {
    if (restart) { // from the true residual (left in levels_[0].r by the last measurement)
      for (int c = 0; c < 3; ++c)
        r_[c].v = levels_[0].r[c].v;
      precondition();
      rz = dot(r_, z_);
      for (int c = 0; c < 3; ++c)
        p_[c].v = z_[c].v;
      restart = false;
    }
    const double pap = apply_operator(j, p_, q_, alpha, gamma);
    ++fine_passes_;
    if (!std::isfinite(pap) || !std::isfinite(rz)) {
      result.non_finite = true; // w is unchanged: its residual is the last finite one
      break;
    }
    if (!(pap > 0))
      break; // p = 0 or rounding: nothing left to gain
    const T step = T(rz / pap);
    copy(w, last_);
    axpy(step, p_, w);
    axpy(-step, q_, r_);
    ++result.cycles;
    const double recurrence = relative_residual(dot(r_, r_), b2);
    if (!std::isfinite(recurrence)) {
      copy(last_, w);
      result.non_finite = true;
      break;
    }
    result.residual = recurrence;
    if (result.residual <= tolerance || result.cycles >= options_.max_cycles) {
      copy(w, last_); // the recurrence drifts in float: confirm with the true residual
      const double previous = result.residual;
      result.residual = measure(b2);
      if (!std::isfinite(result.residual)) {
        copy(last_, w);
        result.residual = previous, result.non_finite = true;
        break;
      }
      restart = true;
      continue;
    }
    precondition();
    const double rz_next = dot(r_, z_);
    const T beta = T(rz_next / rz);
    rz = rz_next;
    for (int c = 0; c < 3; ++c)
      for (std::size_t v = 0; v < p_[c].v.size(); ++v)
        p_[c].v[v] = z_[c].v[v] + beta * p_[c].v[v];
  }
}

// reverse: the colours in the opposite order (post-smoothing), so that pre- and post-smoothing are
// each other's adjoint and the V-cycle is a symmetric operator.
template <class T> void Multigrid<T>::smooth(std::size_t l, int passes, bool reverse) {
  const int colours = sor_colours(double(levels_[l].gamma));
  Field<T> &x = unknown(l);
  for (int p = 0; p < passes; ++p)
    for (int k = 0; k < colours; ++k) {
      const int c = reverse ? colours - 1 - k : k;
      sweep(tensor(l), x, x, c, colours, levels_[l].alpha, levels_[l].gamma, T(1));
    }
  if (l == 0)
    fine_passes_ += std::int64_t(passes) * colours;
}

// Krylov: the prolongation's transpose (scaled to preserve a mean), for a symmetric V-cycle; plain
// V-cycles: the mean of the children (measured: 4 cycles against 6 on bench_motion_cpu's 64^3
// level at gamma 0.3).
template <class T>
void Multigrid<T>::restrict_residual_into(const Volume<T> &fine, Volume<T> &coarse, T sign) const {
  if (symmetric_)
    restrict_transpose(fine, coarse, sign * T(coarse.grid.voxels()) / T(fine.grid.voxels()));
  else
    restrict_mean(fine, coarse, sign);
}

template <class T> void Multigrid<T>::restrict_residual(std::size_t l) {
  Level &lv = levels_[l], &coarse = levels_[l + 1];
  residual(tensor(l), unknown(l), lv.r, lv.alpha, lv.gamma);
  if (l == 0)
    ++fine_passes_;
  const int time[3] = {kXT, kYT, kZT};
  for (int c = 0; c < 3; ++c) // A e = r: time column -r
    restrict_residual_into(lv.r[c], coarse.j[time[c]], T(-1));
  zero(coarse.e);
}

template <class T> void Multigrid<T>::v_cycle(std::size_t l) {
  if (l + 1 == levels_.size()) {
    smooth(l, kCoarsestPasses / 2, false);
    smooth(l, kCoarsestPasses / 2, symmetric_);
    return;
  }
  smooth(l, pre_, false);
  restrict_residual(l);
  v_cycle(l + 1);
  for (int c = 0; c < 3; ++c)
    prolong_add(levels_[l + 1].e[c], unknown(l)[c]);
  smooth(l, post_, symmetric_);
}

// Nested iteration on the residual equation: the residual (levels_[0].r, left there by solve's
// measurement of w) restricted to every level, the coarsest solved, then each finer level starts
// from the prolongated coarser correction and runs one V-cycle; the finest level's V-cycle runs on
// w itself.
template <class T> void Multigrid<T>::full_multigrid() {
  const int time[3] = {kXT, kYT, kZT};
  for (std::size_t l = 1; l < levels_.size(); ++l)
    for (int c = 0; c < 3; ++c) {
      restrict_residual_into(levels_[l - 1].r[c], levels_[l].r[c], T(1));
      std::transform(levels_[l].r[c].v.begin(), levels_[l].r[c].v.end(),
                     levels_[l].j[time[c]].v.begin(), [](T r) { return -r; });
    }
  const std::size_t coarsest = levels_.size() - 1;
  zero(levels_[coarsest].e);
  smooth(coarsest, kCoarsestPasses, false);
  for (std::size_t l = coarsest; l-- > 1;) {
    zero(levels_[l].e);
    for (int c = 0; c < 3; ++c)
      prolong_add(levels_[l + 1].e[c], levels_[l].e[c]);
    v_cycle(l);
  }
  for (int c = 0; c < 3; ++c)
    prolong_add(levels_[1].e[c], unknown(0)[c]);
  v_cycle(0);
}

// ||b - A w|| / ||b|| of the iterate, its residual left in levels_[0].r (where the next cycle, the
// full multigrid pass or the conjugate gradients' restart reads it).
template <class T> double Multigrid<T>::measure(double b2) {
  ++fine_passes_;
  return relative_residual(
      residual(*fine_j_, *fine_w_, levels_[0].r, levels_[0].alpha, levels_[0].gamma), b2);
}

// The V-cycles (the first a full multigrid pass with options.full) while each lowers the
// residual below kStallRatio of the last. One that does not (divergence: the residual rises; a
// stall: it falls too slowly) hands over to the conjugate gradients preconditioned by the
// symmetric V-cycle, from the better iterate of the two; a non-finite residual ends the solve at
// the iterate before it. w is copied before each cycle for that.
template <class T>
void Multigrid<T>::v_cycles(MultigridResult &result, double tolerance, double b2) {
  Field<T> &w = *fine_w_;
  while (result.residual > tolerance && result.cycles < options_.max_cycles) {
    for (int c = 0; c < 3; ++c)
      last_[c].v = w[c].v;
    if (options_.full && result.cycles == 0 && levels_.size() > 1)
      full_multigrid();
    else
      v_cycle(0);
    ++result.cycles;
    const double previous = result.residual;
    const bool go_on = continue_v_cycles(
        result, previous, measure(b2), tolerance, options_.max_cycles,
        [&] {
          for (int c = 0; c < 3; ++c)
            w[c].v = last_[c].v;
          return measure(b2); // previous, bitwise; its residual into levels_[0].r
        },
        [&] {
          make_symmetric();
          conjugate_gradients(result, tolerance, b2);
        });
    if (!go_on)
      return;
  }
}

template <class T>
MultigridResult Multigrid<T>::solve(const Tensor<T> &j, Field<T> &w, T alpha, T gamma,
                                    double tolerance) {
  fine_j_ = &j, fine_w_ = &w, fine_passes_ = 0;
  symmetric_ = false, pre_ = options_.pre_smoothing, post_ = options_.post_smoothing;
  if (options_.krylov)
    make_symmetric();
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    levels_[l].alpha = alpha, levels_[l].gamma = gamma;
    alpha /= T(4), gamma /= T(4);
  }
  const int data[6] = {kXX, kXY, kXZ, kYY, kYZ, kZZ};
  for (std::size_t l = 1; l < levels_.size(); ++l)
    for (int c : data)
      restrict_mean(tensor(l - 1)[c], levels_[l].j[c], T(1));
  const double b2 = rhs_norm2(j);
  MultigridResult result;
  result.residual = measure(b2);
  if (!std::isfinite(result.residual)) { // the system itself (b or A w) overflowed: w unchanged
    result.non_finite = true;
  } else if (options_.krylov) {
    if (options_.full && levels_.size() > 1 && result.residual > tolerance) {
      for (int c = 0; c < 3; ++c)
        last_[c].v = w[c].v;
      const double start = result.residual;
      full_multigrid();
      ++result.cycles;
      result.residual = measure(b2);
      if (!std::isfinite(result.residual)) {
        for (int c = 0; c < 3; ++c)
          w[c].v = last_[c].v;
        result.residual = start, result.non_finite = true;
      }
    }
    if (!result.non_finite)
      conjugate_gradients(result, tolerance, b2);
  } else
    v_cycles(result, tolerance, b2);
  result.fine_passes = fine_passes_;
  fine_j_ = nullptr, fine_w_ = nullptr;
  return result;
}

template class Multigrid<float>;
template class Multigrid<double>;

} // namespace mri::detail::motion
