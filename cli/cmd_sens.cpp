// `mri sens`: coil sensitivity maps estimated from raw data (ISMRMRD or BART inputs, as `mri recon`
// takes them), written as BART [x, y, z, coils] (items of a batch along BART's dimension 10), as
// `bart caldir` / `bart ecalib` write theirs.
#include "commands.hpp"
#include "outputs.hpp"
#include "recon_inputs.hpp"

namespace mri::cli {
namespace {

struct SensArgs {
  InputArgs input;
  std::string out;
  SensitivityOptions options;
  bool quiet = false;
};

int run_sens(const SensArgs &a) {
  ReconInputs in = load_inputs(a.input, a.quiet);
  read_problems(in, [](std::size_t) {}); // the whole file first: one item at a time gains nothing here
  const Grid &g = in.grid;
  std::vector<cfloat> all;
  int coils = 0;
  for (std::size_t i = 0; i < in.problems.size(); ++i) {
    const CoilSensitivities maps = estimate_sensitivities(take_data(in, i), g, a.options);
    coils = maps.coils();
    all.insert(all.end(), maps.values().begin(), maps.values().end());
  }
  std::vector<std::int64_t> dims{g.nx(), g.ny(), g.nz(), coils};
  if (in.problems.size() > 1) {
    dims.resize(11, 1);
    dims[10] = static_cast<std::int64_t>(in.problems.size());
  }
  write_cfl_atomic(cfl_base(a.out), dims, all);
  if (!a.quiet)
    say("sens", std::to_string(in.problems.size()) + " item(s), " + std::to_string(coils) + " coils, " +
                    to_string(a.options.method) + " estimate -> " + a.out);
  return kOk;
}

} // namespace

Runner add_sens(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("sens", "estimate coil sensitivity maps from multi-coil raw data");
  auto a = std::make_shared<SensArgs>();
  cmd->add_option("--in", a->input.in, "ISMRMRD raw data (.h5)");
  cmd->add_option("--dataset", a->input.group, "ISMRMRD: the HDF5 group of the raw data")->capture_default_str();
  cmd->add_option("--traj", a->input.traj, "BART trajectory [3, samples, ...] in cycles/FOV");
  cmd->add_option("--kspace", a->input.kspace, "BART k-space [1, samples, ..., coils]");
  cmd->add_option("--weights", a->input.weights, "BART density weights [1, samples, ...] (real part used)");
  cmd->add_option("--matrix", a->input.matrix, "image matrix nx,ny[,nz] (voxels; BART inputs)");
  add_enum(*cmd, "--traj-units", a->input.units, kTrajUnits, "ISMRMRD trajectory units");
  cmd->add_flag("!--no-prewhiten", a->input.prewhiten, "ISMRMRD: do not prewhiten with the noise scans' covariance");
  cmd->add_option("--out", a->out, "BART base name of the maps [x, y, z, coils]")->required();
  add_enum(*cmd, "--maps", a->options.method, {{"direct", MapEstimate::Direct}, {"espirit", MapEstimate::Espirit}},
           "direct (BART caldir's method, RSS-normalised, masked) or ESPIRiT (BART ecalib's, one set)");
  cmd->add_option("--calibration", a->options.calibration, "width of the k-space centre used, cycles/FOV (0: 24, or the smallest extent when smaller)")
      ->capture_default_str();
  cmd->add_option("--mask", a->options.mask_threshold, "direct: maps are zero below this fraction of the peak RSS")
      ->capture_default_str();
  cmd->add_option("--kernel", a->options.espirit_kernel, "ESPIRiT window width (0: 6 in 2D, 4 in 3D)")
      ->capture_default_str();
  cmd->add_option("--crop", a->options.espirit_crop, "ESPIRiT: maps are zero where the eigenvalue is below this")
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", a->quiet, "no notes on stderr");
  cmd->final_callback([a] {
    check_output_path(a->out);
    check_inputs(a->input);
  });
  return [a] { return run_sens(*a); };
}

} // namespace mri::cli
