#pragma once
// The one flow of mri::reconstruct, the same on both backends (lib/recon/recon_cpu.cpp,
// cuda/recon/recon_cuda.cu); only the operators' implementations differ:
//   1. setup: the Q cache's key and whether its entry exists (Toeplitz with a cache directory),
//      then Steps::prepare (the GPU: the memory check before anything is allocated, the maps up)
//   2. F^H D: Steps::rhs, F^H (w .* D), or sum_c conj(S_c) .* F^H (w .* D_c) with maps (SENSE)
//   3. the normal operator: Steps::make_direct (F then F^H per application), or the Toeplitz
//      form from Q (Steps::compute_q) or from its spectrum in the cache (Steps::load_spectrum)
//   4. CG on the normal operator Steps::with_normal hands over (+ lambda R^H R; with SENSE the
//      maps around the one-coil operator), then the image to the host and the solver's outcome.
// Each phase's wall time goes to its report field, less what the Steps themselves put into other
// fields meanwhile (a phase's transfers, FFT plans): every second is counted once, in the field
// that says what it was, on both backends.
//
// Steps (one reconstruction's state; `report` is the driver's, which Steps may add to):
//   using Vec;                                        the CG's vectors
//   void prepare(bool q_cached);
//   Vec rhs();
//   void make_direct();
//   void compute_q();
//   void load_spectrum(std::span<const float>);       a cached spectrum -> the Toeplitz operator
//   std::vector<float> spectrum() const;              what the cache stores
//   template <class F> ReconResult with_normal(const Vec &like, F &&f);  f(the CG's operator)
//   void synchronize() const;                         the solver's work done (GPU: its stream)
//   Image to_host(const Vec &) const;                 (the CPU: the image itself, and moved out of a Vec &&)
// and optionally
//   const CoilSensitivities *maps() const;            the maps of a normal operator that is Q's SENSE
//                                                     normal (+ l2) alone (null: one coil without maps):
//                                                     its L is cached beside Q (mri/toeplitz_cache.hpp).
//                                                     Steps whose normal holds more (a field map) leave it out.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <span>
#include <utility>

#include "mri/coils.hpp"
#include "mri/conjugate_gradient.hpp"
#include "mri/proximal_solvers.hpp"
#include "mri/reconstruct.hpp"
#include "mri/toeplitz_cache.hpp"
#include "recon_report.hpp"

