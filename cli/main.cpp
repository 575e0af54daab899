// `mri`: the SDK on the command line (docs/cli.md). Every failure becomes one line on stderr and
// an exit code (common.hpp); no exception leaves main.
#include <cstdio>
#include <exception>

#include "app.hpp"

namespace {

int run(int argc, char **argv) {
  const mri::cli::Tool tool = mri::cli::make_tool();
  try {
    tool.app->parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    const int code = tool.app->exit(e);
    return code == 0 ? 0 : mri::cli::kUsageError;
  }
  return tool.chosen()();
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (...) {
    const mri::cli::Failure f = mri::cli::describe_failure(std::current_exception());
    std::fprintf(stderr, "mri: %s\n", f.message.c_str());
    return f.code;
  }
}
