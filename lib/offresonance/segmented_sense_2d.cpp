// The fused 2D time-segmented SENSE Toeplitz normal (segmented_sense_2d.hpp).
#include "segmented_sense_2d.hpp"

#include <algorithm>
#include <mutex>
#include <omp.h>
#include <string>
#include <utility>

#include "fft/fftw_adapter.hpp"
#include "fft/grid_fft.hpp"
#include "mri/error.hpp"
#include "operator_checks.hpp"
#include "segmented_kernels.hpp"
#include "toeplitz/line_buffers.hpp"

namespace mri::detail {

namespace {

using Fft = Fftw<float>;

// Rows per FFTW call in passes 1 and 3: 16 complex floats side by side (128 B), as SenseToeplitz2d.
constexpr std::int64_t kRows = 16;
// Columns per task in pass 2: L x kColumns lines per coil are transformed together, and the
// block's kernels (L(L+1)/2 x kColumns x 2ny values: 590 KB at L = 8, 128^2) are read once for the
// group, a chunk at a time (36 KB) for all its coils.
constexpr std::int64_t kColumns = 8;
// Coils per pass: their L segments' rows are held at once (270 KB per coil and segment at 128^2).
// The coil sum runs in index order across passes, so the result does not depend on it.
constexpr int kCoilGroup = 4;

using line_buffers::line_distance;
using line_buffers::move_value;
using line_buffers::round_up;

// Floats between two columns' kernels: their segment_kernel_line plus one cache line, so that the
// columns do not all fall in one L1 set (a line is a multiple of 4 KB: 18 x 4 KB at L = 8, 128^2).
std::int64_t column_stride(int segments, std::int64_t py) { return segment_kernel_line(segments, py) + 16; }

cfloat *allocate(std::size_t n) {
  cfloat *p = Fft::alloc(n);
  if (!p) throw Error("SegmentedSenseToeplitz2d: cannot allocate " + std::to_string(n * sizeof(cfloat)) + " bytes");
  return p;
}

// howmany transforms of length n, `distance` values apart, from one buffer into another (FFTW's
// in-place transforms of these lines copy through a buffer of their own: the out-of-place ones
// take about 0.8 of their time), single-threaded (the lines run on the OpenMP team). keep_input:
// the input is left as it was (FFTW_PRESERVE_INPUT), else it may be overwritten.
Fft::plan plan_lines(int n, int howmany, int distance, cfloat *in, cfloat *out, int sign, bool keep_input) {
  fftwf_plan_with_nthreads(1);
  auto *i = reinterpret_cast<fftwf_complex *>(in), *o = reinterpret_cast<fftwf_complex *>(out);
  return fftwf_plan_many_dft(1, &n, howmany, i, nullptr, 1, distance, o, nullptr, 1, distance, sign,
                             FFTW_ESTIMATE | (keep_input ? FFTW_PRESERVE_INPUT : FFTW_DESTROY_INPUT));
}

// The plan on other buffers of the planned alignment (every buffer here starts on a cache line).
void execute(Fft::plan plan, cfloat *in, cfloat *out) {
  fftwf_execute_dft(plan, reinterpret_cast<fftwf_complex *>(in), reinterpret_cast<fftwf_complex *>(out));
}

cfloat *allocate_zeroed(std::size_t n) {
  cfloat *p = allocate(n);
  std::fill_n(p, n, cfloat{});
  return p;
}

} // namespace

// FFTW plans (kRows rows of the doubled width, L x kColumns columns of the doubled height, each
// direction, out of place) and the buffers: the coil group's rows, and per thread the group's
// column lines, the columns' input (its lines' lower halves zero for good: the forward transform
// keeps its input, nothing else writes there), a staging buffer (the other side of the other
// transforms), the product's scratch and kRows rows of S_c .* x or of the segment sum. Each part
// starts on a cache line.
struct SegmentedSenseToeplitz2d::Plans {
  std::int64_t row_distance, column_distance, segment_values, line_values, column_input_values, staging_values,
      scratch_values, thread_values;
  Fft::plan rows_forward = nullptr, rows_inverse = nullptr, columns_forward = nullptr, columns_inverse = nullptr;
  cfloat *rows = nullptr, *threads = nullptr;

