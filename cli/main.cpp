// `mri`: the SDK on the command line (docs/cli.md). Every failure becomes one line on stderr and
// an exit code (common.hpp); no exception leaves main.
#include <cstdio>
#include <exception>
#include <vector>

#include "commands.hpp"

namespace {

// CLI11's default failure message is two lines; ours is one.
std::string one_line(const CLI::App *, const CLI::Error &e) { return std::string("mri: ") + e.what() + " (see --help)\n"; }

int run(int argc, char **argv) {
  CLI::App app{"mri: iterative reconstruction of non-Cartesian MRI (BART .cfl, ISMRMRD .h5, NIfTI .nii, PNG)"};
  app.name("mri");
  app.require_subcommand(1);
  app.failure_message(one_line);
  std::vector<std::pair<CLI::App *, mri::cli::Runner>> commands;
  for (auto add : {mri::cli::add_phantom, mri::cli::add_traj, mri::cli::add_nufft, mri::cli::add_recon,
                   mri::cli::add_sens, mri::cli::add_motion}) {
    mri::cli::Runner runner = add(app);
    commands.emplace_back(app.get_subcommands([](CLI::App *) { return true; }).back(), std::move(runner));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : mri::cli::kUsageError;
  }
  for (auto &[cmd, runner] : commands)
    if (app.got_subcommand(cmd)) return runner();
  return mri::cli::kUsageError;
}

void error_line(const char *what) { std::fprintf(stderr, "mri: %s\n", what); }

} // namespace

int main(int argc, char **argv) {
  using namespace mri::cli;
  try {
    return run(argc, argv);
  } catch (const UsageError &e) {
    error_line(e.what());
    return kUsageError;
  } catch (const mri::Unsupported &e) {
    error_line(e.what());
    return kUnsupported;
  } catch (const mri::Error &e) { // IoError, InvalidArgument: the data or a file
    error_line(e.what());
    return kDataError;
  } catch (const std::bad_alloc &) {
    error_line("out of memory");
    return kInternal;
  } catch (const std::exception &e) {
    error_line(e.what());
    return kInternal;
  }
}
