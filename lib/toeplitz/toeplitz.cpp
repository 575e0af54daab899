// Q on the doubled grid and the Toeplitz normal operator F^H W F (see toeplitz.hpp).
#include "mri/toeplitz.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <omp.h>
#include <string>

#include "backend.hpp"
#include "fft/fftw_adapter.hpp"
#include "fft/grid_fft.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/kspace.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "operator_checks.hpp"
#include "trajectory/trajectory_range.hpp"
#include "mri_backend/direct_sums.hpp"

namespace mri {

struct QOperator::Plan {
  using Fft = detail::Fftw<float>;
  Grid padded;
  cfloat *buffer = nullptr; // the zero-padded image, transformed in place
  cfloat *kernel = nullptr; // FFT(Q) / (number of padded voxels): the Toeplitz kernel
  detail::GridFft<float> forward, inverse;

  explicit Plan(const Grid &p)
      : padded(p), forward(p.extents(), FFTW_FORWARD, omp_get_max_threads()),
        inverse(p.extents(), FFTW_BACKWARD, omp_get_max_threads()) {
    const auto n = static_cast<std::size_t>(p.voxels());
    buffer = Fft::alloc(n);
    kernel = Fft::alloc(n);
    if (!buffer || !kernel) {
      release();
      throw Error("QOperator: cannot allocate " + std::to_string(2 * n * 8) + " bytes");
    }
  }
  ~Plan() { release(); }
  void release() {
    if (buffer) Fft::free(buffer);
    if (kernel) Fft::free(kernel);
    buffer = kernel = nullptr;
  }
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;
};

namespace {

// Q(d) is stored centred (index i <-> offset i - L/2); the circular convolution wants offset d
// at index d mod L: an ifftshift along each axis.
void load_kernel(const Image &q, cfloat *kernel) {
  const Grid &g = q.grid();
  for (std::int64_t z = 0; z < g.nz(); ++z)
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const std::int64_t sx = (x + g.nx() / 2) % g.nx(), sy = (y + g.ny() / 2) % g.ny(),
                           sz = (z + g.nz() / 2) % g.nz();
        kernel[g.index(sx, sy, sz)] = q.at(x, y, z);
      }
}

} // namespace

QOperator::QOperator(const Trajectory &any_trajectory, std::span<const float> weights, const Grid &grid,
                     OperatorOptions options)
    : grid_(grid) {
  if (any_trajectory.empty()) detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  std::optional<Trajectory> storage;
  const Trajectory &trajectory = detail::inside_grid(any_trajectory, grid, storage);
  detail::check_weights(weights, trajectory.size());
  const Backend backend = detail::resolve_backend(options.backend, "QOperator");
  std::vector<cfloat> w(trajectory.size(), cfloat(1.0f));
  std::copy(weights.begin(), weights.end(), w.begin());
  const Grid padded = grid.doubled();
  q_ = Image(padded);
  // Q is the F^H D sum with D = w on the doubled grid but the original period (Stone et al.
  // 2008's Q; docs/architecture.md).
  if (backend == Backend::Cuda) {
    const detail::CudaBackend &cuda = *detail::cuda_plugin().backend; // resolve_backend checked it
    cuda.fourier(trajectory, padded, grid)->adjoint(cuda.resolve_policy(options.policy, options.precision), w.data(),
                                                   q_.data());
  } else if (options.precision == Precision::Float64)
    detail::adjoint_sum_f64(trajectory, w, padded, grid, q_.data());
  else
    detail::adjoint_sum_f32(trajectory, w, padded, grid, q_.data());

  make_kernel();
}

