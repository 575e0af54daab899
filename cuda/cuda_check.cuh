#pragma once
// Every CUDA runtime call goes through MRI_CUDA_CHECK, every cuBLAS call through
// MRI_CUBLAS_CHECK: a failure becomes mri::CudaError naming the call, file and line.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "mri/error.hpp"

namespace mri::cuda::detail {

inline void check(cudaError_t status, const char *call, const char *file, int line) {
  if (status == cudaSuccess) return;
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

inline void check(cublasStatus_t status, const char *call, const char *file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

} // namespace mri::cuda::detail

#define MRI_CUDA_CHECK(call) ::mri::cuda::detail::check((call), #call, __FILE__, __LINE__)
#define MRI_CUBLAS_CHECK(call) ::mri::cuda::detail::check((call), #call, __FILE__, __LINE__)
