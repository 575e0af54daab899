// The fused 2D SENSE Toeplitz normal (sense_toeplitz_2d.hpp).
#include "sense_toeplitz_2d.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <omp.h>
#include <string>
#include <utility>

#include "fft/fftw_adapter.hpp"
#include "line_buffers.hpp"
#include "mri/error.hpp"

namespace mri::detail {

namespace {

using Fft = Fftw<float>;

// Rows or columns transformed per FFTW call: 16 complex floats side by side (128 B) per gathered
// element, as GridFft's blocks.
constexpr std::int64_t kBlock = 16;
// Coils per pass: their rows are held at once (1 MB each at 256^2), and the coil sum runs in
// index order across passes, so the result does not depend on this constant's relation to the
// thread count.
constexpr int kCoilGroup = 4;

using line_buffers::line_distance;
using line_buffers::move_value;
using line_buffers::round_up;

// apply()'s coil rows and line buffers: one per calling thread, grown to the largest operator it
// served (the frames' operators, applied one after another, share it; batch items run on their
// own host threads). Zeroed when allocated: a partial block's unused lines are transformed too.
class Workspace {
public:
  ~Workspace() { Fft::free(data_); }
  cfloat *values(std::size_t n) {
    if (n > size_) {
      Fft::free(std::exchange(data_, nullptr));
      size_ = 0;
      data_ = Fft::alloc(n);
      if (!data_) throw Error("SenseToeplitz2d: cannot allocate " + std::to_string(n * sizeof(cfloat)) + " bytes");
      std::fill_n(data_, n, cfloat{});
      size_ = n;
    }
    return data_;
  }

private:
  cfloat *data_ = nullptr;
  std::size_t size_ = 0;
};
thread_local Workspace workspace;

} // namespace

// FFTW plans of kBlock lines: rows of the doubled width at row_distance, columns of the doubled
// height at column_distance, each direction.
struct SenseToeplitz2d::Plans {
  std::int64_t row_distance, column_distance;
  Fft::plan rows_forward = nullptr, rows_inverse = nullptr, columns_forward = nullptr, columns_inverse = nullptr;

