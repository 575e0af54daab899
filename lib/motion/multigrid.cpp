// The multigrid solver of a warp's linear system (multigrid.hpp: the scheme and its sources).
#include "multigrid.hpp"

#include <algorithm>

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

// fine += the trilinear interpolation of coarse (voxel centres aligned, as the pyramid's
// resampling: resample_position).
template <class T> void prolong_add(const Volume<T> &coarse, Volume<T> &fine) {
  const Grid &f = fine.grid, &c = coarse.grid;
#pragma omp parallel for collapse(2) schedule(static) if (f.voxels() >= kMinParallelVoxels)
  for (std::int64_t z = 0; z < f.nz(); ++z)
    for (std::int64_t y = 0; y < f.ny(); ++y)
      for (std::int64_t x = 0; x < f.nx(); ++x)
        fine.v[f.index(x, y, z)] +=
            trilinear(coarse.v.data(), c.nx(), c.ny(), c.nz(), resample_position<T>(x, f.nx(), c.nx()),
                      resample_position<T>(y, f.ny(), c.ny()), resample_position<T>(z, f.nz(), c.nz()));
}

template <class T> void zero(Field<T> &f) {
  for (Volume<T> &c : f)
    std::fill(c.v.begin(), c.v.end(), T(0));
}

// The passes of the coarsest grid (extent 2-3: a few dozen voxels): enough block Gauss-Seidel
// passes to solve it far below any tolerance the finer levels meet (each pass is exact per voxel).
constexpr int kCoarsestPasses = 20;

} // namespace

std::vector<Grid> multigrid_grids(const Grid &fine) {
  std::vector<Grid> grids{fine};
  while (std::min({grids.back().nx(), grids.back().ny(), grids.back().nz()}) >= 4) {
    const Grid &g = grids.back();
    grids.emplace_back((g.nx() + 1) / 2, (g.ny() + 1) / 2, (g.nz() + 1) / 2);
  }
  return grids;
}

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
}

template <class T> void Multigrid<T>::smooth(std::size_t l, int passes) {
  const int colours = sor_colours(double(levels_[l].gamma));
  Field<T> &x = unknown(l);
  for (int p = 0; p < passes; ++p)
    for (int c = 0; c < colours; ++c)
      sweep(tensor(l), x, x, c, colours, levels_[l].alpha, levels_[l].gamma, T(1));
  if (l == 0)
    fine_passes_ += std::int64_t(passes) * colours;
}

template <class T> void Multigrid<T>::restrict_residual(std::size_t l) {
  Level &lv = levels_[l], &coarse = levels_[l + 1];
  residual(tensor(l), unknown(l), lv.r, lv.alpha, lv.gamma);
  if (l == 0)
    ++fine_passes_;
  const int time[3] = {kXT, kYT, kZT};
  for (int c = 0; c < 3; ++c)
    restrict_mean(lv.r[c], coarse.j[time[c]], T(-1)); // A e = r: time column -r
  zero(coarse.e);
}

template <class T> void Multigrid<T>::v_cycle(std::size_t l) {
  if (l + 1 == levels_.size()) {
    smooth(l, kCoarsestPasses);
    return;
  }
  smooth(l, options_.pre_smoothing);
  restrict_residual(l);
  v_cycle(l + 1);
  for (int c = 0; c < 3; ++c)
    prolong_add(levels_[l + 1].e[c], unknown(l)[c]);
  smooth(l, options_.post_smoothing);
}

// Nested iteration on the residual equation: the residual (levels_[0].r, left there by solve's
// measurement of w) restricted to every level, the coarsest solved, then each finer level starts
// from the prolongated coarser correction and runs one V-cycle; the finest level's V-cycle runs on
// w itself.
template <class T> void Multigrid<T>::full_multigrid() {
  const int time[3] = {kXT, kYT, kZT};
  for (std::size_t l = 1; l < levels_.size(); ++l)
    for (int c = 0; c < 3; ++c) {
      restrict_mean(levels_[l - 1].r[c], levels_[l].r[c], T(1));
      std::transform(levels_[l].r[c].v.begin(), levels_[l].r[c].v.end(),
                     levels_[l].j[time[c]].v.begin(), [](T r) { return -r; });
    }
  const std::size_t coarsest = levels_.size() - 1;
  zero(levels_[coarsest].e);
  smooth(coarsest, kCoarsestPasses);
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

template <class T>
MultigridResult Multigrid<T>::solve(const Tensor<T> &j, Field<T> &w, T alpha, T gamma,
                                    double tolerance) {
  fine_j_ = &j, fine_w_ = &w, fine_passes_ = 0;
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    levels_[l].alpha = alpha, levels_[l].gamma = gamma;
    alpha /= T(4), gamma /= T(4);
  }
  const int data[6] = {kXX, kXY, kXZ, kYY, kYZ, kZZ};
  for (std::size_t l = 1; l < levels_.size(); ++l)
    for (int c : data)
      restrict_mean(tensor(l - 1)[c], levels_[l].j[c], T(1));
  const double b2 = rhs_norm2(j);
  const auto measure = [&] {
    ++fine_passes_;
    return relative_residual(residual(j, w, levels_[0].r, levels_[0].alpha, levels_[0].gamma), b2);
  };
  MultigridResult result;
  result.residual = measure();
  while (result.residual > tolerance && result.cycles < options_.max_cycles) {
    if (options_.full && result.cycles == 0 && levels_.size() > 1)
      full_multigrid();
    else
      v_cycle(0);
    ++result.cycles;
    result.residual = measure();
  }
  result.fine_passes = fine_passes_;
  fine_j_ = nullptr, fine_w_ = nullptr;
  return result;
}

template class Multigrid<float>;
template class Multigrid<double>;

} // namespace mri::detail::motion