  Plans(std::int64_t nx, std::int64_t ny, int segments, int team)
      : row_distance(line_distance(2 * nx)), column_distance(line_distance(2 * ny)),
        segment_values(round_up(ny, kRows) * row_distance), line_values(kCoilGroup * segments * kColumns * column_distance),
        column_input_values(segments * kColumns * column_distance),
        staging_values(std::max(kRows * row_distance, segments * kColumns * column_distance)),
        scratch_values(round_up((segment_product_scratch(segments) + 1) / 2, 8)),
        thread_values(line_values + column_input_values + staging_values + scratch_values + round_up(kRows * nx, 8)) {
    const std::int64_t px = 2 * nx, py = 2 * ny;
    const int column_lines = static_cast<int>(segments * kColumns);
    // FFTW_ESTIMATE does not touch the planning buffers.
    cfloat *in = Fft::alloc(static_cast<std::size_t>(staging_values)), *out = Fft::alloc(static_cast<std::size_t>(staging_values));
    if (in && out) {
      std::lock_guard lock(fftw_planner_mutex());
      rows_forward = plan_lines(int(px), int(kRows), int(row_distance), in, out, FFTW_FORWARD, false);
      rows_inverse = plan_lines(int(px), int(kRows), int(row_distance), in, out, FFTW_BACKWARD, false);
      columns_forward = plan_lines(int(py), column_lines, int(column_distance), in, out, FFTW_FORWARD, true);
      columns_inverse = plan_lines(int(py), column_lines, int(column_distance), in, out, FFTW_BACKWARD, false);
    }
    Fft::free(in);
    Fft::free(out);
    if (!rows_forward || !rows_inverse || !columns_forward || !columns_inverse) {
      release();
      throw Error("SegmentedSenseToeplitz2d: FFTW could not plan the line transforms");
    }
    try {
      // Every row's px values are written by pass 1 before they are read; a partial block's
      // unused column lines are transformed too: the thread buffers zeroed.
      rows = allocate(static_cast<std::size_t>(kCoilGroup * segments * segment_values));
      threads = allocate_zeroed(static_cast<std::size_t>(team * thread_values));
    } catch (...) {
      release();
      throw;
    }
  }
  ~Plans() { release(); }
  Plans(const Plans &) = delete;
  Plans &operator=(const Plans &) = delete;
  void release() {
    Fft::free(std::exchange(rows, nullptr));
    Fft::free(std::exchange(threads, nullptr));
    std::lock_guard lock(fftw_planner_mutex());
    for (Fft::plan *p : {&rows_forward, &rows_inverse, &columns_forward, &columns_inverse})
      if (*p) Fft::destroy(std::exchange(*p, nullptr));
  }
};

SegmentedSenseToeplitz2d::SegmentedSenseToeplitz2d(const SegmentedFieldOperator &op, std::span<const float> weights,
                                                   const CoilSensitivities &maps)
    : grid_(op.grid()), segments_(op.segmentation().segments), px_(op.grid().doubled().nx()),
      py_(op.grid().doubled().ny()), maps_(&maps), segmentation_(std::make_shared<const TimeSegmentation>(op.segmentation())),
      product_(select_segment_product()), threads_(omp_get_max_threads()) {
  if (!applies_to(grid_)) detail::invalid_argument("grid.nz()", grid_.nz(), "must be 1, with nx, ny > 1");
  if (maps.grid() != grid_) detail::invalid_argument("maps.grid().voxels()", maps.grid().voxels(), "must be op.grid()'s");
  detail::check_weights(weights, op.nufft().trajectory().size());
  const Grid p = grid_.doubled();
  const std::int64_t column_floats = column_stride(segments_, py_);
  // Written before it is read (no zero fill: 19 MB at L = 8, 128^2); a partial last chunk's
  // padding is never read.
  kernel_columns_ = std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(px_ * column_floats));
  {
    const GridFft<float> forward(p.extents(), FFTW_FORWARD, threads_);
    cfloat *scratch = allocate_zeroed(static_cast<std::size_t>(p.voxels()));
    try {
      segment_kernel_spectra(op, weights, forward, scratch, [&](std::size_t i, const cfloat *k) {
        // Tiles of kColumns columns: their chunks written row after row, each spectrum row's
        // tile read once.
        const auto pair = static_cast<std::int64_t>(i);
        const std::int64_t tiles = (px_ + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static) num_threads(threads_)
        for (std::int64_t tile = 0; tile < tiles; ++tile)
          for (std::int64_t y = 0, x0 = tile * kColumns; y < py_; ++y) {
            float *re = kernel_columns_.get() + y / kSegmentChunk * segment_kernel_chunk(segments_) + pair * 2 * kSegmentChunk +
                        y % kSegmentChunk;
            for (std::int64_t x = x0; x < std::min(px_, x0 + kColumns); ++x) {
              re[x * column_floats] = k[y * px_ + x].real();
              re[x * column_floats + kSegmentChunk] = k[y * px_ + x].imag();
            }
          }
      });
    } catch (...) {
      Fft::free(scratch);
      throw;
    }
    Fft::free(scratch);
  }
  plans_ = std::make_unique<Plans>(grid_.nx(), grid_.ny(), segments_, threads_);
}

