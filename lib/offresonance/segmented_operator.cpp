// The time-segmented field-corrected operator and its Toeplitz normal (offresonance.hpp).
#include <algorithm>
#include <functional>
#include <cmath>
#include <omp.h>
#include <string>

#include "fft/fftw_adapter.hpp"
#include "fft/grid_fft.hpp"
#include "mri/error.hpp"
#include "mri/kspace.hpp"
#include "mri/offresonance.hpp"
#include "mri_backend/q_trajectory.hpp"
#include "operator_checks.hpp"
#include "segment_product.hpp"
#include "segmented_kernels.hpp"

namespace mri {
namespace {

// One segment, every factor exactly 1: the plain NUFFT, bitwise (a zero field map).
bool is_identity(const TimeSegmentation &s) {
  if (s.segments != 1) return false;
  const auto one = [](cfloat v) { return v == cfloat(1.0f, 0.0f); };
  return std::all_of(s.sample_coefficients.begin(), s.sample_coefficients.end(), one) &&
         std::all_of(s.voxel_phases.begin(), s.voxel_phases.end(), one);
}

TimeSegmentation checked_segmentation(const FieldMap &field, const Grid &grid, std::span<const float> times,
                                      std::size_t samples, const SegmentationOptions &o) {
  if (field.grid() != grid)
    detail::invalid_argument("field.grid().voxels()", field.grid().voxels(),
                             "must be on the operator's grid (" + std::to_string(grid.voxels()) + " voxels; FieldMap::resampled)");
  if (times.size() != samples)
    detail::invalid_argument("sample_times.size()", times.size(), "must equal trajectory.size() = " + std::to_string(samples));
  return segment_field(field, times, o);
}

} // namespace

SegmentedFieldOperator::SegmentedFieldOperator(Trajectory trajectory, Grid grid, const FieldMap &field,
                                               std::span<const float> times, const SegmentationOptions &segmentation,
                                               NufftOptions nufft)
    : nufft_(std::move(trajectory), grid, nufft),
      segmentation_(std::make_shared<const TimeSegmentation>(
          checked_segmentation(field, grid, times, nufft_.trajectory().size(), segmentation))) {}

void SegmentedFieldOperator::forward(const Image &image, std::span<cfloat> samples) const {
  detail::check_image_grid(image, grid());
  detail::check_sample_count(samples.size(), nufft_.trajectory().size());
  const TimeSegmentation &s = *segmentation_;
  if (is_identity(s)) return nufft_.forward(image, samples);
  const std::size_t M = samples.size(), N = image.size();
  Image segment(grid());
  std::vector<cfloat> y(M);
  std::fill(samples.begin(), samples.end(), cfloat{});
  for (int l = 0; l < s.segments; ++l) {
    const cfloat *e = s.voxel_phases.data() + static_cast<std::size_t>(l) * N;
    const cfloat *b = s.sample_coefficients.data() + static_cast<std::size_t>(l) * M;
    for (std::size_t x = 0; x < N; ++x) segment[x] = image[x] * e[x];
    nufft_.forward(segment, y);
    for (std::size_t m = 0; m < M; ++m) samples[m] += b[m] * y[m];
  }
}

void SegmentedFieldOperator::adjoint(std::span<const cfloat> samples, Image &image) const {
  detail::check_image_grid(image, grid());
  detail::check_sample_count(samples.size(), nufft_.trajectory().size());
  const TimeSegmentation &s = *segmentation_;
  if (is_identity(s)) return nufft_.adjoint(samples, image);
  const std::size_t M = samples.size(), N = image.size(), L = static_cast<std::size_t>(s.segments);
  // conj(B_l) .* y for every l, then the L adjoints in one batched call (the plan grids them as coils).
  std::vector<cfloat> weighted(L * M), images(L * N);
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t m = 0; m < M; ++m) weighted[l * M + m] = std::conj(s.sample_coefficients[l * M + m]) * samples[m];
  nufft_.adjoint_coils(weighted.data(), s.segments, images.data());
  for (std::size_t x = 0; x < N; ++x) {
    cfloat acc{};
    for (std::size_t l = 0; l < L; ++l) acc += std::conj(s.voxel_phases[l * N + x]) * images[l * N + x];
    image[x] = acc;
  }
}

