#pragma once
// The flow of mri::reconstruct_frames (mri/dynamic.hpp) over the steps of one reconstruction per
// frame (the Steps of recon_driver.hpp, one object per frame's data, in a deque: Steps hold
// plans and references and need not move): each frame's F^H D and its
// own normal operator (Toeplitz from its own Q, or direct), then one solver on the stack of
// frames (FrameStack) with the block-diagonal normal operator (FrameNormal): CG without sparse
// terms (the frames then decouple: it equals one CG per frame stopped jointly), else the proximal
// solver with the frame terms (FrameTermOps: spatial terms frame by frame, TV along the frames,
// locally low rank). The data scale is one for the whole stack, from all frames' adjoint images.
// No Q cache: a frame's trajectory is a subset that the next acquisition sorts differently.
#include <chrono>
#include <deque>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "mri/conjugate_gradient.hpp"
#include "mri/dynamic.hpp"
#include "mri/frame_stack.hpp"
#include "mri/frame_terms.hpp"
#include "mri/proximal_solvers.hpp"
#include "recon_driver.hpp"

namespace mri::detail {

// f(FrameNormal of steps[from..]'s normals), each frame's operator alive while f runs: frame k's
// with_normal hands its operator to a callback that recurses to frame k + 1.
template <class Steps, class Vec, class F>
ReconResult with_frame_normals(std::deque<Steps> &steps, const FrameStack<Vec> &like, std::size_t from,
                               std::vector<std::function<void(const Vec &, Vec &)>> &applies, F &f) {
  if (from == steps.size()) return f(FrameNormal<Vec>(applies));
  return steps[from].with_normal(like[from], [&](auto normal) {
    applies.emplace_back([&normal](const Vec &x, Vec &out) { normal(x, out); });
    return with_frame_normals(steps, like, from + 1, applies, f);
  });
}

template <class Steps>
FramesResult drive_frames(std::deque<Steps> &steps, const std::vector<KSpaceData> &frames, const Grid &grid,
                          const ReconOptions &o, ReconReport &report, ReconClock::time_point t_start) {
  using Vec = typename Steps::Vec;
  using Stack = FrameStack<Vec>;
  report.normal = o.solver.normal;
  report.method = o.method;
  in_phase(report, &ReconReport::setup_seconds, [&] {
    for (Steps &s : steps) s.prepare(false);
  });
  Stack rhs = announced_phase(o, "F^H D", NAN, [&] {
    return in_phase(report, &ReconReport::fhd_seconds, [&] {
      Stack r;
      for (Steps &s : steps) r.frames.push_back(s.rhs());
      return r;
    });
  });
  if (o.solver.normal == Normal::Direct)
    in_phase(report, &ReconReport::setup_seconds, [&] {
      for (Steps &s : steps) s.make_direct();
    });
  else
    announced_phase(o, "Q", NAN, [&] {
      in_phase(report, &ReconReport::q_seconds, [&] {
        for (Steps &s : steps) s.compute_q();
      });
    });

  // The data scale from all frames' adjoint images, as one image (DataScaling::Bart).
  double scale = 1;
  if (!o.solver.terms.empty() && o.solver.scaling == DataScaling::Bart) {
    std::vector<cfloat> all;
    for (std::size_t f = 0; f < steps.size(); ++f) {
      const Image frame = steps[f].to_host(rhs[f]);
      all.insert(all.end(), frame.values().begin(), frame.values().end());
    }
    scale = bart_data_scale(all);
  }
  report.data_scale = scale;
  double energy = 0;
  for (const KSpaceData &d : frames) energy += weighted_data_energy(d);
  energy *= scale * scale;
  if (scale != 1) {
    Stack zero = VectorOps<Stack>::like(rhs);
    VectorOps<Stack>::zero(zero);
    VectorOps<Stack>::xpay(zero, scale, rhs); // rhs = scale rhs
  }

  std::vector<Image> images;
  std::vector<std::function<void(const Vec &, Vec &)>> applies;
  auto solve = [&](FrameNormal<Vec> normal) {
    Stack x = announced_phase(o, "CG", NAN, [&] {
      return in_phase(report, &ReconReport::cg_seconds, [&] {
        Stack solution;
        if (o.solver.terms.empty()) {
          ConjugateGradient<FrameNormal<Vec>, Stack> cg(std::move(normal));
          cg.set_max_iterations(o.solver.iterations).set_tolerance(o.solver.tolerance);
          solution = cg.solve(rhs);
          record_cg(report, cg);
        } else {
          ProximalSolver<FrameNormal<Vec>, Stack, VectorOps<Stack>, SparseOps<Vec>, FrameTermOps<Vec>> solver(
              std::move(normal), grid, o.solver.terms, o.solver.proximal);
          solver.set_max_iterations(o.solver.iterations).set_tolerance(o.solver.tolerance);
          solution = solver.solve(rhs, energy);
          record_proximal(report, solver);
        }
        for (Steps &s : steps) s.synchronize();
        return solution;
      });
    });
    in_phase(report, &ReconReport::transfer_seconds, [&] {
      for (std::size_t f = 0; f < steps.size(); ++f) {
        Image image = steps[f].to_host(std::move(x[f]));
        for (cfloat &v : image.values()) v /= static_cast<float>(scale);
        images.push_back(std::move(image));
      }
    });
    return ReconResult{};
  };
  with_frame_normals(steps, rhs, 0, applies, solve);
  report.total_seconds = std::chrono::duration<double>(ReconClock::now() - t_start).count();
  return FramesResult{std::move(images), std::move(report)};
}

} // namespace mri::detail
