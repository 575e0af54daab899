#pragma once
// The `mri` command line as a CLI11 app: what main() parses, and what the option-parsing fuzz
// harness (tests/fuzz/fuzz_cli.cpp) builds and parses.
#include <memory>
#include <vector>

#include "common.hpp"

namespace mri::cli {

// A subcommand and what runs when it was given.
struct Command {
  CLI::App *app;
  Runner run;
};

struct Tool {
  std::unique_ptr<CLI::App> app;
  std::vector<Command> commands;

  // The runner of the subcommand a successful parse chose.
  const Runner &chosen() const;
};

// The app with every subcommand registered. Parsing it also runs each given subcommand's
// checks of its options (UsageError; mri::IoError for an output folder that does not exist);
// only the runners read inputs and do the work.
Tool make_tool();

} // namespace mri::cli