// The Toeplitz normal. Kernel spectra of the pairs l <= l' (FFT of K_ll' centred as QOperator's
// load_kernel does, over the padded voxels); K_l'l's spectrum is the conjugate of K_ll''s
// (K_l'l(d) = conj(K_ll'(-d))). Stored as segment_product.hpp's chunks over the padded grid's
// frequencies in index order (each chunk: every pair's real, then imaginary parts): the product
// runs by blocks of kBlock frequencies (its L inputs, L(L+1)/2 kernels, L outputs in cache) with
// the per-ISA multiply-adds of the fused 2D form.
struct SegmentedToeplitz::Plan {
  using Fft = detail::Fftw<float>;
  using GridFft = detail::GridFft<float>;
  static constexpr std::size_t kBlock = 256;
  static_assert(kBlock % detail::kSegmentChunk == 0, "a block is whole chunks of kernels");
  Grid padded;
  int segments = 1;
  std::size_t pairs = 1, blocks = 1;
  detail::SegmentProduct product = detail::select_segment_product();
  std::shared_ptr<const TimeSegmentation> seg;
  cfloat *spectra = nullptr;     // segment_kernel_line(L, frequencies) floats (segment_product.hpp)
  std::vector<cfloat *> buffers; // one padded image per segment
  GridFft forward, inverse;      // a team per transform (fewer segments than threads)
  // One single-threaded plan pair per segment, the segments' transforms run in parallel (as many
  // segments as threads or more: one parallel region instead of one per pass of each transform).
  std::vector<std::unique_ptr<GridFft>> segment_forward, segment_inverse;

  Plan(const Grid &p, int L)
      : padded(p), segments(L), pairs(static_cast<std::size_t>(L * (L + 1) / 2)),
        blocks((static_cast<std::size_t>(p.voxels()) + kBlock - 1) / kBlock),
        forward(p.extents(), FFTW_FORWARD, omp_get_max_threads()), inverse(p.extents(), FFTW_BACKWARD, omp_get_max_threads()) {
    const auto n = static_cast<std::size_t>(p.voxels());
    spectra = checked(Fft::alloc(static_cast<std::size_t>(detail::segment_kernel_line(L, p.voxels()) + 1) / 2));
    for (int i = 0; i < L; ++i) buffers.push_back(checked(Fft::alloc(n)));
    if (L >= omp_get_max_threads() && omp_get_max_threads() > 1)
      for (int i = 0; i < L; ++i) {
        segment_forward.push_back(std::make_unique<GridFft>(p.extents(), FFTW_FORWARD, 1));
        segment_inverse.push_back(std::make_unique<GridFft>(p.extents(), FFTW_BACKWARD, 1));
      }
  }
  ~Plan() {
    if (spectra) Fft::free(spectra);
    for (cfloat *p : buffers) Fft::free(p);
  }
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;
  cfloat *checked(cfloat *p) {
    if (!p) throw Error("SegmentedToeplitz: cannot allocate " + std::to_string(padded.voxels() * 8) + " bytes");
    return p;
  }
  float *kernels() const { return reinterpret_cast<float *>(spectra); }
  // Pair i's spectrum k (the padded grid's frequencies) into the chunks.
  void store(std::size_t i, const cfloat *k) {
    const std::int64_t n = padded.voxels(), chunk = detail::kSegmentChunk, floats = detail::segment_kernel_chunk(segments);
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < (n + chunk - 1) / chunk; ++c) {
      float *re = kernels() + c * floats + static_cast<std::int64_t>(i) * 2 * chunk;
      for (std::int64_t j = 0; j < std::min(chunk, n - c * chunk); ++j) {
        re[j] = k[c * chunk + j].real();
        re[chunk + j] = k[c * chunk + j].imag();
      }
    }
  }
  // f(l, transform) for every segment: in parallel with the single-threaded plans, else in turn
  // with the team's.
  template <class F> void each_segment(bool inverse_transform, F &&f) {
    if (segment_forward.empty()) {
      for (int l = 0; l < segments; ++l) f(l, inverse_transform ? inverse : forward);
      return;
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int l = 0; l < segments; ++l)
      f(l, inverse_transform ? *segment_inverse[static_cast<std::size_t>(l)] : *segment_forward[static_cast<std::size_t>(l)]);
  }
};

