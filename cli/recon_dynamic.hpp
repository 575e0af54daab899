#pragma once
// `mri recon --bins N | --frames-spokes K [--motion-correct]`: one continuous acquisition sorted
// into respiratory states or time frames (mri/frames.hpp), the frames reconstructed jointly
// (mri/dynamic.hpp), written as a 4D series; with --motion-correct the states registered to the
// reference state (end-expiration, bin 0) by the CLG estimator and the reference state
// reconstructed from all the data (mri/mcir.hpp). docs/dynamic.md.
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "outputs.hpp"
#include "recon_inputs.hpp"

namespace CLI {
class App;
}

namespace mri::cli {

struct DynamicArgs {
  int bins = 0;                        // --bins: respiratory states by amplitude
  std::string gating = "self";         // --gating self | header | FILE
  std::int64_t frames_spokes = 0;      // --frames-spokes: time frames of this many readouts
  std::int64_t frames_step = 0;        // --frames-step: sliding window step (0: disjoint)
  bool time_fallback = false;          // --gating-fallback: no breathing peak -> time frames
  double tr = 0;                       // --tr: seconds between readouts (without time stamps)
  int readout_samples = 0;             // --readout-samples: samples per readout (BART inputs)
  bool motion_correct = false;         // --motion-correct
  std::string motion_fields;           // --motion-fields: write the fields (NIfTI displacement)
  std::string motion_fields_in;        // --motion-fields-in: read the fields instead of estimating
  int motion_rounds = 1;               // --motion-rounds: alternations of motion estimation and MCIR
  int motion_refine = 3;               // --motion-refine: CG iterations refining W_s x on state s's data
  bool requested() const { return bins > 0 || frames_spokes > 0; }
};

void add_dynamic_options(CLI::App &cmd, DynamicArgs &args);
// Throws UsageError for contradicting options (both --bins and --frames-spokes, --motion-correct
// without --bins, --motion-fields, --motion-fields-in, --motion-rounds or --motion-refine without
// --motion-correct).
void check_dynamic(const DynamicArgs &args);

// The whole chain on `inputs` (one acquisition: UsageError otherwise), the images to `outputs`,
// the report (binning, frames, motion, MCIR) to `report_path` when given. Returns the exit code.
int run_dynamic(const DynamicArgs &args, ReconInputs &inputs, const ReconOptions &options,
                const std::vector<std::string> &outputs, const OutputOptions &output_options,
                const std::string &report_path, bool quiet);

} // namespace mri::cli
