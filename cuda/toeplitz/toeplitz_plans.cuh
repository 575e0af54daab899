#pragma once
// The Toeplitz operator's cuFFT plans (toeplitz_plans.cu): one set per padded grid and requested
// path, kept for the process (release_toeplitz_plans()), so the JIT of the callback kernels is
// paid once. A set is shared by operators on one stream only.
#include <cuda_runtime.h>
#include <cufft.h>

#include <memory>
#include <string>

#include "cufft_check.cuh"
#include "recon/device_memory_ledger.cuh"
#include "mri/grid.hpp"
#include "toeplitz_callback_params.h"
#include "toeplitz_cuda.hpp"

namespace mri::cuda::detail {

struct PlanSet {
  int device = 0; // the CUDA device its plans and buffers were made on (a set serves that one only)
  Grid padded;
  int batch = 1;                          // transforms per execution (contiguous grids): coils
  ToeplitzFft fft = ToeplitzFft::Unfused; // what runs
  std::string note;
  cufftHandle fwd = 0, inv = 0;       // plain C2C plans (fwd also transforms Q)
  cufftHandle cb_fwd = 0, cb_inv = 0; // callback plans (fft == Callbacks)
  cufftHandle slab = 0, last = 0;     // Pruned: the slabs' transform (batched) and the last axis's
  cufftHandle last_cb = 0;            // PrunedCallback: the last axis with the multiply on store
  bool has_fwd = false, has_inv = false, has_cb_fwd = false, has_cb_inv = false, has_slab = false,
       has_last = false, has_last_cb = false;
  std::int64_t slabs = 0, slab_size = 0; // Pruned: nonzero slabs (n_last) and voxels per slab
  void *work = nullptr;
  ToeplitzCallbackParams *params_dev = nullptr;
  ToeplitzCallbackParams params_host{};
  bool params_valid = false;
  void *caller_info[1] = {nullptr};
  cudaStream_t stream = nullptr;

  PlanSet() = default;
  PlanSet(const PlanSet &) = delete;
  PlanSet &operator=(const PlanSet &) = delete;
  ~PlanSet() {
    if (has_fwd) cufftDestroy(fwd);
    if (has_inv) cufftDestroy(inv);
    if (has_cb_fwd) cufftDestroy(cb_fwd);
    if (has_cb_inv) cufftDestroy(cb_inv);
    if (has_slab) cufftDestroy(slab);
    if (has_last) cufftDestroy(last);
    if (has_last_cb) cufftDestroy(last_cb);
    device_free(work);
    device_free(params_dev);
  }

  void set_stream(cudaStream_t s) {
    if (s == stream) return;
    if (has_fwd) MRI_CUFFT_CHECK(cufftSetStream(fwd, s));
    if (has_inv) MRI_CUFFT_CHECK(cufftSetStream(inv, s));
    if (has_cb_fwd) MRI_CUFFT_CHECK(cufftSetStream(cb_fwd, s));
    if (has_cb_inv) MRI_CUFFT_CHECK(cufftSetStream(cb_inv, s));
    if (has_slab) MRI_CUFFT_CHECK(cufftSetStream(slab, s));
    if (has_last) MRI_CUFFT_CHECK(cufftSetStream(last, s));
    if (has_last_cb) MRI_CUFFT_CHECK(cufftSetStream(last_cb, s));
    stream = s;
  }
};

// cuFFT's dimensions, slowest first (our x is fastest).
struct FftShape {
  int rank = 0;
  int n[3] = {1, 1, 1};
};
FftShape fft_shape(const Grid &padded);
// Creates a C2C plan of `batch` contiguous whole grids without its own work area; returns the work
// size it needs.
std::size_t make_plain_plan(cufftHandle &h, bool &has, const FftShape &s, int batch = 1);
// A plan set for `padded` on the current device, from the cache or new, its plans bound to
// `stream`. batch > 1: plain (Unfused) plans of `batch` contiguous grids, whatever `requested` says.
std::shared_ptr<PlanSet> acquire_plans(const Grid &padded, ToeplitzFft requested, cudaStream_t stream, int batch = 1);
// Auto -> the path for this padded grid.
ToeplitzFft resolve_fft(ToeplitzFft requested, const Grid &padded);
// Drops the cache's references (release_toeplitz_plans(); a set in use lives on with its operators).
void clear_plan_cache();

} // namespace mri::cuda::detail