SegmentedSenseToeplitz2d::~SegmentedSenseToeplitz2d() = default;
SegmentedSenseToeplitz2d::SegmentedSenseToeplitz2d(SegmentedSenseToeplitz2d &&) noexcept = default;
SegmentedSenseToeplitz2d &SegmentedSenseToeplitz2d::operator=(SegmentedSenseToeplitz2d &&) noexcept = default;

std::size_t SegmentedSenseToeplitz2d::bytes(const Grid &grid, int segments) {
  const auto L = static_cast<std::size_t>(segments);
  const auto pairs = L * (L + 1) / 2;
  const auto padded = static_cast<std::size_t>(grid.doubled().voxels());
  const auto rows = static_cast<std::size_t>(kCoilGroup) * L *
                    static_cast<std::size_t>(round_up(grid.ny(), kRows) * line_distance(2 * grid.nx()));
  return (pairs * padded + rows + (1 + std::min<std::size_t>(pairs, 8)) * padded) * sizeof(cfloat);
}

void SegmentedSenseToeplitz2d::apply(const Image &x, Image &out) const {
  detail::check_image_grid(x, grid_);
  detail::check_image_grid(out, grid_);
  const int coils = maps_->coils();
  for (int c0 = 0; c0 < coils; c0 += kCoilGroup) group(c0, std::min(kCoilGroup, coils - c0), x.data(), out.data());
}

