// libismrmrd's errors as the SDK's: one line in the IoError instead of an HDF5 stack on stderr.
#include "ismrmrd_common.hpp"

#include <ismrmrd/ismrmrd.h>

#include <malloc.h>
#include <mutex>
#include <unistd.h>

#include "mri/error.hpp"

namespace mri::detail {
namespace {

thread_local std::string last_error;

// libismrmrd calls this for every error (HDF5's included) before it returns a failure code or
// throws; the innermost message comes first, so the first one since the last read is kept.
void keep_message(const char * /*file*/, int /*line*/, const char * /*function*/, int /*code*/,
                  const char *message) {
  if (last_error.empty() && message != nullptr) last_error = message;
}

// HDF5 1.10 (Debian's) allocates a 1 MiB type-conversion buffer and a zeroed 1 MiB background
// buffer for every H5Dread, and libismrmrd reads one acquisition per H5Dread. With glibc's
// default thresholds those 2 MiB go back to the kernel after each read and are faulted in and
// zeroed again: most of `mri recon`'s time on a file of many acquisitions (perf). Blocks below
// 8 MiB now come from the heap, which is trimmed only above 32 MiB free: the buffers stay
// resident.
void keep_hdf5_buffers_resident() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 8 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
#endif
}

} // namespace

std::unique_lock<std::mutex> lock_hdf5() {
  static std::mutex mutex;
  static std::once_flag once;
  std::call_once(once, keep_hdf5_buffers_resident);
  return std::unique_lock<std::mutex>(mutex);
}

void quiet_ismrmrd() {
  static std::once_flag once;
  std::call_once(once, [] { ISMRMRD::ismrmrd_set_error_handler(keep_message); });
}

std::string ismrmrd_last_error() {
  std::string message;
  message.swap(last_error);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

void ismrmrd_io_error(const std::filesystem::path &path, std::string_view what) {
  std::string message = path.string() + ": " + std::string(what);
  const std::string library = ismrmrd_last_error();
  if (!library.empty()) message += " (" + library + ")";
  throw IoError(message);
}

void write_then_rename(const std::filesystem::path &path,
                       const std::function<void(const std::filesystem::path &)> &write) {
  const auto lock = lock_hdf5();
  quiet_ismrmrd();
  // libismrmrd's Dataset constructor leaks when it throws: a missing or read-only folder is
  // caught here instead.
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  std::error_code exists;
  if (!std::filesystem::is_directory(dir, exists) || ::access(dir.c_str(), W_OK) != 0)
    throw IoError(path.string() + ": cannot write: the folder " + dir.string() + " is missing or read-only");
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  try {
    write(tmp); // the Dataset is closed (flushed) when write returns
  } catch (const std::exception &) {
    std::filesystem::remove(tmp, ec);
    ismrmrd_io_error(path, "cannot write");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw IoError(path.string() + ": cannot write (" + why + ")");
  }
}

} // namespace mri::detail
