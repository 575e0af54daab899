// `mri recon --bins N | --frames-spokes K [--motion-correct]` (recon_dynamic.hpp).
#include "recon_dynamic.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "mri/dynamic.hpp"
#include "mri/frames.hpp"
#include "mri/io/nifti.hpp"
#include "mri/mcir.hpp"
#include "mri/motion.hpp"
#include "report.hpp"

namespace mri::cli {
namespace {

bool stamped(const std::vector<IsmrmrdReadout> &readouts) {
  return std::any_of(readouts.begin(), readouts.end(), [&](const IsmrmrdReadout &r) {
    return r.acquisition_time_stamp != readouts.front().acquisition_time_stamp;
  });
}

// Samples per readout and the readouts' times: from the ISMRMRD acquisitions (sizes and time
// stamps), or from --readout-samples and --tr.
ReadoutLayout readout_layout(const DynamicArgs &a, const ReconProblem &p) {
  ReadoutLayout layout;
  if (!p.readouts.empty()) {
    const std::size_t s = p.readouts.front().samples;
    for (std::size_t r = 0; r < p.readouts.size(); ++r)
      if (p.readouts[r].samples != s)
        throw UsageError("--bins/--frames-spokes: acquisition " + std::to_string(r) + " has " +
                         std::to_string(p.readouts[r].samples) + " samples, the first " + std::to_string(s) +
                         ": frames are sorted by whole readouts of one length");
    if (a.readout_samples > 0 && static_cast<std::size_t>(a.readout_samples) != s)
      throw UsageError("--readout-samples " + std::to_string(a.readout_samples) + " contradicts the file's " +
                       std::to_string(s) + " samples per acquisition");
    layout.samples_per_readout = static_cast<int>(s);
  } else {
    if (a.readout_samples <= 0)
      throw UsageError("--bins/--frames-spokes with BART inputs need --readout-samples (samples per spoke)");
    layout.samples_per_readout = a.readout_samples;
  }
  if (a.tr > 0) {
    layout.readout_seconds = a.tr;
  } else if (p.readouts.size() > 1 && stamped(p.readouts)) {
    std::vector<std::uint32_t> stamps;
    for (const IsmrmrdReadout &r : p.readouts) stamps.push_back(r.acquisition_time_stamp);
    layout = layout_from_time_stamps(layout.samples_per_readout, stamps); // 2.5 ms ticks
  } else {
    throw UsageError("--bins/--frames-spokes: the input has no acquisition time stamps; give --tr (seconds between readouts)");
  }
  return layout;
}

std::vector<double> header_signal(const ReconProblem &p) {
  std::vector<double> s; // amplitude binning is scale-free: the stamps as they are
  for (const IsmrmrdReadout &r : p.readouts) s.push_back(r.physiology_time_stamp[0]);
  return s;
}

nlohmann::json to_json(const FrameBinning &b) {
  return {{"method", b.method == BinningMethod::Time ? "time" : "amplitude"},
          {"source", b.source},
          {"bin_edges", b.bin_edges},
          {"readouts_per_frame", b.readouts_per_frame},
          {"unassigned_readouts", b.unassigned.size()},
          {"flipped", b.flipped},
          {"note", b.note},
          {"signal", b.signal}};
}

// The fields of --motion-fields-in (as --motion-fields writes them: states 1 .. N-1, each the field
// u of x_s(v) = x_ref(v + u(v)); any of write_nifti_displacements' units), checked against the
// reconstruction: its grid, one field per state after the reference, every value finite. State 0's
// field absent, as reconstruct_motion_chain takes them.
std::vector<DisplacementField> read_motion_fields(const std::string &path, const Grid &grid, int bins) {
  NiftiDisplacements file;
  try {
    file = read_nifti_displacements(path);
  } catch (const IoError &e) {
    throw IoError(std::string("--motion-fields-in ") + e.what());
  }
  const auto size = [](const Grid &g) {
    return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
  };
  const std::size_t expected = static_cast<std::size_t>(bins) - 1;
  if (file.fields.size() != expected)
    throw InvalidArgument("--motion-fields-in " + path + ": " + std::to_string(file.fields.size()) +
                          " fields; --bins " + std::to_string(bins) + " needs " + std::to_string(expected) +
                          " (states 1 to " + std::to_string(bins - 1) + ", each to state 0)");
  const Grid &g = file.fields.front().grid();
  if (g.extents() != grid.extents())
    throw InvalidArgument("--motion-fields-in " + path + ": grid " + size(g) + " differs from the reconstruction grid " +
                          size(grid));
  std::vector<DisplacementField> fields(1); // state 0: absent
  for (std::size_t f = 0; f < file.fields.size(); ++f) {
    const DisplacementField &d = file.fields[f];
    const std::pair<const char *, const RealVolume *> components[3] = {{"u", &d.u}, {"v", &d.v}, {"w", &d.w}};
    for (const auto &[name, c] : components)
      for (std::size_t i = 0; i < c->size(); ++i)
        if (!std::isfinite((*c)[i]))
          throw InvalidArgument("--motion-fields-in " + path + ": field " + std::to_string(f) + " (state " +
                                std::to_string(f + 1) + ") " + name + "[" + std::to_string(i) + "] = " +
                                std::to_string((*c)[i]) + ": fields must be finite");
    DisplacementField &on_grid = fields.emplace_back(grid);
    on_grid.u.values() = d.u.values();
    on_grid.v.values() = d.v.values();
    on_grid.w.values() = d.w.values();
  }
  return fields;
}

nlohmann::json motion_json(const MotionChainRound &round) {
  nlohmann::json states = nlohmann::json::array();
  for (std::size_t s = 0; s < round.motion.size(); ++s)
    states.push_back(nlohmann::json{{"state", s + 1},
                                    {"total_ms", round.motion[s].total_ms},
                                    {"solver_cycles", round.motion[s].solver_cycles},
                                    {"solver_residual", round.motion[s].solver_residual}});
  return states;
}

nlohmann::json rounds_json(const MotionChainResult &r) {
  nlohmann::json rounds = nlohmann::json::array();
  for (std::size_t i = 0; i < r.rounds.size(); ++i) {
    const MotionChainRound &round = r.rounds[i];
    rounds.push_back(nlohmann::json{{"round", i + 1},
                                    {"fields_given", round.fields_given},
                                    {"mean_field_change", round.mean_field_change},
                                    {"max_field_change", round.max_field_change},
                                    {"mcir_residual", round.mcir_residual},
                                    {"data_residual", round.data_residual},
                                    {"mcir_iterations", round.mcir_iterations},
                                    {"refine_seconds", round.refine_seconds},
                                    {"motion_seconds", round.motion_seconds},
                                    {"mcir_seconds", round.mcir_seconds},
                                    {"motion", motion_json(round)}});
  }
  return rounds;
}

// MCIR's solve in one line: the solver, its iterations and, with sparse terms, the objective's
// first and last values (the whole history is in the report's "mcir").
std::string mcir_summary(const ReconReport &r) {
  std::string s = "MCIR by " + r.solver + ", " + std::to_string(r.iterations) + " iterations";
  if (r.objective.size() >= 2) {
    char text[96];
    std::snprintf(text, sizeof text, ", objective %.4g -> %.4g", r.objective.front(), r.objective.back());
    s += text;
  }
  return s + " (" + to_string(r.backend) + ")";
}

// --motion-correct: the chain (mri/mcir.hpp: the coil maps once, the states, their motion (or the
// fields read), MCIR, --motion-rounds alternations). Returns the reference state's image.
Image motion_corrected(const DynamicArgs &a, const std::vector<KSpaceData> &frames, const ReconInputs &in,
                       const ReconOptions &options, const OutputOptions &output_options, bool quiet,
                       nlohmann::json &report) {
  MotionChainOptions chain;
  if (!a.motion_fields_in.empty()) chain.fields = read_motion_fields(a.motion_fields_in, in.grid, a.bins);
  chain.rounds = a.motion_rounds;
  chain.refine_iterations = a.motion_refine;
  MotionChainResult r = reconstruct_motion_chain(frames, in.grid, options, chain);
  if (!quiet && !r.note.empty()) say("recon", "--motion-correct: " + r.note);
  if (!quiet) say("recon", "--motion-correct: " + mcir_summary(r.mcir.report));
  report["coils"] = {{"acquired_coils", r.coils.acquired_coils}, {"coils", r.coils.coils},
                     {"coil_energy_kept", r.coils.coil_energy_kept}, {"maps", r.coils.maps},
                     {"coil_seconds", r.coils.coil_seconds},
                     {"note", "one coil step for the states and MCIR (the frames' and MCIR's reports say \"given\")"}};
  report["frames"] = cli::to_json(r.states.report);
  nlohmann::json motion = nlohmann::json::array();
  for (const nlohmann::json &state : motion_json(r.rounds.front())) motion.push_back(state);
  for (std::size_t s = 1; s < r.fields.size() && r.rounds.size() == 1 && !r.rounds.front().fields_given; ++s)
    motion[s - 1]["mean_jacobian"] = jacobian_stats(r.fields[s]).mean_det;
  report["motion"] = motion;
  report["motion_rounds"] = rounds_json(r);
  report["motion_best_round"] = r.best_round;
  if (!a.motion_fields.empty())
    write_nifti_displacements(a.motion_fields, std::vector<DisplacementField>(r.fields.begin() + 1, r.fields.end()),
                              output_options.voxel_mm, DisplacementUnits::Voxels,
                              nifti_identity_affine(in.grid, output_options.voxel_mm));
  report["mcir"] = cli::to_json(r.mcir.report);
  report["mcir"]["states"] = r.mcir.motion.states;
  report["mcir"]["note"] = r.mcir.motion.note;
  report["mcir"]["chain_note"] = r.note;
  return std::move(r.mcir.image);
}

std::vector<Image> cropped(std::vector<Image> images, const ReconInputs &in) {
  if (in.output != in.grid)
    for (Image &image : images) image = centre_crop(image, in.output);
  return images;
}

} // namespace

void add_dynamic_options(CLI::App &cmd, DynamicArgs &a) {
  cmd.add_option("--bins", a.bins, "respiratory states: sort the readouts into N amplitude bins of a gating signal "
                                   "(bin 0 end-expiration) and reconstruct them jointly (4D output)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--gating", a.gating, "--bins' signal: self (from the data's k-space centre, XD-GRASP), header "
                                       "(ISMRMRD physiology_time_stamp[0]) or a file (BART array or one value per line)")
      ->capture_default_str();
  cmd.add_flag("--gating-fallback", a.time_fallback, "self-gating without a breathing peak: time bins instead of failing");
  cmd.add_option("--frames-spokes", a.frames_spokes, "time frames of K consecutive readouts (spokes), reconstructed jointly")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--frames-step", a.frames_step, "time frames start every S readouts (a sliding window; 0: disjoint)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--tr", a.tr, "seconds between readouts (default: the ISMRMRD acquisition time stamps, 2.5 ms ticks)")
      ->check(CLI::PositiveNumber);
  cmd.add_option("--readout-samples", a.readout_samples, "samples per readout (BART inputs; ISMRMRD: each acquisition's)")
      ->check(CLI::PositiveNumber);
  cmd.add_flag("--motion-correct", a.motion_correct, "with --bins: register the states to end-expiration and "
                                                    "reconstruct that state from all the data (MCIR); writes one image");
  cmd.add_option("--motion-fields", a.motion_fields, "with --motion-correct: write the states' displacement fields "
                                                     "(NIfTI displacement vectors, voxels; the last round's)");
  cmd.add_option("--motion-fields-in", a.motion_fields_in,
                 "with --motion-correct: read the fields (as --motion-fields writes them: states 1..N-1 to state 0) "
                 "instead of registering the states");
  cmd.add_option("--motion-rounds", a.motion_rounds,
                 "with --motion-correct: rounds of MCIR; each after the first warps the MCIR image to every state, "
                 "refines it on the state's data, re-registers and reruns MCIR")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd.add_option("--motion-refine", a.motion_refine,
                 "with --motion-rounds > 1: CG iterations refining each warped state on its data (0: the warp alone)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

void check_dynamic(const DynamicArgs &a) {
  if (a.bins > 0 && a.frames_spokes > 0) throw UsageError("--bins and --frames-spokes: give one of them");
  if (a.motion_correct && a.bins == 0) throw UsageError("--motion-correct needs --bins (respiratory states)");
  if (!a.motion_fields.empty() && !a.motion_correct) throw UsageError("--motion-fields needs --motion-correct");
  if (!a.motion_fields_in.empty() && !a.motion_correct) throw UsageError("--motion-fields-in needs --motion-correct");
  if (a.motion_rounds != 1 && !a.motion_correct) throw UsageError("--motion-rounds needs --motion-correct");
  if (a.motion_refine != 3 && !a.motion_correct) throw UsageError("--motion-refine needs --motion-correct");
  if (a.frames_step > 0 && a.frames_spokes == 0) throw UsageError("--frames-step needs --frames-spokes");
}

int run_dynamic(const DynamicArgs &a, ReconInputs &in, const ReconOptions &options,
                const std::vector<std::string> &outputs, const OutputOptions &output_options,
                const std::string &report_path, bool quiet) {
  if (in.problems.size() != 1)
    throw UsageError("--bins/--frames-spokes sort one continuous acquisition; the input has " +
                     std::to_string(in.problems.size()) + " items (slices, repetitions ...)");
  read_problems(in, [](std::size_t) {});
  const KSpaceData data = take_data(in, 0);
  const ReconProblem &problem = in.problems.front();
  const ReadoutLayout layout = readout_layout(a, problem);
  FrameRequest request;
  request.bins = a.bins;
  request.gating = a.gating;
  request.frames_readouts = a.frames_spokes;
  request.frames_step = a.frames_step;
  request.fall_back_to_time = a.time_fallback;
  const FrameBinning binning = plan_frames(data, layout, request, header_signal(problem));
  if (!quiet) say("recon", binning.note);
  const std::vector<KSpaceData> frames = split_frames(data, layout, binning);
  nlohmann::json report = {{"source", in.source}, {"binning", to_json(binning)}};
  std::vector<Image> images;
  if (a.motion_correct) {
    images.push_back(motion_corrected(a, frames, in, options, output_options, quiet, report));
  } else {
    FramesResult states = reconstruct_frames(frames, in.grid, options);
    report["frames"] = to_json(states.report);
    images = std::move(states.frames);
  }
  images = cropped(std::move(images), in);
  OutputOptions out = output_options;
  if (!out.geometry.empty()) out.geometry.assign(images.size(), out.geometry.front()); // one place, a series
  for (const std::string &path : outputs) write_images(path, images, out);
  if (!report_path.empty()) write_json(report_path, report);
  return kOk;
}

} // namespace mri::cli
