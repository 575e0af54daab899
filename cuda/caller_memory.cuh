#pragma once
// The rule of the entry points that compute on the caller's device memory (NufftOperator and
// FourierOperator's forward_device / adjoint_device; the Python package's CuPy and PyTorch CUDA
// arrays): every pointer must be device (or managed) memory of the device the plan's stream
// belongs to, else InvalidArgument naming it; the work is ordered after everything the caller
// queued on that device (which stream produced the array is not known here: a CuPy or PyTorch
// array may come from any), and complete when the call returns.
#include <cuda_runtime.h>

#include <initializer_list>
#include <utility>

#include "cuda_check.cuh"
#include "current_device.cuh"

namespace mri::cuda::detail {

struct CallerPointer {
  const void *address;
  const char *name; // the argument's name in the public API
};

// The device of `stream` (cuda/caller_memory.cu).
int stream_device(cudaStream_t stream);
// Throws InvalidArgument unless `p` is device or managed memory usable on `device`.
void check_caller_pointer(const CallerPointer &p, int device);

// Checks the pointers, waits for the device, runs enqueue() (work on `stream`) and waits for it.
template <class Enqueue>
void run_on_caller_memory(cudaStream_t stream, std::initializer_list<CallerPointer> pointers, Enqueue &&enqueue) {
  const int device = stream_device(stream);
  for (const CallerPointer &p : pointers) check_caller_pointer(p, device);
  const CurrentDevice on(device);
  MRI_CUDA_CHECK(cudaDeviceSynchronize());
  std::forward<Enqueue>(enqueue)();
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
}

} // namespace mri::cuda::detail
