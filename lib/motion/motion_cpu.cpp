// The CPU backend: the driver (motion_driver.hpp) over the OpenMP stages, in float (fast path) or
// double (the tests' reference). Stage times are host wall clock.
#include <algorithm>
#include <chrono>

#include "cpu_stages.hpp"
#include "multigrid.hpp"
#include "mri_backend/motion_driver.hpp"

namespace mri {
namespace detail::motion {
namespace {

template <class T> class CpuOps {
public:
  using Vol = Volume<T>;

  explicit CpuOps(const MotionOptions &o)
      : alpha_(T(o.alpha)), gamma_(T(o.gamma)),
        omega_(T(o.omega)), taps_{gaussian_taps(kAntiAliasStd, "anti-aliasing std"),
                                  gaussian_taps(o.sigma, "options.sigma"),
                                  gaussian_taps(o.rho, "options.rho")},
        derivative_(o.derivative), tolerance_(o.tolerance), multigrid_options_(o.multigrid) {}

  Vol make(const Grid &g) const { return Vol(g); }
  void upload(const RealVolume &f, Vol &out) const {
    std::copy(f.values().begin(), f.values().end(), out.v.begin());
  }
  void download(const Vol &f, RealVolume &out) const {
    std::transform(f.v.begin(), f.v.end(), out.values().begin(),
                   [](T x) { return static_cast<float>(x); });
  }
  void copy(const Vol &src, Vol &dst) const { dst.v = src.v; }
  void zero(Vol &f) const { std::fill(f.v.begin(), f.v.end(), T(0)); }
  void gaussian(Vol &f, Vol &tmp, Kernel k) const {
    motion::gaussian(f, tmp, taps_[static_cast<int>(k)]);
  }
  void resample(const Vol &f, Vol &out, float scale) const { motion::resample(f, out, T(scale)); }
  void gradients(const Vol &f, Field<T> &g) const { motion::gradients(f, g, derivative_); }
  void warp(const Vol &f, const Field<T> &w, Vol &out) const { motion::warp(f, w, out); }
  void tensor(const Field<T> &g, const Vol &fixed, const Vol &moved, Tensor<T> &j) const {
    motion::tensor(g, fixed, moved, j);
  }
  void fold(Tensor<T> &j, const Field<T> &w) const { motion::fold(j, w); }
  void charbonnier_reweight(const Tensor<T> &data, const Field<T> &w0, const Field<T> &w,
                            Tensor<T> &j, double inv_eps2) const {
    motion::charbonnier_reweight(data, w0, w, j, T(inv_eps2));
  }
  void sweep(const Tensor<T> &j, const Field<T> &src, Field<T> &dst, int colour,
             int colours) const {
    motion::sweep(j, src, dst, colour, colours, alpha_, gamma_, colour < 0 ? T(1) : omega_);
  }

  double relative_residual(const Tensor<T> &j, const Field<T> &w) {
    Field<T> &r = scratch(w[0].grid);
    return motion::relative_residual(residual(j, w, r, alpha_, gamma_), rhs_norm2(j));
  }
  // One solver per pyramid level, made on the level's first solve.
  MultigridResult multigrid(const Tensor<T> &j, Field<T> &w, int level) {
    if (multigrid_.size() <= std::size_t(level))
      multigrid_.resize(std::size_t(level) + 1);
    auto &solver = multigrid_[std::size_t(level)];
    if (!solver)
      solver = std::make_unique<Multigrid<T>>(w[0].grid, multigrid_options_);
    return solver->solve(j, w, alpha_, gamma_, tolerance_);
  }

  template <class F> void timed(Stage s, F &&f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms_[static_cast<int>(s)] +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  double elapsed(Stage s) const { return ms_[static_cast<int>(s)]; }
  void reset_timers() { ms_.fill(0); }
  void synchronize() const {}
  Backend backend() const { return Backend::Cpu; }

private:
  T alpha_, gamma_, omega_;
  std::array<std::vector<double>, static_cast<int>(Kernel::Count)> taps_;
  Field<T> &scratch(const Grid &g) {
    if (!(scratch_[0].grid == g))
      scratch_ = {Vol(g), Vol(g), Vol(g)};
    return scratch_;
  }

  MotionDerivative derivative_;
  double tolerance_;
  MotionMultigridOptions multigrid_options_;
  std::vector<std::unique_ptr<Multigrid<T>>> multigrid_;
  Field<T> scratch_; // the residual of relative_residual (the finest level's grid, reused)
  std::array<double, static_cast<int>(Stage::Count)> ms_{};
};

template <class T>
std::unique_ptr<MotionBackend> make(const Grid &grid, const MotionOptions &options) {
  return std::make_unique<DriverBackend<CpuOps<T>>>(CpuOps<T>(options), grid, options);
}

} // namespace
} // namespace detail::motion

std::unique_ptr<MotionBackend> make_cpu_motion_backend(const Grid &grid,
                                                       const MotionOptions &options) {
  return options.precision == Precision::Float64 ? detail::motion::make<double>(grid, options)
                                                 : detail::motion::make<float>(grid, options);
}

} // namespace mri
