// `mri fieldmap`: a field map in Hz from two echoes of a dual-echo prescan (mri::estimate_field_map),
// for `mri recon --fieldmap`. Echoes: complex images as BART .cfl or NIfTI (complex64); the map is
// written as a BART .cfl (real values) or NIfTI (float32), by the output's extension.
#include "commands.hpp"
#include "outputs.hpp"

#include "mri/io/nifti.hpp"

namespace mri::cli {
namespace {

struct FieldmapArgs {
  std::string echo1, echo2, out;
  double delta_te_ms = 0;
  FieldMapEstimation options;
  bool quiet = false;
};

bool is_nifti(const std::string &path) {
  const auto ends = [&](const std::string &suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".nii") || ends(".nii.gz");
}

Image read_echo(const std::string &path) {
  if (!is_nifti(path)) return bart::to_image(bart::read_cfl(cfl_base(path)));
  NiftiVolume v = read_nifti(path);
  if (v.dims[3] != 1) detail::invalid_argument("--echo", path, std::to_string(v.dims[3]) + " volumes: one image expected");
  if (v.values != NiftiValues::Complex)
    detail::invalid_argument("--echo", path, "holds magnitudes: the field map needs the echoes' phase (complex64)");
  return Image(Grid(v.dims[0], v.dims[1], v.dims[2]), std::move(v.data));
}

int run_fieldmap(const FieldmapArgs &a) {
  const FieldMap f = estimate_field_map(read_echo(a.echo1), read_echo(a.echo2), a.delta_te_ms * 1e-3, a.options);
  const Grid &g = f.grid();
  Image out(g);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = cfloat(f.hz()[i], 0.0f);
  if (is_nifti(a.out))
    write_nifti(a.out, {out}, {1, 1, 1}, NiftiValues::Complex);
  else
    write_cfl_atomic(cfl_base(a.out), {g.nx(), g.ny(), g.nz()}, out.values());
  if (!a.quiet)
    say("fieldmap", std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz()) + ", " +
                        std::to_string(f.min_hz()) + " .. " + std::to_string(f.max_hz()) + " Hz -> " + a.out);
  return kOk;
}

} // namespace

Runner add_fieldmap(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("fieldmap", "estimate a field map (Hz) from two echoes, for mri recon --fieldmap");
  auto a = std::make_shared<FieldmapArgs>();
  cmd->add_option("--echo1", a->echo1, "the first echo: complex image, BART .cfl or NIfTI complex64")->required();
  cmd->add_option("--echo2", a->echo2, "the second echo, delta-TE later, on the same grid")->required();
  cmd->add_option("--delta-te", a->delta_te_ms, "TE2 - TE1 in ms (fields up to 1 / (2 delta-TE) are unambiguous)")
      ->required()->check(CLI::PositiveNumber);
  cmd->add_option("--out", a->out, "the field map: .nii/.nii.gz, or a BART base name")->required();
  cmd->add_option("--mask", a->options.mask, "voxels below this fraction of the peak |echo1| take their neighbours' field")
      ->check(CLI::Range(0.0, 0.999))->capture_default_str();
  cmd->add_option("--smooth", a->options.smooth, "half-width of the box the complex phase difference is averaged over, voxels")
      ->check(CLI::Range(0, 16))->capture_default_str();
  cmd->add_flag("-q,--quiet", a->quiet, "no notes on stderr");
  cmd->final_callback([a] { check_output_path(a->out); });
  return [a] { return run_fieldmap(*a); };
}

} // namespace mri::cli
