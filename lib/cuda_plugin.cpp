// Finding and loading the CUDA backend plugin (lib/interface/mri_backend/cuda_backend.hpp).
//
// Order, each step cheap where the last one failed: a probe of the CUDA driver (libcuda.so.1,
// cuInit, cuDeviceGetCount) so that a machine without a GPU never maps the CUDA libraries the
// plugin links (cuFFT, cuBLAS: hundreds of MB); then dlopen of the plugin next to libmri (or
// $MRI_CUDA_PLUGIN); then its version; then its backend.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "mri/error.hpp"
#include "mri_backend/cuda_backend.hpp"

namespace mri::detail {
namespace {

std::string dl_error() {
  const char *e = dlerror();
  return e ? e : "unknown dlopen error";
}

// Empty when a driver with at least one device answers, else why not.
std::string probe_driver() {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return "no CUDA driver (" + dl_error() + ")";
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  const auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  const auto count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  if (!init || !count) return "the CUDA driver lacks cuInit/cuDeviceGetCount";
  if (const int rc = init(0); rc != 0) return "cuInit failed with CUresult " + std::to_string(rc) + " (no usable GPU)";
  int devices = 0;
  if (const int rc = count(&devices); rc != 0 || devices == 0) return "the CUDA driver reports no device";
  return {}; // libcuda stays loaded: the plugin's runtime uses it
}

// libmri's own directory: the plugin is installed beside it.
std::string default_plugin_path() {
  if (const char *env = std::getenv("MRI_CUDA_PLUGIN"); env && *env) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void *>(&default_plugin_path), &info) == 0 || !info.dli_fname)
    return MRI_CUDA_PLUGIN_NAME;
  return (std::filesystem::path(info.dli_fname).parent_path() / MRI_CUDA_PLUGIN_NAME).string();
}

CudaPlugin find_plugin() {
#ifndef MRI_BUILT_CUDA_PLUGIN
  if (!std::getenv("MRI_CUDA_PLUGIN"))
    return {nullptr, "", "this build of mri has no CUDA backend (configured with MRI_ENABLE_CUDA=OFF)"};
#endif
  if (std::string why = probe_driver(); !why.empty()) return {nullptr, "", std::move(why)};
  return load_cuda_plugin(default_plugin_path());
}

} // namespace

CudaPlugin load_cuda_plugin(const std::string &path) {
  CudaPlugin p{nullptr, path, {}};
  // RTLD_LOCAL: the plugin's CUDA libraries stay out of the global namespace of the program.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    p.reason = "cannot load the CUDA plugin: " + dl_error();
    return p;
  }
  const auto version = reinterpret_cast<MriCudaPluginVersionFn>(dlsym(handle, kCudaPluginVersionSymbol));
  const auto entry = reinterpret_cast<MriCudaPluginEntryFn>(dlsym(handle, kCudaPluginEntrySymbol));
  if (!version || !entry) {
    p.reason = path + " is not an mri CUDA plugin (" + dl_error() + ")";
    return p;
  }
  const std::string expected = std::to_string(kCudaPluginAbi) + " " + MRI_VERSION_STRING;
  if (const std::string got = version(); got != expected) {
    p.reason = path + " is from another build of mri (plugin \"" + got + "\", libmri \"" + expected + "\")";
    return p;
  }
  p.backend = entry(); // the handle stays open for the process: the backend lives in it
  if (!p.backend) p.reason = path + ": the plugin returned no backend";
  return p;
}

const CudaPlugin &cuda_plugin() {
  static const CudaPlugin plugin = find_plugin(); // C++11 statics: initialised once, thread-safe
  return plugin;
}

const CudaBackend &require_cuda(const char *who) {
  const CudaPlugin &p = cuda_plugin();
  if (!p.backend) throw Unsupported(std::string(who) + ": backend = cuda: " + p.reason);
  if (!p.backend->device_present()) throw Unsupported(std::string(who) + ": backend = cuda: no CUDA device is usable");
  return *p.backend;
}

} // namespace mri::detail
