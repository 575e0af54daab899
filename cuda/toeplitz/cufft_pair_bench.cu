// The cuFFT pair benchmark of the padded grid (toeplitz_cuda.hpp's time_cufft_pair_ms): the bound
// a Toeplitz application is measured against.
#include <algorithm>
#include <vector>

#include "normal_common.cuh"
#include "random_fill.cuh"
#include "toeplitz_plans.cuh"

namespace mri::cuda {

using detail::fft_shape;
using detail::FftShape;
using detail::make_plain_plan;

double time_cufft_pair_ms(const Grid &grid, int repeats) {
  const FftShape shape = fft_shape(grid);
  cufftHandle plan = 0;
  bool has = false;
  const std::size_t work = make_plain_plan(plan, has, shape);
  DeviceBuffer<char> work_area(work);
  DeviceBuffer<float2> data(static_cast<std::size_t>(grid.voxels()));
  cudaStream_t s = as_stream(default_stream());
  const auto n = static_cast<long long>(grid.voxels());
  std::vector<double> ms;
  try {
    MRI_CUFFT_CHECK(cufftSetWorkArea(plan, work_area.get()));
    MRI_CUFFT_CHECK(cufftSetStream(plan, s));
    StreamTimer timer;
    auto *buf = reinterpret_cast<cufftComplex *>(data.get());
    for (int r = 0; r <= repeats; ++r) {
      detail::fill_uniform(reinterpret_cast<float *>(data.get()), 2 * static_cast<std::size_t>(n),
                           12345u + static_cast<unsigned>(r), -1.0f, 1.0f, s);
      timer.start();
      MRI_CUFFT_CHECK(cufftExecC2C(plan, buf, buf, CUFFT_FORWARD));
      MRI_CUFFT_CHECK(cufftExecC2C(plan, buf, buf, CUFFT_INVERSE));
      const double t = timer.stop_ms();
      if (r > 0) ms.push_back(t);
    }
  } catch (...) {
    cufftDestroy(plan);
    throw;
  }
  cufftDestroy(plan);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

} // namespace mri::cuda