void QOperator::make_kernel() {
  const Grid &padded = q_.grid();
  plan_ = std::make_unique<Plan>(padded);
  load_kernel(q_, plan_->kernel);
  plan_->forward.execute(plan_->kernel);
  // FFTW's inverse is unnormalised: 1/L. Only the real part is kept (spectrum(): Q is Hermitian on
  // the offsets the crop uses, the imaginary part is rounding), so that an operator made here and
  // one made from its stored spectrum (the Q cache, from_spectrum) are the same bits: a batch's
  // images do not depend on which item computed Q and which loaded it.
  const float scale = 1.0f / static_cast<float>(padded.voxels());
  for (std::int64_t i = 0; i < padded.voxels(); ++i) plan_->kernel[i] = cfloat(plan_->kernel[i].real() * scale, 0.0f);
}

QOperator QOperator::from_q(const Grid &grid, Image q) {
  if (q.grid() != grid.doubled())
    detail::invalid_argument("q.grid().voxels()", q.grid().voxels(),
                             "must be on grid.doubled() (" + std::to_string(grid.doubled().voxels()) + " voxels)");
  for (std::size_t i = 0; i < q.size(); ++i)
    if (!std::isfinite(q.data()[i].real()) || !std::isfinite(q.data()[i].imag()))
      detail::invalid_argument("q[" + std::to_string(i) + "]", q.data()[i], "must be finite");
  QOperator op(grid);
  op.q_ = std::move(q);
  op.make_kernel();
  return op;
}

QOperator::QOperator(const Grid &grid) : grid_(grid) {}

QOperator QOperator::from_spectrum(const Grid &grid, std::span<const float> spectrum) {
  const Grid padded = grid.doubled();
  if (spectrum.size() != static_cast<std::size_t>(padded.voxels()))
    detail::invalid_argument("spectrum.size()", spectrum.size(),
                             "must be grid.doubled().voxels() = " + std::to_string(padded.voxels()));
  QOperator q(grid);
  q.plan_ = std::make_unique<Plan>(padded);
  for (std::size_t i = 0; i < spectrum.size(); ++i) q.plan_->kernel[i] = cfloat(spectrum[i], 0.0f);
  return q;
}

std::vector<float> QOperator::spectrum() const {
  // The kernel is FFT(Q)/L; Q is Hermitian on the offsets the crop uses, so the real part alone
  // gives the same operator (its imaginary part is rounding plus the unused d = -n planes).
  std::vector<float> s(static_cast<std::size_t>(plan_->padded.voxels()));
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = plan_->kernel[i].real();
  return s;
}

QOperator::~QOperator() = default;
QOperator::QOperator(QOperator &&) noexcept = default;
QOperator &QOperator::operator=(QOperator &&) noexcept = default;

void QOperator::forward(const Image &in, Image &out) const {
  detail::check_image_grid(in, grid_);
  detail::check_image_grid(out, grid_);
  const Grid &p = plan_->padded;
  cfloat *pad = plan_->buffer;
  const cfloat *kernel = plan_->kernel;
  const auto row = static_cast<std::size_t>(grid_.nx());
  std::fill_n(pad, p.voxels(), cfloat{});
  // Zero-pad: voxel (x, y, z) of the image sits at (x, y, z) of the padded grid.
  for (std::int64_t z = 0; z < grid_.nz(); ++z)
    for (std::int64_t y = 0; y < grid_.ny(); ++y)
      std::copy_n(in.data() + grid_.index(0, y, z), row, pad + p.index(0, y, z));
  using Fft = detail::GridFft<float>;
  plan_->forward.execute_pruned(pad, Fft::corner(grid_.extents()), Fft::Pruning::ZeroOutside);
  const std::int64_t n = p.voxels();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) pad[i] *= kernel[i];
  plan_->inverse.execute_pruned(pad, Fft::corner(grid_.extents()), Fft::Pruning::OnlyImageRead);
  for (std::int64_t z = 0; z < grid_.nz(); ++z)
    for (std::int64_t y = 0; y < grid_.ny(); ++y)
      std::copy_n(pad + p.index(0, y, z), row, out.data() + grid_.index(0, y, z));
}

} // namespace mri
