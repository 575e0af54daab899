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
