// Runs every file under the given directories through one fuzz harness (fuzz_targets.hpp): the
// committed seed corpus and every input that once crashed a reader (regressions/), in any
// build, without libFuzzer. A finding aborts, so ctest reports the input's path printed last.
//   mri_fuzz_replay <harness> <dir>...   (harness: a function of fuzz_targets.hpp)
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "fuzz_targets.hpp"

namespace fs = std::filesystem;

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <harness> <dir>...\n", argv[0]);
    return 2;
  }
  const std::string harness = argv[1];
  using Entry = int (*)(const std::uint8_t *, std::size_t);
  const std::map<std::string, Entry> harnesses{
      {"cfl_reader", mri::fuzz::cfl_reader},         {"q_cache_reader", mri::fuzz::q_cache_reader},
      {"ismrmrd_reader", mri::fuzz::ismrmrd_reader}, {"nifti_reader", mri::fuzz::nifti_reader},
      {"cli_options", mri::fuzz::cli_options}};
  const auto found = harnesses.find(harness);
  if (found == harnesses.end()) {
    std::fprintf(stderr, "unknown harness \"%s\"\n", harness.c_str());
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 2; i < argc; ++i)
    for (const auto &e : fs::recursive_directory_iterator(argv[i]))
      if (e.is_regular_file() && e.path().filename() != ".gitkeep")
        inputs.push_back(e.path());
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path &p : inputs) {
    std::fprintf(stderr, "%s\n", p.c_str());
    std::ifstream in(p, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    found->second(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size());
  }
  // A replay of nothing would pass vacuously: the seed corpus must be there.
  if (inputs.empty()) {
    std::fprintf(stderr, "no inputs under the given directories\n");
    return 1;
  }
  std::printf("%s: %zu inputs replayed, no finding\n", harness.c_str(), inputs.size());
  return 0;
}
