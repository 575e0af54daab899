// NufftOptions validated and resolved (the backend Auto picks), and the device plan's host-side
// setup (kernel, oversampled sizes, polynomial, deapodization) kept per grid for the process.
#include "mri/nufft.hpp"

#include <array>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "mri/error.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "nufft_plan.hpp"
#include "mri_backend/tuning.hpp"

namespace mri {

Gridding detail::deterministic_gridding(Backend backend, int dims, int width) {
  // CUDA (bench_nufft_front_gpu; docs/performance.md, "Deterministic gridding on the GPU"): SM in
  // fixed point is faster than the gather at every width in 2D and from W 5 in 3D; at W 4 in 3D
  // on koosh points, not on uniform ones; at W 3 in 3D the gather is.
  if (backend != Backend::Cuda) return Gridding::Gather;
  return dims == 3 && width <= tuning::Gpu::gather_max_width_3d ? Gridding::Gather : Gridding::ScatterFixed;
}

NufftOptions detail::validated_nufft_options(NufftOptions o, int dims) {
  if (!(o.tolerance >= kNufftMinTolerance && o.tolerance <= kNufftMaxTolerance)) {
    std::ostringstream os;
    os << "must be in [" << kNufftMinTolerance << ", " << kNufftMaxTolerance << "]";
    detail::invalid_argument("options.tolerance", o.tolerance, os.str());
  }
  if (o.precision == Precision::Float32 && o.tolerance < kNufftFloat32MinTolerance) {
    std::ostringstream os;
    os << "below what precision = float32 reaches (" << kNufftFloat32MinTolerance
       << "); use precision = float64";
    detail::invalid_argument("options.tolerance", o.tolerance, os.str());
  }
  if (o.width != 0 && (o.width < KaiserBessel::kMinWidth || o.width > KaiserBessel::kMaxWidth))
    detail::invalid_argument("options.width", o.width, "must be 0 (from the tolerance) or in [2, 16]");
  if (o.oversampling != 0 && !(o.oversampling >= 1.25 && o.oversampling <= 4.0))
    detail::invalid_argument("options.oversampling", o.oversampling, "must be 0 (= 2) or in [1.25, 4]");
  if (o.threads < 0) detail::invalid_argument("options.threads", o.threads, "must be >= 0 (0 = all)");
  // Backend: the GPU path is float32 with kernels up to width 8 (tolerance >= 1e-5 always
  // fits). An explicit Cuda request that cannot run says why; Auto falls back to the CPU.
  const int width = o.width != 0 ? o.width : KaiserBessel::for_tolerance(o.tolerance).width;
  const bool gpu_fits = o.precision == Precision::Float32 && width <= detail::kMaxDeviceNufftWidth;
  if (o.backend == Backend::Cuda) {
    detail::require_cuda("NufftOperator");
    if (!gpu_fits)
      throw Unsupported("NufftOperator: backend = cuda runs precision = float32 with kernel width <= " +
                        std::to_string(detail::kMaxDeviceNufftWidth) + "; use backend = cpu for float64");
  } else if (o.backend == Backend::Auto) {
    o.backend = gpu_fits && cuda_available() ? Backend::Cuda : Backend::Cpu;
  }
  if (o.gridding == Gridding::Auto) o.gridding = detail::deterministic_gridding(o.backend, dims, width);
  if (o.gridding == Gridding::ScatterFixed && o.backend == Backend::Cpu) o.gridding = Gridding::Gather;
  return o;
}

namespace {

// The device plan's host-side choice per grid and kernel request, kept for the process. Small (a
// few KB per entry), bounded.
struct KeptSetup {
  std::array<std::int64_t, 3> n{};
  double tolerance = 0, oversampling = 0;
  int width = 0;
  std::shared_ptr<const detail::NufftSetup> setup;
};

std::shared_ptr<detail::NufftSetup> make_setup(const Grid &grid, const NufftOptions &options) {
  const detail::NufftChoice c = detail::choose_nufft(grid, options);
  auto setup = std::make_shared<detail::NufftSetup>();
  setup->kernel = c.kernel;
  setup->dims = grid.dims();
  setup->width = c.kernel.width;
  setup->degree = c.poly.degree;
  setup->n = grid.extents();
  setup->g = c.g;
  setup->coef.assign(c.poly.coef.begin(), c.poly.coef.end());
  for (int a = 0; a < 3; ++a) {
    const auto A = static_cast<std::size_t>(a);
    int same_axis = -1; // an earlier axis of the same extent and oversampled size: same values
    for (int b = 0; b < a; ++b)
      if (grid.extent(b) == grid.extent(a) && c.g[static_cast<std::size_t>(b)] == c.g[A]) same_axis = b;
    if (same_axis >= 0) {
      setup->deapod[A] = setup->deapod[static_cast<std::size_t>(same_axis)];
    } else {
      const auto d = detail::deapodization(c.kernel, grid, a, c.g[A]);
      setup->deapod[A].assign(d.begin(), d.end());
    }
  }
  return setup;
}

} // namespace

std::shared_ptr<const detail::NufftSetup> detail::nufft_setup(const Grid &grid, const NufftOptions &options) {
  static std::mutex mutex;
  static auto &kept = *new std::vector<KeptSetup>();
  constexpr std::size_t kMaxKept = 16;
  auto same = [&](const KeptSetup &k) {
    return k.n == grid.extents() && k.tolerance == options.tolerance && k.width == options.width &&
           k.oversampling == options.oversampling;
  };
  {
    std::lock_guard lock(mutex);
    for (const auto &k : kept)
      if (same(k)) return k.setup;
  }
  std::shared_ptr<const NufftSetup> setup = make_setup(grid, options);
  std::lock_guard lock(mutex);
  if (kept.size() >= kMaxKept) kept.erase(kept.begin());
  kept.push_back({grid.extents(), options.tolerance, options.oversampling, options.width, setup});
  return setup;
}

} // namespace mri
