#pragma once
// The estimator's control flow, written once for every backend (Algorithm 1 of the GPU motion
// paper; mri/motion.hpp, docs/architecture.md): a coarse-to-fine pyramid, `warps` linearisations
// per level, each one warp -> tensor -> K_rho -> fold -> solver sweeps. `Ops` supplies the stages
// on its own buffers: CpuOps<T> (lib/motion, float and double) and cuda's DeviceOps
// (device-resident volumes, CUDA events for timing).
//
// Ops provides: Vol (a movable volume with .grid), make(grid), upload(RealVolume, Vol&),
// download(Vol, RealVolume&), copy(src, dst), zero(Vol&), gaussian(Vol&, Vol& tmp, Kernel),
// resample(src, dst, scale), gradients(f, Fld&), warp(f, Fld, out), tensor(Fld, fixed, moved,
// Ten&), fold(Ten&, Fld), sweep(Ten, Fld src, Fld& dst, colour, colours), timed(Stage, fn),
// elapsed(Stage), reset_timers(), synchronize(). Optional: relative_residual(Ten, Fld) (the
// Euler-Lagrange residual ||b - A w|| / ||b|| of the warp's system: the report's solver_residual)
// and multigrid(Ten, Fld&, level) -> {residual, cycles, fine_passes} (MotionSolver::Multigrid),
// charbonnier_reweight(Ten data, Fld w0, Fld w, Ten& j, inv_eps2) (MotionDataTerm::Charbonnier);
// an Ops without one refuses what needs it (Unsupported) rather than run something else.
#include <array>
#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "mri_backend/motion_backend.hpp"
#include "mri/detail/motion_stencil.hpp"
#include "mri/error.hpp"
#include "mri/motion.hpp"

