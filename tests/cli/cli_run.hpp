#pragma once
// The CLI tests' way of running `mri`: in a temporary folder, stdout to out.txt and stderr to
// err.txt there, the exit code returned (-1 when it did not exit); and its JSON reports read back.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace mri::test {

inline int run_cli(const TempDir &dir, const std::string &args) {
  const std::string cmd = "cd '" + dir.path().string() + "' && OMP_WAIT_POLICY=passive '" MRI_TEST_CLI "' " + args +
                          " > out.txt 2> err.txt";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline nlohmann::json read_json(const std::filesystem::path &path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

} // namespace mri::test
