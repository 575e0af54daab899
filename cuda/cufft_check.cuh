#pragma once
// Every cuFFT call goes through MRI_CUFFT_CHECK: a failure becomes mri::CudaError naming the call,
// file, line and the cufftResult (fault injection as in cuda_check.cuh).
#include <cufft.h>

#include <string>

#include "cuda_check.cuh"
#include "mri/error.hpp"

namespace mri::cuda::detail {

inline const char *cufft_result_name(cufftResult r) {
  switch (r) {
  case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
  case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
  case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
  case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
  case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
  case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
  case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
  case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
  case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
  case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
  case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
  case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
  case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
  case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
  case CUFFT_MISSING_DEPENDENCY: return "CUFFT_MISSING_DEPENDENCY";
  case CUFFT_NVRTC_FAILURE: return "CUFFT_NVRTC_FAILURE";
  case CUFFT_NVJITLINK_FAILURE: return "CUFFT_NVJITLINK_FAILURE";
  case CUFFT_NVSHMEM_FAILURE: return "CUFFT_NVSHMEM_FAILURE";
  default: return "cufftResult (unknown code)";
  }
}

inline void check_cufft(cufftResult status, const char *call, const char *file, int line) {
  if (status == CUFFT_SUCCESS) return;
  throw CudaError(failure_text(call, file, line) + cufft_result_name(status) + " (" +
                  std::to_string(static_cast<int>(status)) + ")");
}

} // namespace mri::cuda::detail

#define MRI_CUFFT_CHECK(call)                                                                      \
  ::mri::cuda::detail::check_cufft(                                                                \
      ::mri::cuda::detail::inject_fault_now() ? CUFFT_ALLOC_FAILED : (call), #call, __FILE__,      \
      __LINE__)
