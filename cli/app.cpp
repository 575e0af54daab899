// The `mri` app: its subcommands, in the order --help lists them.
#include "app.hpp"

#include "batch_mpi.hpp"
#include "commands.hpp"

namespace mri::cli {
namespace {

// CLI11's default failure message is two lines; ours is one.
std::string one_line(const CLI::App *, const CLI::Error &e) { return std::string("mri: ") + e.what() + " (see --help)\n"; }

} // namespace

Tool make_tool() {
  Tool tool;
  tool.app = std::make_unique<CLI::App>(
      "mri: iterative reconstruction of non-Cartesian MRI (BART .cfl, ISMRMRD .h5, NIfTI .nii, PNG)", "mri");
  CLI::App &app = *tool.app;
  app.set_version_flag("--version", std::function<std::string()>([] {
                         return std::string("mri ") + MRI_VERSION_STRING + "\n" + mpi_description();
                       }));
  app.require_subcommand(1);
  app.failure_message(one_line);
  for (auto add : {add_phantom, add_traj, add_nufft, add_recon, add_sens, add_motion, add_fieldmap}) {
    Runner runner = add(app);
    tool.commands.push_back({app.get_subcommands([](CLI::App *) { return true; }).back(), std::move(runner)});
  }
  return tool;
}

const Runner &Tool::chosen() const {
  for (const Command &c : commands)
    if (app->got_subcommand(c.app)) return c.run;
  throw UsageError("no subcommand given"); // require_subcommand(1) makes the parse refuse that first
}

} // namespace mri::cli
