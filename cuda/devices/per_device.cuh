#pragma once
// Work spread over the entries of ReconOptions::gpu.devices, one host thread per distinct device: what
// the voxel slabs (device_slabs.cu) and the F^H D split by coils (coil_split_fhd.cu) share. Each
// device runs its items in turn on one thread (a device listed twice never runs two of its items at
// once: the constant-memory F^H D policies share one __constant__ buffer per device, and one GPU
// listed twice is how the splits are tested), with that device current.
#include <exception>
#include <map>
#include <thread>
#include <vector>

#include "current_device.cuh"

namespace mri::cuda::detail {

// Runs work(i) for every index i of device_of with device_of[i] >= 0 (a negative entry: an item
// without work). Items of device `home` (the calling thread's) run on the calling thread, every
// other device's on a thread of its own. The first exception, in item order, is rethrown once
// every thread has joined; a device's later items are skipped after one of its items threw.
template <class Work> void per_device(const std::vector<int> &device_of, int home, Work &&work) {
  std::map<int, std::vector<std::size_t>> by_device;
  for (std::size_t i = 0; i < device_of.size(); ++i)
    if (device_of[i] >= 0) by_device[device_of[i]].push_back(i);
  std::vector<std::exception_ptr> errors(device_of.size());
  const auto run = [&](int device, const std::vector<std::size_t> &mine) {
    for (const std::size_t i : mine) {
      try {
        const CurrentDevice on(device);
        work(i);
      } catch (...) {
        errors[i] = std::current_exception();
        return; // this device's later items would only add errors
      }
    }
  };
  struct Joined { // the threads started are joined however this scope ends
    std::vector<std::thread> threads;
    ~Joined() {
      for (std::thread &t : threads) t.join();
    }
  };
  {
    Joined joined;
    for (const auto &[device, mine] : by_device)
      if (device != home) joined.threads.emplace_back(run, device, std::cref(mine));
    if (const auto it = by_device.find(home); it != by_device.end()) run(home, it->second);
  }
  for (const std::exception_ptr &e : errors)
    if (e) std::rethrow_exception(e);
}

} // namespace mri::cuda::detail
