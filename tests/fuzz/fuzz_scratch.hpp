#pragma once
// What every harness of fuzz_targets.hpp shares: the scratch folder its inputs are written to,
// and how a finding ends the run.
#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace mri::fuzz {

// One folder per process under TMPDIR (scripts/fuzz.sh points it at /dev/shm so that millions of
// executions do not touch a disk), removed at exit.
const std::filesystem::path &scratch_dir();

// Writes the bytes to `path` (replacing it); aborts when it cannot: that is the harness's fault,
// not the reader's.
void write_file(const std::filesystem::path &path, const std::uint8_t *data, std::size_t size);

// Reports a finding on stderr and aborts (libFuzzer saves the input).
[[noreturn]] void finding(const char *what);

} // namespace mri::fuzz
