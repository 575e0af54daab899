// reconstruct_motion_chain (mri/mcir.hpp): the coil step once for the states' joint
// reconstruction and MCIR, the states registered to state 0, MCIR, and the alternation of
// motion estimation and MCIR (MotionChainOptions::rounds).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "mcir_cache.hpp"
#include "mri/dynamic.hpp"
#include "mri/error.hpp"
#include "mri/mcir.hpp"
#include "mri/motion.hpp"
#include "mri/sparse.hpp"
#include "mri_backend/recon_report.hpp"
#include "sense/recon_coils.hpp"

namespace mri {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool absent(const DisplacementField &f) { return f.u.size() == 0 && f.v.size() == 0 && f.w.size() == 0; }

void validate_chain(const std::vector<KSpaceData> &states, const Grid &grid, const MotionChainOptions &c) {
  if (!c.fields.empty()) detail::validate_motion_fields(states, grid, c.fields);
  if (c.rounds < 1) detail::invalid_argument("chain.rounds", c.rounds, "must be >= 1 (1: no alternation)");
  if (c.refine_iterations < 0) detail::invalid_argument("chain.refine_iterations", c.refine_iterations, "must be >= 0");
  if (c.fields.empty() && states.size() < 2)
    detail::invalid_argument("states.size()", states.size(), "needs a reference and at least one other state to register");
}

// The states' data inside [-n/2, n/2) as one acquisition, as reconstruct_frames prepares its coils.
KSpaceData joined_inside(const std::vector<KSpaceData> &states, const Grid &grid) {
  const KSpaceData all = join_frames(states);
  if (all.trajectory().check_range(grid) == 0) return all;
  return KSpaceData(all.trajectory().wrapped(grid), all.samples(), all.weights(), all.coils());
}

// Each moving state registered to `reference` (fixed = the state, moving = the reference: the
// field u with x_s(v) = x_ref(v + u(v)) that MCIR takes); state 0's field absent.
std::vector<DisplacementField> register_to(const std::vector<Image> &states, const Image &reference,
                                           MotionEstimator &estimator, std::vector<MotionReport> &reports) {
  std::vector<DisplacementField> fields(states.size());
  if (states.size() < 2) return fields;
  std::vector<RealVolume> fixed;
  fixed.reserve(states.size() - 1);
  for (std::size_t s = 1; s < states.size(); ++s) fixed.push_back(normalised_magnitude(states[s]));
  // The reference prepared (on the GPU uploaded, its pyramid built) once for every state.
  std::vector<DisplacementField> estimated = estimator.estimate_to_reference(fixed, normalised_magnitude(reference));
  for (std::size_t s = 1; s < states.size(); ++s) fields[s] = std::move(estimated[s - 1]);
  reports.insert(reports.end(), estimator.pair_reports().begin(), estimator.pair_reports().end());
  return fields;
}

// Mean and largest |u_new - u_old| over the moving states' voxels (an absent field is zero).
void field_change(const std::vector<DisplacementField> &old_fields, const std::vector<DisplacementField> &new_fields,
                  MotionChainRound &round) {
  double sum = 0, largest = 0;
  std::size_t count = 0;
  for (std::size_t s = 1; s < new_fields.size(); ++s) {
    const DisplacementField &a = new_fields[s];
    const DisplacementField *b = s < old_fields.size() && !absent(old_fields[s]) ? &old_fields[s] : nullptr;
    if (absent(a)) continue;
    for (std::size_t i = 0; i < a.u.size(); ++i) {
      const double du = a.u[i] - (b ? b->u[i] : 0.0f), dv = a.v[i] - (b ? b->v[i] : 0.0f),
                   dw = a.w[i] - (b ? b->w[i] : 0.0f);
      const double d = std::sqrt(du * du + dv * dv + dw * dw);
      sum += d;
      largest = std::max(largest, d);
      ++count;
    }
  }
  round.mean_field_change = count ? sum / static_cast<double>(count) : 0.0;
  round.max_field_change = largest;
}

// MCIR's options from the states': the spatial terms kept (MCIR solves one image: temporal terms
// and locally low rank, which act across the states, are dropped). Returns what was dropped, for
// the note.
std::string mcir_terms(ReconOptions &mcir) {
  std::vector<SparseTerm> kept;
  std::string dropped;
  for (const SparseTerm &t : mcir.solver.terms) {
    if (is_temporal(t) || t.penalty == SparsePenalty::LocallyLowRank) {
      if (!dropped.empty()) dropped += ' ';
      dropped += to_string(t);
    } else
      kept.push_back(t);
  }
  std::string note;
  if (!dropped.empty()) note = "MCIR without the states' terms across states (" + dropped + ")";
  mcir.solver.terms = std::move(kept);
  return note;
}

} // namespace

