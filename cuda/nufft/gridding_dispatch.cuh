#pragma once
// The table of the gridding kernels' (dims, width) instantiations and the choices made from it.
#include <string>

#include "nufft/crop_pad.cuh"
#include "nufft/gather_rga.cuh"
#include "nufft/interpolate.cuh"
#include "nufft/points_setup.cuh"
#include "nufft/scatter_global.cuh"
#include "nufft/scatter_shared.cuh"
#include "mri_backend/tuning.hpp"

namespace mri::cuda::detail {
namespace {

// Coils gridded together by the coil-batched gather (adjoint_coils_device).
constexpr int kCoilBlock = NufftDevicePlan::kCoilBlock;

struct Kernels {
  decltype(&prep_kernel<2, 4>) prep;
  decltype(&classify_gather_kernel<2, 4>) classify;
  decltype(&gather_kernel<2, 4>) gather;
  decltype(&gather_kernel<2, 4, kCoilBlock>) gather_coils;
  decltype(&gather_dense_kernel<2, 4>) gather_dense;
  decltype(&gather_dense_kernel<2, 4, kCoilBlock>) gather_dense_coils;
  decltype(&scatter_kernel<2, 4>) scatter;
  decltype(&sm_scatter_kernel<2, 4>) sm;
  decltype(&sm_scatter_kernel<2, 4>) sm_fixed;
  std::size_t sm_shared, sm_fixed_shared; // their dynamic shared memory (bytes)
  decltype(&interp_kernel<2, 4>) interp;
  int tx, ty, tz;  // SM tile
  int gather_run;  // RGA's points per item (kGatherRun)
};

template <int D, int W> Kernels kernels_of() {
  using T = SmTile<D, W>;
  return {&prep_kernel<D, W>,
          &classify_gather_kernel<D, W>,
          &gather_kernel<D, W>,
          &gather_kernel<D, W, kCoilBlock>,
          &gather_dense_kernel<D, W>,
          &gather_dense_kernel<D, W, kCoilBlock>,
          &scatter_kernel<D, W>,
          &sm_scatter_kernel<D, W>,
          &sm_scatter_kernel<D, W, true>,
          2 * T::SP * sizeof(float),
          4 * T::SP * sizeof(unsigned),
          &interp_kernel<D, W>,
          T::TX,
          T::TY,
          T::TZ,
          kGatherRun<D>};
}

template <int D, int W = 2> Kernels pick(int width) {
  if constexpr (W > kMaxDeviceWidth) {
    throw Unsupported("NufftOperator on cuda: kernel width " + std::to_string(width) + " above " +
                      std::to_string(kMaxDeviceWidth));
  } else {
    if (width == W) return kernels_of<D, W>();
    return pick<D, W + 1>(width);
  }
}

unsigned blocks(std::int64_t n, int per) { return static_cast<unsigned>((n + per - 1) / per); }

// Auto: SM in 3D; in 2D SM from one sample per oversampled grid cell up, GA below: SM's
// same-cell runs pay where cells hold several samples (256^2 at 2^20 samples, 4 a cell), GA's
// plain atomics where they hold few (PROPELLER 256^2 at 2^17, half a sample a cell: GRID-2D).
// Tuned by bench_nufft_gpu and bench_nufft_front_gpu (docs/history.md, "Measured again after
// SM's same-cell runs"); between half a sample and four a cell the crossing is not measured: one
// is a guess.
ScatterMethod resolved_scatter(ScatterMethod method, int dims, std::int64_t samples, std::int64_t grid_points) {
  if (method != ScatterMethod::Auto) return method;
  const double per_point = static_cast<double>(samples) / static_cast<double>(grid_points);
  return dims == 3 || per_point >= mri::detail::tuning::Gpu::sm_min_samples_per_point_2d ? ScatterMethod::Shared
                                                                                          : ScatterMethod::Global;
}

} // namespace
} // namespace mri::cuda::detail