// Coils first .. first + count - 1 into out (assigned at coil 0, else accumulated).
void SegmentedSenseToeplitz2d::group(int first, int count, const cfloat *x, cfloat *out) const {
  const int L = segments_;
  const std::int64_t nx = grid_.nx(), ny = grid_.ny(), px = px_, py = py_, N = nx * ny;
  const Plans &plans = *plans_;
  const std::int64_t rd = plans.row_distance, cd = plans.column_distance, sv = plans.segment_values;
  const std::int64_t row_blocks = (ny + kRows - 1) / kRows, column_blocks = (px + kColumns - 1) / kColumns;
  const std::int64_t column_floats = column_stride(L, py);
  const cfloat *phases = segmentation_->voxel_phases.data();
  const auto map = [&](int c) { return maps_->map(first + c).data(); };
  const auto rows_of = [&](int c, int l) { return plans.rows + (static_cast<std::int64_t>(c) * L + l) * sv; };
#pragma omp parallel num_threads(threads_)
  {
    cfloat *const thread = plans.threads + omp_get_thread_num() * plans.thread_values;
    cfloat *const lines = thread;
    cfloat *const column_input = lines + plans.line_values;
    cfloat *const staging = column_input + plans.column_input_values;
    float *const scratch = reinterpret_cast<float *>(staging + plans.staging_values);
    cfloat *const sum = staging + plans.staging_values + plans.scratch_values;
    std::vector<cfloat *> segment_lines(static_cast<std::size_t>(count * L));
    // 1. S_c .* E_l .* x into rows 0 .. ny - 1 of the doubled width, zero beyond; along x.
#pragma omp for schedule(static)
    for (std::int64_t task = 0; task < count * row_blocks; ++task) {
      const int c = static_cast<int>(task / row_blocks);
      const std::int64_t y0 = task % row_blocks * kRows, y_end = std::min(ny, y0 + kRows);
      const cfloat *s = map(c);
      for (std::int64_t y = y0; y < y_end; ++y)
        for (std::int64_t i = 0; i < nx; ++i) sum[(y - y0) * nx + i] = s[y * nx + i] * x[y * nx + i];
      for (int l = 0; l < L; ++l) {
        const cfloat *e = phases + l * N;
        for (std::int64_t r = 0; r < kRows; ++r) {
          cfloat *row = staging + r * rd;
          const std::int64_t y = y0 + r, filled = y < ny ? nx : 0;
          for (std::int64_t i = 0; i < filled; ++i) row[i] = sum[r * nx + i] * e[y * nx + i];
          std::fill(row + filled, row + px, cfloat{});
        }
        execute(plans.rows_forward, staging, rows_of(c, l) + y0 * rd);
      }
    }
    // 2. Columns: per coil, the L segments' columns gathered (the lower half zero), along y, the
    //    spectral product, back, the image's rows kept.
#pragma omp for schedule(static)
    for (std::int64_t b0 = 0; b0 < column_blocks; ++b0) {
      const std::int64_t x0 = b0 * kColumns, width = std::min(kColumns, px - x0);
      const auto coil_lines = [&](int c) { return lines + c * L * kColumns * cd; };
      for (int c = 0; c < count; ++c) {
        for (int l = 0; l < L; ++l) {
          const cfloat *from = rows_of(c, l) + x0;
          cfloat *to = column_input + l * kColumns * cd;
          for (std::int64_t y = 0; y < ny; ++y)
            for (std::int64_t b = 0; b < width; ++b) move_value(from + y * rd + b, to + b * cd + y);
        }
        execute(plans.columns_forward, column_input, coil_lines(c));
      }
      for (std::int64_t b = 0; b < width; ++b) {
        for (int c = 0; c < count; ++c)
          for (int l = 0; l < L; ++l)
            segment_lines[static_cast<std::size_t>(c * L + l)] = coil_lines(c) + (l * kColumns + b) * cd;
        product_(L, count, py, kernel_columns_.get() + (x0 + b) * column_floats, segment_lines.data(), scratch);
      }
      for (int c = 0; c < count; ++c) {
        execute(plans.columns_inverse, coil_lines(c), staging);
        for (int l = 0; l < L; ++l) {
          cfloat *to = rows_of(c, l) + x0;
          const cfloat *from = staging + l * kColumns * cd;
          for (std::int64_t y = 0; y < ny; ++y)
            for (std::int64_t b = 0; b < width; ++b) move_value(from + b * cd + y, to + y * rd + b);
        }
      }
    }
    // 3. Rows back along x; out = sum_c conj(S_c) .* sum_l conj(E_l) .* (the first nx values),
    //    coils and segments in order.
#pragma omp for schedule(static)
    for (std::int64_t rb = 0; rb < row_blocks; ++rb) {
      const std::int64_t y0 = rb * kRows, y_end = std::min(ny, y0 + kRows);
      for (int c = 0; c < count; ++c) {
        for (int l = 0; l < L; ++l) {
          execute(plans.rows_inverse, rows_of(c, l) + y0 * rd, staging);
          for (std::int64_t y = y0; y < y_end; ++y) {
            const cfloat *e = phases + l * N + y * nx, *w = staging + (y - y0) * rd;
            cfloat *acc = sum + (y - y0) * nx;
            if (l == 0)
              for (std::int64_t i = 0; i < nx; ++i) acc[i] = std::conj(e[i]) * w[i];
            else
              for (std::int64_t i = 0; i < nx; ++i) acc[i] += std::conj(e[i]) * w[i];
          }
        }
        for (std::int64_t y = y0; y < y_end; ++y) {
          const cfloat *s = map(c) + y * nx, *acc = sum + (y - y0) * nx;
          cfloat *o = out + y * nx;
          if (first + c == 0)
            for (std::int64_t i = 0; i < nx; ++i) o[i] = std::conj(s[i]) * acc[i];
          else
            for (std::int64_t i = 0; i < nx; ++i) o[i] = o[i] + std::conj(s[i]) * acc[i];
        }
      }
    }
  }
}

} // namespace mri::detail