MotionChainResult reconstruct_motion_chain(const std::vector<KSpaceData> &states, const Grid &grid,
                                           const ReconOptions &options, const MotionChainOptions &chain) {
  validate_chain(states, grid, chain);
  MotionChainResult out;

  // The coil step once, from all states' data (what reconstruct_frames and
  // reconstruct_motion_corrected would each do): both then take these maps on the compressed data.
  const Backend coil_backend = detail::resolve_backend(options.backend, "reconstruct_motion_chain");
  const detail::ReconCoils coils = detail::announced_phase(options, "coil maps", NAN, [&] {
    return detail::prepare_coils(joined_inside(states, grid), grid, options, coil_backend, out.coils);
  });
  out.maps = coils.maps;
  out.compression = coils.compression;
  std::vector<KSpaceData> used;
  used.reserve(states.size());
  for (const KSpaceData &d : states) used.push_back(coils.compression ? coils.compression->apply(d) : d);
  ReconOptions given = options;
  given.coils.sensitivities = coils.maps;
  given.coils.virtual_coils = 0;

  out.states = reconstruct_frames(used, grid, given);

  // The estimator is made only where a registration runs (its pyramid asks for extents the given
  // fields' grids need not have).
  std::optional<MotionEstimator> estimator;
  const auto registrar = [&]() -> MotionEstimator & {
    if (!estimator) {
      MotionOptions motion = chain.motion;
      if (motion.backend == Backend::Auto) motion.backend = out.states.report.backend;
      estimator.emplace(grid, motion);
    }
    return *estimator;
  };

  ReconOptions mcir = given;
  out.note = mcir_terms(mcir);
  detail::McirCache cache; // each state's b_s and Q_s, made by round 1's MCIR, for every round
  std::vector<DisplacementField> fields;
  MotionCorrectedResult last;
  for (int r = 1; r <= chain.rounds; ++r) {
    MotionChainRound round;
    std::vector<DisplacementField> next;
    if (r == 1 && !chain.fields.empty()) {
      round.fields_given = true;
      next = chain.fields;
    } else if (r == 1) {
      const auto t = Clock::now();
      next = register_to(out.states.frames, out.states.frames.front(), registrar(), round.motion);
      round.motion_seconds = seconds_since(t);
    } else {
      // The last MCIR image warped to every state, refined on that state's data, registered to it.
      auto t = Clock::now();
      const Image &x = last.image;
      std::vector<Image> predicted(states.size(), x);
      for (std::size_t s = 1; s < states.size(); ++s) {
        if (absent(fields[s])) continue;
        ImageWarp(fields[s], chain.correction.warp).forward(x, predicted[s]);
        double residual = 0;
        if (chain.refine_iterations > 0)
          predicted[s] = detail::refine_state(cache, s, predicted[s], chain.refine_iterations, residual);
      }
      round.refine_seconds = seconds_since(t);
      t = Clock::now();
      next = register_to(predicted, x, registrar(), round.motion);
      round.motion_seconds = seconds_since(t);
    }
    field_change(fields, next, round);
    fields = std::move(next);
    const auto t = Clock::now();
    last = detail::reconstruct_motion_corrected_cached(used, grid, fields, mcir, chain.correction, &cache);
    round.mcir_seconds = seconds_since(t);
    round.mcir_iterations = last.report.iterations;
    round.mcir_residual = last.report.residuals.empty() ? 0.0 : last.report.residuals.back();
    round.data_residual = detail::mcir_data_residual(cache, fields, chain.correction.warp, last.image);
    // Keep the round that fits the data best; stop at the first that does not fit better.
    const bool better = r == 1 || round.data_residual < out.rounds[out.best_round - 1].data_residual;
    out.rounds.push_back(std::move(round));
    if (!better) {
      out.note += std::string(out.note.empty() ? "" : "; ") + "round " + std::to_string(r) +
                  " did not lower the data residual: round " + std::to_string(out.best_round) + " kept" +
                  (r < chain.rounds ? ", the rounds stopped" : "");
      break;
    }
    out.best_round = r;
    out.mcir = last;
    out.fields = fields;
  }
  return out;
}

} // namespace mri