namespace detail {

void segment_kernel_spectra(const SegmentedFieldOperator &op, std::span<const float> weights, const GridFft<float> &forward,
                            cfloat *scratch, const std::function<void(std::size_t, const cfloat *)> &take) {
  const Trajectory &t = op.nufft().trajectory();
  const TimeSegmentation &s = op.segmentation();
  const int L = s.segments;
  const Grid grid = op.grid(), p = grid.doubled();
  const std::size_t M = t.size(), P = static_cast<std::size_t>(L * (L + 1) / 2);
  std::vector<cfloat> c(P * M);
  for (int l = 0; l < L; ++l)
    for (int lp = l; lp < L; ++lp) {
      const cfloat *bl = s.sample_coefficients.data() + static_cast<std::size_t>(l) * M;
      const cfloat *blp = s.sample_coefficients.data() + static_cast<std::size_t>(lp) * M;
      cfloat *out = c.data() + segment_pair(L, l, lp) * M;
      for (std::size_t m = 0; m < M; ++m) out[m] = std::conj(bl[m]) * blp[m] * (weights.empty() ? 1.0f : weights[m]);
    }
  // All pairs' Q(d) by one batched adjoint NUFFT on the doubled grid (nufft_q's construction).
  const NufftOperator q_nufft(detail::q_trajectory(t, grid), p, op.nufft().options());
  const auto n = static_cast<std::size_t>(p.voxels());
  // Kernels a chunk of pairs at a time (the batched NUFFT's block), so that the peak holds the
  // spectra and one chunk of Q, not every pair's Q as well.
  constexpr std::size_t kChunk = 8;
  std::vector<cfloat> q(std::min(P, kChunk) * n);
  const float scale = 1.0f / static_cast<float>(n);
  for (std::size_t i = 0; i < P; ++i) {
    if (i % kChunk == 0)
      q_nufft.adjoint_coils(c.data() + i * M, static_cast<int>(std::min(kChunk, P - i)), q.data());
    // Centred: (x, y, z) to ((x + nx/2) mod nx, ...), row by row in two contiguous halves.
    const cfloat *src = q.data() + (i % kChunk) * n;
    const std::int64_t nx = p.nx(), shift = nx / 2, rows = p.ny() * p.nz();
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t y = r % p.ny(), z = r / p.ny();
      const cfloat *from = src + p.index(0, y, z);
      cfloat *to = scratch + p.index(0, (y + p.ny() / 2) % p.ny(), (z + p.nz() / 2) % p.nz());
      for (std::int64_t x = 0; x < nx - shift; ++x) to[x + shift] = from[x] * scale;
      for (std::int64_t x = nx - shift; x < nx; ++x) to[x - (nx - shift)] = from[x] * scale;
    }
    forward.execute(scratch);
    take(i, scratch);
  }
}

} // namespace detail

SegmentedToeplitz::SegmentedToeplitz(const SegmentedFieldOperator &op, std::span<const float> weights) : grid_(op.grid()) {
  detail::check_weights(weights, op.nufft().trajectory().size());
  plan_ = std::make_unique<Plan>(grid_.doubled(), op.segmentation().segments);
  plan_->seg = std::make_shared<const TimeSegmentation>(op.segmentation());
  // buffers[0] is free until the first application.
  detail::segment_kernel_spectra(op, weights, plan_->forward, plan_->buffers[0],
                                 [&](std::size_t i, const cfloat *k) { plan_->store(i, k); });
}