  Plans(std::int64_t px, std::int64_t py) : row_distance(line_distance(px)), column_distance(line_distance(py)) {
    const std::int64_t n = kBlock * std::max(row_distance, column_distance);
    cfloat *scratch = Fft::alloc(static_cast<std::size_t>(n)); // FFTW_ESTIMATE does not touch it
    if (!scratch) throw Error("SenseToeplitz2d: cannot allocate " + std::to_string(n * sizeof(cfloat)) + " bytes");
    {
      std::lock_guard lock(fftw_planner_mutex());
      const int rows = static_cast<int>(kBlock);
      rows_forward = Fft::make_lines(int(px), rows, int(row_distance), scratch, FFTW_FORWARD);
      rows_inverse = Fft::make_lines(int(px), rows, int(row_distance), scratch, FFTW_BACKWARD);
      columns_forward = Fft::make_lines(int(py), rows, int(column_distance), scratch, FFTW_FORWARD);
      columns_inverse = Fft::make_lines(int(py), rows, int(column_distance), scratch, FFTW_BACKWARD);
    }
    Fft::free(scratch);
    if (!rows_forward || !rows_inverse || !columns_forward || !columns_inverse) {
      release();
      throw Error("SenseToeplitz2d: FFTW could not plan the line transforms");
    }
  }
  ~Plans() { release(); }
  Plans(const Plans &) = delete;
  Plans &operator=(const Plans &) = delete;
  void release() {
    std::lock_guard lock(fftw_planner_mutex());
    for (Fft::plan *p : {&rows_forward, &rows_inverse, &columns_forward, &columns_inverse})
      if (*p) Fft::destroy(std::exchange(*p, nullptr));
  }
};

SenseToeplitz2d::SenseToeplitz2d(const QOperator &q, const CoilSensitivities &maps)
    : grid_(q.grid()), px_(q.grid().doubled().nx()), py_(q.grid().doubled().ny()), maps_(&maps),
      threads_(omp_get_max_threads()) {
  if (!applies_to(grid_)) detail::invalid_argument("grid.nz()", grid_.nz(), "must be 1, with nx, ny > 1");
  if (maps.grid() != grid_) detail::invalid_argument("maps.grid().voxels()", maps.grid().voxels(), "must be q.grid()'s");
  const std::vector<float> spectrum = q.spectrum();
  kernel_columns_.resize(spectrum.size());
  for (std::int64_t y = 0; y < py_; ++y)
    for (std::int64_t x = 0; x < px_; ++x) kernel_columns_[x * py_ + y] = spectrum[y * px_ + x];
  plans_ = std::make_unique<Plans>(px_, py_);
}

SenseToeplitz2d::~SenseToeplitz2d() = default;
SenseToeplitz2d::SenseToeplitz2d(SenseToeplitz2d &&) noexcept = default;
SenseToeplitz2d &SenseToeplitz2d::operator=(SenseToeplitz2d &&) noexcept = default;

void SenseToeplitz2d::apply(const Image &x, Image &out) const {
  const int coils = maps_->coils();
  for (int c0 = 0; c0 < coils; c0 += kCoilGroup) group(c0, std::min(kCoilGroup, coils - c0), x.data(), out.data());
}

// Coils first .. first + count - 1 into out (assigned at coil 0, else accumulated).
void SenseToeplitz2d::group(int first, int count, const cfloat *x, cfloat *out) const {
  const std::int64_t nx = grid_.nx(), ny = grid_.ny(), px = px_, py = py_;
  const std::int64_t rd = plans_->row_distance, cd = plans_->column_distance;
  const std::int64_t row_blocks = (ny + kBlock - 1) / kBlock, column_blocks = (px + kBlock - 1) / kBlock;
  const std::int64_t coil_values = round_up(ny, kBlock) * rd, line_values = kBlock * cd;
  cfloat *const rows = workspace.values(static_cast<std::size_t>(kCoilGroup * coil_values + threads_ * line_values));
  cfloat *const lines = rows + kCoilGroup * coil_values;
  const Plans &plans = *plans_;
  const auto map = [&](int c) { return maps_->map(first + c).data(); };
#pragma omp parallel num_threads(threads_)
  {
    // 1. S_c .* x into rows 0 .. ny - 1 of the doubled width, zero beyond; along x.
#pragma omp for schedule(static)
    for (std::int64_t task = 0; task < count * row_blocks; ++task) {
      const int c = static_cast<int>(task / row_blocks);
      const std::int64_t y0 = task % row_blocks * kBlock;
      cfloat *block = rows + c * coil_values + y0 * rd;
      const cfloat *s = map(c);
      for (std::int64_t r = 0; r < kBlock; ++r) {
        cfloat *row = block + r * rd;
        const std::int64_t y = y0 + r, filled = y < ny ? nx : 0;
        for (std::int64_t i = 0; i < filled; ++i) row[i] = s[y * nx + i] * x[y * nx + i];
        std::fill(row + filled, row + px, cfloat{});
      }
      Fft::execute(plans.rows_forward, block);
    }
    // 2. Columns: gathered (the lower half zero), along y, times K, back, the image's rows kept.
    cfloat *buffer = lines + omp_get_thread_num() * line_values;
#pragma omp for schedule(static)
    for (std::int64_t task = 0; task < count * column_blocks; ++task) {
      const int c = static_cast<int>(task / column_blocks);
      const std::int64_t x0 = task % column_blocks * kBlock, width = std::min(kBlock, px - x0);
      cfloat *coil = rows + c * coil_values + x0;
      for (std::int64_t y = 0; y < ny; ++y)
        for (std::int64_t b = 0; b < width; ++b) move_value(coil + y * rd + b, buffer + b * cd + y);
      for (std::int64_t b = 0; b < width; ++b) std::fill(buffer + b * cd + ny, buffer + b * cd + py, cfloat{});
      Fft::execute(plans.columns_forward, buffer);
      for (std::int64_t b = 0; b < width; ++b) {
        const float *k = kernel_columns_.data() + (x0 + b) * py;
        cfloat *line = buffer + b * cd;
        for (std::int64_t y = 0; y < py; ++y) line[y] = cfloat(line[y].real() * k[y], line[y].imag() * k[y]);
      }
      Fft::execute(plans.columns_inverse, buffer);
      for (std::int64_t y = 0; y < ny; ++y)
        for (std::int64_t b = 0; b < width; ++b) move_value(buffer + b * cd + y, coil + y * rd + b);
    }
    // 3. Rows back along x; out = sum_c conj(S_c) .* (the first nx values), coils in order.
#pragma omp for schedule(static)
    for (std::int64_t rb = 0; rb < row_blocks; ++rb) {
      for (int c = 0; c < count; ++c) Fft::execute(plans.rows_inverse, rows + c * coil_values + rb * kBlock * rd);
      const std::int64_t y_end = std::min(ny, (rb + 1) * kBlock);
      for (std::int64_t y = rb * kBlock; y < y_end; ++y) {
        cfloat *o = out + y * nx;
        for (int c = 0; c < count; ++c) {
          const cfloat *s = map(c) + y * nx, *w = rows + c * coil_values + y * rd;
          if (first + c == 0)
            for (std::int64_t i = 0; i < nx; ++i) o[i] = std::conj(s[i]) * w[i];
          else
            for (std::int64_t i = 0; i < nx; ++i) o[i] = o[i] + std::conj(s[i]) * w[i];
        }
      }
    }
  }
}

} // namespace mri::detail