namespace mri::detail::motion {

enum class Stage : int { Transfer, Pyramid, Gradients, Warp, Tensor, Gaussian, Solver, Count };
// The three Gaussians: the pyramid's anti-aliasing, the frames' pre-smoothing, the tensor's K_rho.
enum class Kernel : int { AntiAlias, Sigma, Rho, Count };
// Std of the pyramid's anti-aliasing before halving (a factor-2 decimation passes up to the
// coarse Nyquist; 0.8 voxels attenuates the aliased band to a few percent at 7 taps).
inline constexpr double kAntiAliasStd = 0.8;

// The grid of each pyramid level (level 0 = the frames'): extents halved, rounding up.
std::vector<Grid> pyramid_grids(const Grid &grid, int levels);

template <class Ops> class DriverBackend final : public MotionBackend {
public:
  using Vol = typename Ops::Vol;
  using Fld = std::array<Vol, 3>;
  using Ten = std::array<Vol, kChannels>;
  static constexpr bool kHasMultigrid = requires(Ops &o, const Ten &j, Fld &w) {
    o.multigrid(j, w, 0);
  };
  static constexpr bool kHasResidual = requires(Ops &o, const Ten &j, const Fld &w) {
    o.relative_residual(j, w);
  };
  static constexpr bool kHasRobust = requires(Ops &o, const Ten &j, const Fld &w, Ten &out) {
    o.charbonnier_reweight(j, w, w, out, 1.0);
  };
  // Optional: gaussian_tensor(Ten&, channels, Kernel) smooths a tensor's first channels at once
  // (the GPU's: a launch per axis for all of them); else gaussian per channel.
  static constexpr bool kHasTensorGaussian = requires(Ops &o, Ten &j) {
    o.gaussian_tensor(j, 1, Kernel::Rho);
  };

  DriverBackend(Ops ops, const Grid &grid, const MotionOptions &options)
      : ops_(std::move(ops)), options_(options) {
    if constexpr (!kHasMultigrid)
      if (options.solver == MotionSolver::Multigrid)
        throw Unsupported("options.solver = multigrid: this motion backend has no multigrid solver "
                          "(use backend = cpu, or solver = jacobi or red-black SOR)");
    if constexpr (!kHasRobust)
      if (options.data_term == MotionDataTerm::Charbonnier)
        throw Unsupported("options.data_term = charbonnier: this motion backend has no robust data "
                          "term (use backend = cpu, or data_term = quadratic)");
    for (const Grid &g : pyramid_grids(grid, options.levels))
      levels_.push_back(make_level(g));
    for (Frame &f : frames_)
      for (const Level &l : levels_)
        f.level.push_back(ops_.make(l.grid));
  }

  DisplacementField estimate(const RealVolume &fixed, const RealVolume &moving,
                             MotionReport &report) override {
    const auto start = std::chrono::steady_clock::now();
    reset_counters();
    DisplacementField out = estimate_pair(prepare(fixed, frames_[0]), prepare(moving, frames_[1]));
    finish(report, start);
    return out;
  }

  std::vector<DisplacementField> estimate_sequence(std::span<const RealVolume> frames,
                                                   MotionReport &report) override {
    const auto start = std::chrono::steady_clock::now();
    reset_counters();
    std::vector<DisplacementField> out;
    prepare(frames[0], frames_[0]);
    for (std::size_t k = 1; k < frames.size();
         ++k) // frame k - 1 stays prepared in frames_[(k - 1) % 2]
      out.push_back(estimate_pair(frames_[(k - 1) % 2], prepare(frames[k], frames_[k % 2])));
    finish(report, start);
    return out;
  }

  // Each frame against one reference (the moving frame of every pair): the reference is
  // uploaded and its pyramid built once, in frames_[1], which the pairs only read. Each pair
  // starts from zero motion with the same plans, so its field equals estimate(frame, reference)'s.
  std::vector<DisplacementField> estimate_to_reference(std::span<const RealVolume> frames,
                                                       const RealVolume &reference,
                                                       MotionReport &report,
                                                       std::vector<MotionReport> &pairs) override {
    const auto start = std::chrono::steady_clock::now();
    std::vector<DisplacementField> out;
    pairs.assign(frames.size(), MotionReport{});
    report = MotionReport{};
    reset_counters();
    const Frame &moving = prepare(reference, frames_[1]);
    for (std::size_t k = 0; k < frames.size(); ++k) {
      const auto pair_start = k == 0 ? start : std::chrono::steady_clock::now();
      if (k > 0)
        reset_counters();
      out.push_back(estimate_pair(prepare(frames[k], frames_[0]), moving));
      finish(pairs[k], pair_start);
      add_report(report, pairs[k]);
    }
    report.total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    report.solver = options_.solver;
    report.backend = ops_.backend();
    return out;
  }

private:
  struct Level {
    Grid grid;
    Fld w, w_next, g;
    Vol moved, tmp;
    Ten j;
    Ten data; // Charbonnier: the warp's unweighted, unfolded tensor
    Fld w0;   // Charbonnier: the field the warp started from
  };
  struct Frame {
    std::vector<Vol> level; // pre-smoothed frame per pyramid level
  };

  Level make_level(const Grid &g) {
    Level l{g, make_field(g), make_field(g), make_field(g), ops_.make(g), ops_.make(g), {}, {}, {}};
    for (Vol &c : l.j)
      c = ops_.make(g);
    if (robust()) {
      for (Vol &c : l.data)
        c = ops_.make(g);
      l.w0 = make_field(g);
    }
    return l;
  }
  Fld make_field(const Grid &g) { return {ops_.make(g), ops_.make(g), ops_.make(g)}; }

  // Upload, decimate (anti-alias, then trilinear resampling onto the coarser grid), pre-smooth.
  const Frame &prepare(const RealVolume &frame, Frame &f) {
    ops_.timed(Stage::Transfer, [&] { ops_.upload(frame, f.level[0]); });
    ops_.timed(Stage::Pyramid, [&] {
      for (std::size_t l = 1; l < levels_.size(); ++l) {
        Vol &scratch = levels_[l - 1].moved;
        ops_.copy(f.level[l - 1], scratch);
        ops_.gaussian(scratch, levels_[l - 1].tmp, Kernel::AntiAlias);
        ops_.resample(scratch, f.level[l], 1.0f);
      }
      for (std::size_t l = 0; l < levels_.size(); ++l)
        ops_.gaussian(f.level[l], levels_[l].tmp, Kernel::Sigma);
    });
    return f;
  }

  DisplacementField estimate_pair(const Frame &fixed, const Frame &moving) {
    // The field's host memory (3 zeroed volumes: 25 MB at 128^3, page faults and zeroing) is made
    // on another thread while this one runs the levels (on the GPU: waits for them), not after.
    std::future<DisplacementField> field = std::async(
        std::launch::async, [grid = levels_[0].grid] { return DisplacementField(grid); });
    for (int l = static_cast<int>(levels_.size()) - 1; l >= 0; --l) {
      Level &lv = levels_[l];
      ops_.timed(Stage::Pyramid, [&] { start_level(l); });
      ops_.timed(Stage::Gradients, [&] { ops_.gradients(fixed.level[l], lv.g); });
      for (int k = 0; k < options_.warps; ++k)
        linearise_and_solve(lv, l, fixed.level[l], moving.level[l]);
    }
    DisplacementField out = field.get();
    ops_.timed(Stage::Transfer, [&] {
      ops_.download(levels_[0].w[0], out.u);
      ops_.download(levels_[0].w[1], out.v);
      ops_.download(levels_[0].w[2], out.w);
    });
    return out;
  }

  // The coarsest level starts from zero motion, every other from the coarser field, upsampled
  // and rescaled to this level's voxels.
  void start_level(int l) {
    Level &lv = levels_[l];
    if (l + 1 == static_cast<int>(levels_.size())) {
      for (Vol &c : lv.w)
        ops_.zero(c);
      return;
    }
    const Level &coarse = levels_[l + 1];
    for (int a = 0; a < 3; ++a)
      ops_.resample(coarse.w[a], lv.w[a],
                    static_cast<float>(lv.grid.extent(a)) / coarse.grid.extent(a));
  }

  void linearise_and_solve(Level &lv, int l, const Vol &fixed, const Vol &moving) {
    ops_.timed(Stage::Warp, [&] { ops_.warp(moving, lv.w, lv.moved); });
    ops_.timed(Stage::Tensor, [&] { ops_.tensor(lv.g, fixed, lv.moved, lv.j); });
    // kTT (It^2) only enters the quadratic energy's constant: the solver never reads it, so it is
    // smoothed only for the Charbonnier weights, which need the whole residual.
    ops_.timed(Stage::Gaussian, [&] {
      const int channels = robust() ? kChannels : kTT;
      if constexpr (kHasTensorGaussian)
        ops_.gaussian_tensor(lv.j, channels, Kernel::Rho);
      else
        for (int c = 0; c < channels; ++c)
          ops_.gaussian(lv.j[c], lv.tmp, Kernel::Rho);
    });
    if constexpr (kHasRobust)
      if (robust()) {
        reweighted_solves(lv, l);
        return;
      }
    ops_.timed(Stage::Tensor, [&] { ops_.fold(lv.j, lv.w); });
    ops_.timed(Stage::Solver, [&] { solve(lv, l); });
  }

  bool robust() const { return options_.data_term == MotionDataTerm::Charbonnier; }

  // Lagged diffusivity (Bruhn et al. 2005, section 5; Brox et al. 2004): each solve's tensor is
  // the data tensor weighted per voxel by psi'(e) at the field the previous solve left (the first
  // at the warp's start), so each linear system is the quadratic CLG's, solved by the chosen
  // solver; the weights majorise the concave psi, so each solve lowers the robust energy.
  void reweighted_solves(Level &lv, int l) {
    ops_.timed(Stage::Tensor, [&] {
      for (int c = 0; c < kChannels; ++c)
        ops_.copy(lv.j[c], lv.data[c]);
      for (int a = 0; a < 3; ++a)
        ops_.copy(lv.w[a], lv.w0[a]);
    });
    const double inv_eps2 = 1.0 / (options_.epsilon * options_.epsilon);
    for (int k = 0; k < options_.reweightings; ++k) {
      ops_.timed(Stage::Tensor, [&] {
        ops_.charbonnier_reweight(lv.data, lv.w0, lv.w, lv.j, inv_eps2);
        ops_.fold(lv.j, lv.w0);
      });
      ops_.timed(Stage::Solver, [&] { solve(lv, l); });
    }
  }

  void solve(Level &lv, int l) {
    if constexpr (kHasMultigrid)
      if (options_.solver == MotionSolver::Multigrid) {
        const auto result = ops_.multigrid(lv.j, lv.w, l);
        note_residual(result.residual);
        cycles_ += result.cycles;
        sweeps_ += result.fine_passes;
        switches_ += result.switched ? 1 : 0;
        nonfinite_ += result.non_finite ? 1 : 0;
        return;
      }
    for (int it = 0; it < options_.iterations; ++it) {
      if (options_.solver == MotionSolver::Jacobi) {
        ops_.sweep(lv.j, lv.w, lv.w_next, -1, colours_);
        std::swap(lv.w, lv.w_next);
      } else {
        for (int c = 0; c < colours_; ++c)
          ops_.sweep(lv.j, lv.w, lv.w, c, colours_);
      }
    }
    sweeps_ += std::int64_t(options_.iterations) *
               (options_.solver == MotionSolver::Jacobi ? 1 : colours_);
    if constexpr (kHasResidual)
      note_residual(ops_.relative_residual(lv.j, lv.w));
    else
      residual_ = std::numeric_limits<double>::quiet_NaN();
  }

  void note_residual(double r) { residual_ = r > residual_ ? r : residual_; }

  // sum += r: stage times and counts added, the largest residual kept.
  static void add_report(MotionReport &sum, const MotionReport &r) {
    sum.transfer_ms += r.transfer_ms, sum.pyramid_ms += r.pyramid_ms;
    sum.gradients_ms += r.gradients_ms, sum.warp_ms += r.warp_ms, sum.tensor_ms += r.tensor_ms;
    sum.gaussian_ms += r.gaussian_ms, sum.solver_ms += r.solver_ms;
    sum.solver_sweeps += r.solver_sweeps, sum.solver_cycles += r.solver_cycles;
    sum.solver_switches += r.solver_switches, sum.solver_nonfinite += r.solver_nonfinite;
    sum.solver_residual = r.solver_residual > sum.solver_residual ? r.solver_residual
                                                                  : sum.solver_residual;
  }

  void reset_counters() {
    ops_.reset_timers();
    sweeps_ = cycles_ = switches_ = nonfinite_ = 0;
    residual_ = 0;
  }

  void finish(MotionReport &report, std::chrono::steady_clock::time_point start) {
    ops_.synchronize();
    report.transfer_ms = ops_.elapsed(Stage::Transfer);
    report.pyramid_ms = ops_.elapsed(Stage::Pyramid);
    report.gradients_ms = ops_.elapsed(Stage::Gradients);
    report.warp_ms = ops_.elapsed(Stage::Warp);
    report.tensor_ms = ops_.elapsed(Stage::Tensor);
    report.gaussian_ms = ops_.elapsed(Stage::Gaussian);
    report.solver_ms = ops_.elapsed(Stage::Solver);
    report.total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    report.solver_sweeps = sweeps_;
    report.solver_cycles = cycles_;
    report.solver_residual = residual_;
    report.solver_switches = switches_;
    report.solver_nonfinite = nonfinite_;
    report.solver = options_.solver;
    report.backend = ops_.backend();
  }

  Ops ops_;
  MotionOptions options_;
  int colours_ = sor_colours(options_.gamma);
  std::vector<Level> levels_;
  std::array<Frame, 2> frames_; // the pair in hand; a sequence alternates them
  std::int64_t sweeps_ = 0, cycles_ = 0; // the call's solver passes and multigrid cycles
  std::int64_t switches_ = 0, nonfinite_ = 0; // multigrid solves switched to CG; stopped at NaN
  double residual_ = 0;                  // the call's largest relative residual after a solve
};

} // namespace mri::detail::motion
