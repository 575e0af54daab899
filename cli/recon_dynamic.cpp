// `mri recon --bins N | --frames-spokes K [--motion-correct]` (recon_dynamic.hpp).
#include "recon_dynamic.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
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

// Each state registered to the reference (state 0, end-expiration): the field u with
// x_s(v) = x_ref(v + u(v)) that MCIR's warps take (mri/mcir.hpp), estimated with the state fixed and
// the reference moving; the reference's own field absent.
std::vector<DisplacementField> register_states(const std::vector<Image> &states, const Grid &grid, Backend backend,
                                               nlohmann::json &report) {
  MotionOptions options;
  options.backend = backend == Backend::Cuda ? Backend::Cuda : Backend::Cpu;
  MotionEstimator estimator(grid, options);
  const RealVolume reference = normalised_magnitude(states.front());
  std::vector<DisplacementField> fields(states.size());
  report = nlohmann::json::array();
  for (std::size_t s = 1; s < states.size(); ++s) {
    fields[s] = estimator.estimate(normalised_magnitude(states[s]), reference);
    const MotionReport &r = estimator.report();
    report.push_back(nlohmann::json{{"state", s},
                                    {"total_ms", r.total_ms},
                                    {"solver_cycles", r.solver_cycles},
                                    {"solver_residual", r.solver_residual},
                                    {"mean_jacobian", jacobian_stats(fields[s]).mean_det}});
  }
  return fields;
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
                                                     "(NIfTI displacement vectors, voxels)");
}

void check_dynamic(const DynamicArgs &a) {
  if (a.bins > 0 && a.frames_spokes > 0) throw UsageError("--bins and --frames-spokes: give one of them");
  if (a.motion_correct && a.bins == 0) throw UsageError("--motion-correct needs --bins (respiratory states)");
  if (!a.motion_fields.empty() && !a.motion_correct) throw UsageError("--motion-fields needs --motion-correct");
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
  FramesResult states = reconstruct_frames(frames, in.grid, options);
  report["frames"] = to_json(states.report);
  std::vector<Image> images;
  if (a.motion_correct) {
    nlohmann::json motion;
    const std::vector<DisplacementField> fields = register_states(states.frames, in.grid, states.report.backend, motion);
    report["motion"] = motion;
    if (!a.motion_fields.empty())
      write_nifti_displacements(a.motion_fields, std::vector<DisplacementField>(fields.begin() + 1, fields.end()),
                                output_options.voxel_mm, DisplacementUnits::Voxels,
                                nifti_identity_affine(in.grid, output_options.voxel_mm));
    ReconOptions mcir = options;
    if (!mcir.solver.terms.empty()) {
      mcir.solver.terms.clear(); // MCIR solves the l2 problem by CG in this build (mri/mcir.hpp)
      if (!quiet) say("recon", "--motion-correct: the reference state by CG (the sparse terms applied to the states only)");
    }
    MotionCorrectedResult r = reconstruct_motion_corrected(frames, in.grid, fields, mcir);
    report["mcir"] = to_json(r.report);
    report["mcir"]["states"] = r.motion.states;
    report["mcir"]["note"] = r.motion.note;
    images.push_back(std::move(r.image));
  } else {
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
