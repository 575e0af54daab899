#pragma once
// What the ISMRMRD reader and writer share: libismrmrd's error reporting turned into IoError.
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace mri::detail {

// libismrmrd prints every HDF5 error stack to stderr by default; the first call switches that
// off process-wide and keeps the calling thread's last message for ismrmrd_last_error().
void quiet_ismrmrd();
// The last libismrmrd message on this thread (empty if none), then forgets it.
std::string ismrmrd_last_error();

// HDF5 as Debian builds it (serial) is not thread-safe: every SDK call into libismrmrd/HDF5
// holds this lock for its whole run. The first call raises glibc's malloc mmap and trim
// thresholds process-wide (8 and 32 MiB), so HDF5's per-read buffers stay resident.
std::unique_lock<std::mutex> lock_hdf5();

// Throws IoError("<path>: <what>[ (<libismrmrd's last message>)]").
[[noreturn]] void ismrmrd_io_error(const std::filesystem::path &path, std::string_view what);

// Runs write(tmp) on a temporary sibling of `path` and renames it to `path`; on any failure the
// temporary is removed and IoError("<path>: cannot write (...)") thrown: nothing half-written.
void write_then_rename(const std::filesystem::path &path,
                       const std::function<void(const std::filesystem::path &)> &write);

} // namespace mri::detail
