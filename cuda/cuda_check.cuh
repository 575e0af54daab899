#pragma once
// Every CUDA runtime call goes through MRI_CUDA_CHECK, every cuBLAS call through
// MRI_CUBLAS_CHECK: a failure becomes mri::CudaError naming the call, file and line.
//
// Fault injection (the GPU tests' reliability cases): the checks count the calls they make, and
// inject_fault_at(n) (device.cuh) makes the n-th checked call from then on fail without being
// made, as an allocation failure of its library (the realistic mid-run error that leaves the
// context usable). Disarmed, the cost is two relaxed atomic operations per checked call.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "mri/error.hpp"

namespace mri::cuda::detail {

struct FaultInjection {
  std::atomic<std::int64_t> countdown{0}; // > 0: calls until the injected failure
  std::atomic<std::int64_t> calls{0};     // checked calls so far
};
FaultInjection &fault_injection(); // device.cu: one per plugin
// Whether this thread's last checked call was failed by injection (named in the error message).
inline thread_local bool last_call_injected = false;

inline bool inject_fault_now() {
  FaultInjection &f = fault_injection();
  f.calls.fetch_add(1, std::memory_order_relaxed);
  last_call_injected =
      f.countdown.load(std::memory_order_relaxed) > 0 && f.countdown.fetch_sub(1) == 1;
  return last_call_injected;
}

inline std::string failure_text(const char *call, const char *file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
         (last_call_injected ? "[injected] " : "");
}

inline void check(cudaError_t status, const char *call, const char *file, int line) {
  if (status == cudaSuccess) return;
  throw CudaError(failure_text(call, file, line) + cudaGetErrorName(status) + " (" +
                  cudaGetErrorString(status) + ")");
}

inline void check(cublasStatus_t status, const char *call, const char *file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(failure_text(call, file, line) + cublasGetStatusName(status) + " (" +
                  cublasGetStatusString(status) + ")");
}

} // namespace mri::cuda::detail

#define MRI_CUDA_CHECK(call)                                                                       \
  ::mri::cuda::detail::check(                                                                      \
      ::mri::cuda::detail::inject_fault_now() ? cudaErrorMemoryAllocation : (call), #call,         \
      __FILE__, __LINE__)
#define MRI_CUBLAS_CHECK(call)                                                                     \
  ::mri::cuda::detail::check(                                                                      \
      ::mri::cuda::detail::inject_fault_now() ? CUBLAS_STATUS_ALLOC_FAILED : (call), #call,        \
      __FILE__, __LINE__)