namespace mri::detail {

// The report's time fields, summed: what a phase's own accounting subtracts.
inline double counted_seconds(const ReconReport &r) {
  return r.setup_seconds + r.coil_seconds + r.transfer_seconds + r.fhd_seconds + r.q_seconds + r.fft_setup_seconds +
         r.cg_seconds;
}

// f(), its wall time added to report.*field less what f added to the report's time fields.
template <class F> decltype(auto) in_phase(ReconReport &report, double ReconReport::*field, F &&f) {
  struct Account {
    ReconReport &report;
    double ReconReport::*field;
    double before = counted_seconds(report);
    ReconClock::time_point t0 = ReconClock::now();
    ~Account() {
      const double wall = std::chrono::duration<double>(ReconClock::now() - t0).count();
      report.*field += wall - (counted_seconds(report) - before);
    }
  } account{report, field};
  return f();
}

// ReconPhase's estimate of computing Q, made once F^H D is measured: on the CPU Q runs the same
// sums as F^H D (the exact separable sums, or the NUFFT's gridding and FFTs) over grid.doubled()
// for one coil instead of the grid for each coil. None on the GPU, where Q has kernels of its own
// (the Dirichlet spectrum on the tensor cores) whose rate F^H D does not predict.
inline double expected_q_seconds(const ReconReport &report, const Grid &grid) {
  if (report.backend != Backend::Cpu) return NAN;
  return report.fhd_seconds * static_cast<double>(grid.doubled().voxels()) /
         (static_cast<double>(grid.voxels()) * static_cast<double>(report.coils));
}

// 0.5 sum_c sum_m w_m |y_cm|^2: the data term's constant, so that the proximal solver reports
// the whole objective.
double weighted_data_energy(const KSpaceData &data);

// The proximal solver's outcome into the report.
template <class Solver> void record_proximal(ReconReport &report, const Solver &solver) {
  report.solver = to_string(solver.algorithm());
  report.iterations = solver.iterations();
  report.status = solver.info();
  report.residuals = solver.change_history();
  report.objective = solver.objective_history();
  report.step = solver.step();
  report.lipschitz = solver.lipschitz();
  report.rejected_steps = solver.rejected_steps();
  report.step_raises = solver.step_raises();
}

// Steps whose normal operator is Q's SENSE normal (+ l2) alone: they give its maps (see the top).
template <class Steps> concept StepsWithMaps = requires(const Steps &s) { s.maps(); };

// L beside Q (mri/toeplitz_cache.hpp): the entry of this normal operator and solver, if it holds
// one (report.lipschitz_cached; an unreadable entry is ignored: the solver estimates L again).
struct LipschitzEntryPath {
  ToeplitzCacheKey key;
  std::filesystem::path file;
};
template <class Solver>
std::optional<LipschitzEntryPath> lipschitz_from_cache(Solver &solver, const ToeplitzCacheKey *q_key,
                                                       const CoilSensitivities *maps, const ReconOptions &o,
                                                       ReconReport &report) {
  if (!q_key) return std::nullopt;
  const std::span<const cfloat> values = maps ? std::span<const cfloat>(maps->values()) : std::span<const cfloat>{};
  LipschitzEntryPath entry;
  entry.key = lipschitz_cache_key(*q_key, values, o.solver.regularizer, o.solver.lambda, report.backend,
                                  solver.power_iterations());
  entry.file = lipschitz_cache_file(o.q_cache_dir, entry.key);
  if (std::filesystem::exists(entry.file)) try {
      solver.set_lipschitz(load_lipschitz(entry.file, entry.key));
      report.lipschitz_cached = true;
    } catch (const IoError &) {
    }
  return entry;
}
// The solve's own estimate of L stored for the next (a failure to store is said in
// q_cache_message; the image stands).
template <class Solver>
void store_lipschitz(const std::optional<LipschitzEntryPath> &entry, const Solver &solver, ReconReport &report) {
  if (!entry || report.lipschitz_cached || !(solver.initial_lipschitz() > 0)) return;
  try {
    save_lipschitz(entry->file, entry->key, solver.initial_lipschitz());
  } catch (const IoError &e) {
    report.q_cache_message += (report.q_cache_message.empty() ? "" : "; ") + std::string(e.what());
  }
}

// The solver phase with sparse terms: the data scaled (ReconOptions::solver.scaling), the
// proximal solver on the normal operator CG would have had (its L from the cache beside Q when
// q_key is given and an entry exists), the image scaled back.
template <class Steps, class Vec>
ReconResult drive_proximal(Steps &steps, const Vec &rhs, const KSpaceData &data, const Grid &grid,
                           const ReconOptions &o, ReconReport &report, ReconClock::time_point t_start,
                           const ToeplitzCacheKey *q_key) {
  using Ops = VectorOps<Vec>;
  const double scale = o.solver.scaling == DataScaling::Bart ? bart_data_scale(steps.to_host(rhs).values()) : 1.0;
  report.data_scale = scale;
  Vec b = Ops::like(rhs), zero = Ops::like(rhs);
  Ops::copy(rhs, b);
  Ops::zero(zero);
  Ops::xpay(zero, scale, b); // b = scale rhs
  const double energy = scale * scale * weighted_data_energy(data);
  return steps.with_normal(b, [&](auto normal) {
    ProximalSolver<decltype(normal), Vec> solver(std::move(normal), grid, o.solver.terms, o.solver.proximal);
    solver.set_max_iterations(o.solver.iterations).set_tolerance(o.solver.tolerance);
    const CoilSensitivities *maps = nullptr;
    if constexpr (StepsWithMaps<Steps>) maps = steps.maps();
    const std::optional<LipschitzEntryPath> cached_l = lipschitz_from_cache(solver, q_key, maps, o, report);
    const auto unscaled = [&](const Vec &x) {
      Image image = steps.to_host(x);
      for (cfloat &v : image.values()) v /= static_cast<float>(scale);
      return image;
    };
    if (o.on_iteration)
      solver.set_callback([&](int k, const Vec &x, double change) { o.on_iteration(k, unscaled(x), change); });
    report.solver = to_string(solver.algorithm());
    Vec x = announced_phase(o, "CG", NAN, [&] {
      return in_phase(report, &ReconReport::cg_seconds, [&] {
        Vec solution = solver.solve(b, energy);
        steps.synchronize();
        return solution;
      });
    });
    Image image = in_phase(report, &ReconReport::transfer_seconds, [&] { return unscaled(x); });
    record_proximal(report, solver);
    store_lipschitz(cached_l, solver, report);
    report.total_seconds = std::chrono::duration<double>(ReconClock::now() - t_start).count();
    return ReconResult{std::move(image), std::move(report)};
  });
}

template <class Steps>
ReconResult drive_reconstruction(Steps &steps, const KSpaceData &data, const Grid &grid, const ReconOptions &o,
                                 ReconReport &report, ReconClock::time_point t_start) {
  using Vec = typename Steps::Vec;
  report.normal = o.solver.normal;
  report.method = o.method;
  const bool use_cache = o.solver.normal == Normal::Toeplitz && !o.q_cache_dir.empty();
  ToeplitzCacheKey key;
  bool cached = false;
  in_phase(report, &ReconReport::setup_seconds, [&] {
    if (use_cache) {
      key = toeplitz_cache_key(data.trajectory(), data.weights(), grid, o.precision,
                               o.method == Method::Nufft ? o.nufft.tolerance : 0);
      report.q_cache_file = toeplitz_cache_file(o.q_cache_dir, key);
      cached = std::filesystem::exists(report.q_cache_file);
    }
    steps.prepare(cached);
  });
  const Vec rhs = announced_phase(o, "F^H D", NAN, [&] {
    return in_phase(report, &ReconReport::fhd_seconds, [&] { return steps.rhs(); });
  });
  const auto compute_q = [&] {
    announced_phase(o, "Q", expected_q_seconds(report, grid), [&] {
      in_phase(report, &ReconReport::q_seconds, [&] { steps.compute_q(); });
    });
  };
  if (o.solver.normal == Normal::Direct)
    in_phase(report, &ReconReport::setup_seconds, [&] { steps.make_direct(); });
  else if (use_cache)
    toeplitz_through_cache(
        report, key, grid, cached,
        [&](std::span<const float> spectrum) {
          in_phase(report, &ReconReport::fft_setup_seconds, [&] { steps.load_spectrum(spectrum); });
        },
        compute_q, [&] { return steps.spectrum(); });
  else
    compute_q();

  if (!o.solver.terms.empty()) {
    const bool cache_lipschitz = StepsWithMaps<Steps> && use_cache;
    return drive_proximal(steps, rhs, data, grid, o, report, t_start, cache_lipschitz ? &key : nullptr);
  }
  return steps.with_normal(rhs, [&](auto normal) {
    ConjugateGradient<decltype(normal), Vec> cg(std::move(normal));
    cg.set_max_iterations(o.solver.iterations).set_tolerance(o.solver.tolerance);
    if (o.on_iteration)
      cg.set_callback([&](int k, const Vec &x, double residual) { o.on_iteration(k, steps.to_host(x), residual); });
    Vec x = announced_phase(o, "CG", NAN, [&] {
      return in_phase(report, &ReconReport::cg_seconds, [&] {
        Vec solution = cg.solve(rhs);
        steps.synchronize();
        return solution;
      });
    });
    Image image = in_phase(report, &ReconReport::transfer_seconds, [&] { return steps.to_host(std::move(x)); });
    return finish_recon(std::move(image), std::move(report), cg, t_start);
  });
}

} // namespace mri::detail
