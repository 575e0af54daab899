// The harnesses' scratch folder and findings (fuzz_scratch.hpp).
#include "fuzz_scratch.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

namespace mri::fuzz {
namespace {

namespace fs = std::filesystem;

class Scratch {
public:
  Scratch() : dir_(fs::temp_directory_path() / ("mri_fuzz_" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  const fs::path &dir() const { return dir_; }

private:
  fs::path dir_;
};

} // namespace

const fs::path &scratch_dir() {
  static const Scratch scratch;
  return scratch.dir();
}

void write_file(const fs::path &path, const std::uint8_t *data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz harness: cannot write %s\n", path.c_str());
    std::abort();
  }
}

void finding(const char *what) {
  std::fprintf(stderr, "fuzz harness finding: %s\n", what);
  std::abort();
}

} // namespace mri::fuzz