std::size_t SegmentedToeplitz::kernel_bytes(const Grid &grid, int segments) {
  const auto pairs = static_cast<std::size_t>(segments) * static_cast<std::size_t>(segments + 1) / 2;
  const std::size_t padded = static_cast<std::size_t>(grid.doubled().voxels());
  return (pairs + static_cast<std::size_t>(segments) + std::min<std::size_t>(pairs, 8)) * padded * sizeof(cfloat);
}

SegmentedToeplitz::~SegmentedToeplitz() = default;
SegmentedToeplitz::SegmentedToeplitz(SegmentedToeplitz &&) noexcept = default;
SegmentedToeplitz &SegmentedToeplitz::operator=(SegmentedToeplitz &&) noexcept = default;

void SegmentedToeplitz::forward(const Image &in, Image &out) const {
  detail::check_image_grid(in, grid_);
  detail::check_image_grid(out, grid_);
  Plan &plan = *plan_;
  const TimeSegmentation &s = *plan.seg;
  const int L = s.segments;
  const Grid &p = plan.padded;
  const auto N = static_cast<std::size_t>(grid_.voxels());
  const auto n = static_cast<std::size_t>(p.voxels());
  const std::int64_t row = grid_.nx();
  using Fft = detail::GridFft<float>;
  const auto region = Fft::corner(grid_.extents());
  // X_l' = FFT(pad(E_l' .* in))
  plan.each_segment(false, [&](int l, const Fft &fft) {
    cfloat *buf = plan.buffers[static_cast<std::size_t>(l)];
    const cfloat *e = s.voxel_phases.data() + static_cast<std::size_t>(l) * N;
    std::fill_n(buf, n, cfloat{});
    for (std::int64_t z = 0; z < grid_.nz(); ++z)
      for (std::int64_t y = 0; y < grid_.ny(); ++y) {
        const std::int64_t src = grid_.index(0, y, z), dst = p.index(0, y, z);
        for (std::int64_t x = 0; x < row; ++x) buf[dst + x] = in[static_cast<std::size_t>(src + x)] * e[src + x];
      }
    fft.execute_pruned(buf, region, Fft::Pruning::ZeroOutside);
  });
  // Z_l = sum_l' K_ll' X_l', block by block, in place (the product reads a chunk's inputs before
  // it writes the chunk's outputs).
  constexpr std::size_t B = Plan::kBlock;
  const auto blocks = static_cast<std::int64_t>(plan.blocks);
  const std::int64_t chunk_floats = detail::segment_kernel_chunk(L);
#pragma omp parallel
  {
    std::vector<float> scratch(static_cast<std::size_t>(detail::segment_product_scratch(L)));
    std::vector<cfloat *> lines(static_cast<std::size_t>(L));
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::size_t i0 = static_cast<std::size_t>(b) * B, count = std::min(B, n - i0);
      for (int l = 0; l < L; ++l) lines[static_cast<std::size_t>(l)] = plan.buffers[static_cast<std::size_t>(l)] + i0;
      plan.product(L, 1, static_cast<std::int64_t>(count),
                   plan.kernels() + static_cast<std::int64_t>(i0) / detail::kSegmentChunk * chunk_floats, lines.data(),
                   scratch.data());
    }
  }
  plan.each_segment(true, [&](int l, const Fft &fft) {
    fft.execute_pruned(plan.buffers[static_cast<std::size_t>(l)], region, Fft::Pruning::OnlyImageRead);
  });
  // out = sum_l conj(E_l) .* crop(IFFT(Z_l)), row by row.
  const std::int64_t rows = grid_.ny() * grid_.nz();
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t y = r % grid_.ny(), z = r / grid_.ny();
    const std::int64_t dst = grid_.index(0, y, z), src = p.index(0, y, z);
    cfloat *o = out.data() + dst;
    std::fill_n(o, row, cfloat{});
    for (int l = 0; l < L; ++l) {
      const cfloat *buf = plan.buffers[static_cast<std::size_t>(l)] + src;
      const cfloat *e = s.voxel_phases.data() + static_cast<std::size_t>(l) * N + dst;
      for (std::int64_t x = 0; x < row; ++x) o[x] += std::conj(e[x]) * buf[x];
    }
  }
}

} // namespace mri
