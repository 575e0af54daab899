#pragma once
// A Q cache directory for one run (under TMPDIR), removed with everything in it at the end: where
// a batch's items share Q without --q-cache (cli/batch.cpp; under mpirun one per host,
// cli/batch_mpi.cpp).
#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>
#include <unistd.h>

namespace mri::cli {

class RunQCache {
public:
  RunQCache() {
    static std::atomic<int> runs{0};
    path_ = std::filesystem::temp_directory_path() /
            ("mri-q-" + std::to_string(::getpid()) + "-" + std::to_string(runs++));
    std::filesystem::create_directories(path_);
  }
  ~RunQCache() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  RunQCache(const RunQCache &) = delete;
  RunQCache &operator=(const RunQCache &) = delete;
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace mri::cli
