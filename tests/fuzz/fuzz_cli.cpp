// The command line's harness (fuzz_targets.hpp): the `mri` app parses the input's tokens.
#include <string>
#include <vector>

#include "app.hpp"
#include "fuzz_targets.hpp"

namespace mri::fuzz {
namespace {

// argv[0] and the input split at each NUL (the one byte an argument cannot hold).
std::vector<std::string> tokens(const std::uint8_t *data, std::size_t size) {
  std::vector<std::string> out{"mri"};
  std::string token;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] != 0) {
      token.push_back(static_cast<char>(data[i]));
      continue;
    }
    out.push_back(std::move(token));
    token.clear();
  }
  if (!token.empty()) out.push_back(std::move(token));
  return out;
}

} // namespace

int cli_options(const std::uint8_t *data, std::size_t size) {
  std::vector<std::string> args = tokens(data, size);
  std::vector<char *> argv;
  for (std::string &a : args) argv.push_back(a.data());
  const cli::Tool tool = cli::make_tool();
  try {
    tool.app->parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError &) {
    return 0; // the expected answers to bad options
  } catch (const cli::UsageError &) {
    return 0;
  } catch (const Error &) {
    return 0;
  }
  (void)tool.chosen(); // a clean parse chose a subcommand: throws (a finding) if not
  return 0;
}

} // namespace mri::fuzz
