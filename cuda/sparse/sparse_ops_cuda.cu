// SparseOps<DeviceImage>: the sparse terms' transforms and proximal maps as device kernels. Each
// output sample is one call of the per-sample definitions of mri/detail/sparse_stencil.hpp (the
// host's SparseOps<Image> calls the same ones), so the two backends agree to float rounding order.
//
// Wavelets: one out-of-place pass per (level, axis), ping-ponging between the output and a
// scratch image. A pass transforms every line along its axis inside the level's box (the
// approximation extents reached so far) and copies the samples outside the box unchanged, so both
// buffers hold the whole coefficient array after every pass. A level splits each of its axes over
// the same box (the separable 2D/3D Mallat step), then the box shrinks to the approximation
// extents of the split axes; the inverse runs the passes backwards, axes in z, y, x order.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "device.cuh"
#include "device_buffer.cuh"
#include "mri/detail/sparse_stencil.hpp"
#include "mri/error.hpp"
#include "nufft/gridding_resources.cuh"
#include "sparse/sparse_ops_cuda.hpp"

namespace mri::cuda {
namespace {

constexpr int kThreads = 256; // every kernel here
constexpr int kPerThread = 8; // reduction blocks = ceil(n / (kThreads * kPerThread)), capped
constexpr int kMaxReduceBlocks = 1024;

// The filters, indexed by the Wavelet enum: every thread of a warp reads the same tap at once
// (a constant-cache broadcast).
__constant__ ::mri::detail::WaveletFilter c_filters[::mri::detail::kWaveletFamilies] = {
    ::mri::detail::kWaveletFilters[0], ::mri::detail::kWaveletFilters[1], ::mri::detail::kWaveletFilters[2]};

// Three extents (a grid, a box, a shift) passed by value to the kernels.
struct Extents {
  long long n[3];
};
Extents extents_of(const std::array<std::int64_t, 3> &e) { return {{e[0], e[1], e[2]}}; }

// The axes of a stacked vector's blocks, in block order.
struct AxisList {
  int count;
  int axis[3];
};

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }
const float2 *dev(const DeviceImage &v) { return reinterpret_cast<const float2 *>(v.data()); }
float2 *dev(DeviceImage &v) { return reinterpret_cast<float2 *>(v.data()); }

int elementwise_blocks(long long n) {
  return static_cast<int>(
      std::clamp<long long>((n + kThreads - 1) / kThreads, 1, 32LL * detail::multiprocessor_count()));
}
// A function of n alone (never of the device): the reductions' summation order is reproducible.
int reduce_blocks(long long n) {
  return static_cast<int>(
      std::clamp<long long>((n + kThreads * kPerThread - 1) / (kThreads * kPerThread), 1, kMaxReduceBlocks));
}

// c[a] for a runtime axis, without indexing the array (which would put it in local memory).
__device__ long long pick(const long long c[3], int a) { return a == 0 ? c[0] : a == 1 ? c[1] : c[2]; }
__device__ long long voxel_count(const Extents &g) { return g.n[0] * g.n[1] * g.n[2]; }
__device__ long long axis_stride(const Extents &g, int axis) {
  return axis == 0 ? 1 : axis == 1 ? g.n[0] : g.n[0] * g.n[1];
}
// Voxel index = x + nx (y + ny z) (mri/grid.hpp).
__device__ void coordinates(long long v, const Extents &g, long long c[3]) {
  c[0] = v % g.n[0];
  const long long r = v / g.n[0];
  c[1] = r % g.n[1];
  c[2] = r / g.n[1];
}
__device__ bool inside(const long long c[3], const Extents &box) {
  return c[0] < box.n[0] && c[1] < box.n[1] && c[2] < box.n[2];
}
__device__ long long grid_stride() { return static_cast<long long>(gridDim.x) * blockDim.x; }
__device__ long long first_index() { return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; }

// One wavelet level along `axis` for the lines inside `box`; the rest copied.
template <bool Inverse>
__global__ void __launch_bounds__(kThreads)
    wavelet_pass_kernel(const float2 *__restrict__ in, float2 *__restrict__ out, Extents grid, Extents box, int axis,
                        int family) {
  const long long voxels = voxel_count(grid), stride = axis_stride(grid, axis), n = pick(box.n, axis);
  const double *h = c_filters[family].h;
  const int taps = c_filters[family].taps;
  for (long long v = first_index(); v < voxels; v += grid_stride()) {
    long long c[3];
    coordinates(v, grid, c);
    if (!inside(c, box)) {
      out[v] = in[v];
      continue;
    }
    const long long i = pick(c, axis);
    const float *line = reinterpret_cast<const float *>(in + (v - i * stride));
    float re, im;
    if constexpr (Inverse)
      ::mri::detail::wavelet_inverse_sample(line, stride, n, i, h, taps, re, im);
    else
      ::mri::detail::wavelet_forward_sample(line, stride, n, i, h, taps, re, im);
    out[v] = make_float2(re, im);
  }
}

// out[(i + shift) mod n] = in[i] per axis: each output voxel reads its source.
__global__ void __launch_bounds__(kThreads)
    shift_kernel(const float2 *__restrict__ in, float2 *__restrict__ out, Extents grid, Extents shift) {
  const long long voxels = voxel_count(grid);
  for (long long v = first_index(); v < voxels; v += grid_stride()) {
    long long c[3];
    coordinates(v, grid, c);
    long long s[3];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      s[a] = c[a] - shift.n[a];
      if (s[a] < 0) s[a] += grid.n[a];
    }
    out[v] = in[s[0] + grid.n[0] * (s[1] + grid.n[1] * s[2])];
  }
}

// g[v + b voxels] = D_{axes[b]} x [v].
__global__ void __launch_bounds__(kThreads)
    gradient_forward_kernel(const float2 *__restrict__ x, float2 *__restrict__ g, Extents grid, AxisList axes) {
  const long long voxels = voxel_count(grid);
  const float *xf = reinterpret_cast<const float *>(x);
  for (long long v = first_index(); v < voxels; v += grid_stride()) {
    long long c[3];
    coordinates(v, grid, c);
    for (int b = 0; b < axes.count; ++b) {
      const int a = axes.axis[b];
      float re, im;
      ::mri::detail::difference_forward_sample(xf, v, pick(c, a), pick(grid.n, a), axis_stride(grid, a), re,
                                                   im);
      g[v + b * voxels] = make_float2(re, im);
    }
  }
}

// x[v] = sum_b (D_{axes[b]}^H g_b)[v].
__global__ void __launch_bounds__(kThreads)
    gradient_adjoint_kernel(const float2 *__restrict__ g, float2 *__restrict__ x, Extents grid, AxisList axes) {
  const long long voxels = voxel_count(grid);
  for (long long v = first_index(); v < voxels; v += grid_stride()) {
    long long c[3];
    coordinates(v, grid, c);
    float re = 0.0f, im = 0.0f;
    for (int b = 0; b < axes.count; ++b) {
      const int a = axes.axis[b];
      const float *gb = reinterpret_cast<const float *>(g + b * voxels);
      ::mri::detail::difference_adjoint_add(gb, v, pick(c, a), pick(grid.n, a), axis_stride(grid, a), re, im);
    }
    x[v] = make_float2(re, im);
  }
}

// One dual step of TV denoising at every voxel (mri/detail/sparse_stencil.hpp's tv_dual_step_voxel).
__global__ void __launch_bounds__(kThreads)
    tv_dual_step_kernel(const float2 *__restrict__ u, float2 *__restrict__ p, float2 *__restrict__ q, Extents grid,
                        AxisList axes, bool isotropic, float step, float radius, float momentum) {
  const long long voxels = voxel_count(grid);
  const float *uf = reinterpret_cast<const float *>(u);
  float *pf = reinterpret_cast<float *>(p), *qf = reinterpret_cast<float *>(q);
  for (long long v = first_index(); v < voxels; v += grid_stride()) {
    long long c[3];
    coordinates(v, grid, c);
    std::int64_t pos[3], extent[3], stride[3];
    for (int b = 0; b < axes.count; ++b) {
      const int a = axes.axis[b];
      pos[b] = pick(c, a);
      extent[b] = pick(grid.n, a);
      stride[b] = axis_stride(grid, a);
    }
    ::mri::detail::tv_dual_step_voxel(uf, pf, qf, v, voxels, axes.count, pos, extent, stride, isotropic, step, radius,
                                      momentum);
  }
}

// Sum over the block in a fixed order (shuffles, then the warps' sums in order); valid in thread 0.
__device__ double block_sum(double v) {
  __shared__ double warp_sums[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  double s = 0.0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kThreads / 32; ++w) s += warp_sums[w];
  return s;
}

// Per block: the sum of the norms of the groups (base voxels) outside `keep` in its grid-stride
// share, each group shrunk in place when Shrink.
template <bool Shrink>
__global__ void __launch_bounds__(kThreads)
    group_kernel(float2 *z, Extents base, Extents keep, int group_size, double t, double *partial) {
  const long long voxels = voxel_count(base);
  float *zf = reinterpret_cast<float *>(z);
  double acc = 0.0;
  for (long long v = first_index(); v < voxels; v += grid_stride()) {
    long long c[3];
    coordinates(v, base, c);
    if (inside(c, keep)) continue;
    if constexpr (Shrink)
      acc += ::mri::detail::shrink_group(zf, v, voxels, group_size, t);
    else
      acc += ::mri::detail::group_norm(zf, v, voxels, group_size);
  }
  const double s = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// One block: the blocks' partial sums added in a fixed order.
__global__ void __launch_bounds__(kThreads) sum_partials_kernel(const double *partial, int count, double *result) {
  double t = 0.0;
  for (int b = threadIdx.x; b < count; b += blockDim.x) t += partial[b];
  const double s = block_sum(t);
  if (threadIdx.x == 0) *result = s;
}

// The calling thread's reduction scratch on the current device (kMaxReduceBlocks partial sums and
// the result). One reduction per thread is in flight at a time: each waits for its result.
double *reduction_scratch() {
  int device = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  thread_local std::vector<detail::DeviceBuffer<double>> buffers;
  if (buffers.size() <= static_cast<std::size_t>(device)) buffers.resize(static_cast<std::size_t>(device) + 1);
  return buffers[static_cast<std::size_t>(device)].grow(kMaxReduceBlocks + 1);
}

void check_launch() { MRI_CUDA_CHECK(cudaGetLastError()); }

std::string describe(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

void require_grid(const DeviceImage &v, const Grid &grid, const char *name) {
  if (v.empty() || v.grid() != grid)
    mri::detail::invalid_argument(name, v.empty() ? std::string("empty") : describe(v.grid()),
                                  "must be a vector on the grid " + describe(grid));
}

// `out` on `grid`: reallocated on `stream` when it is not.
void ensure_grid(DeviceImage &out, const Grid &grid, StreamHandle stream) {
  if (out.empty() || out.grid() != grid) out = DeviceImage(grid, stream);
}

int family_index(Wavelet w) {
  const int f = static_cast<int>(w);
  if (f < 0 || f >= ::mri::detail::kWaveletFamilies)
    mri::detail::invalid_argument("wavelet", f, "is not a known wavelet family");
  return f;
}

// One wavelet pass: the box of approximation extents it transforms and the axis.
struct WaveletPass {
  Extents box;
  int axis;
};

// The forward passes in order: per level, the axes still splitting in x, y, z order over the
// level's box; then the box shrinks along them (mri/detail/sparse_stencil.hpp's approximation
// extent).
std::vector<WaveletPass> forward_passes(const WaveletLevels &levels) {
  const int taps = ::mri::detail::kWaveletFilters[family_index(levels.wavelet)].taps;
  Extents box = extents_of(levels.grid.extents());
  std::vector<WaveletPass> passes;
  const int max_levels = *std::max_element(levels.levels.begin(), levels.levels.end());
  for (int level = 0; level < max_levels; ++level) {
    for (int a = 0; a < 3; ++a)
      if (levels.levels[static_cast<std::size_t>(a)] > level) {
        // The stencil's periodised indices wrap once (wrap_once): a split line keeps at least the
        // filter's taps, as wavelet_levels' kWaveletMinSplitExtent rule guarantees; a hand-made
        // WaveletLevels splitting further would read past its line.
        if (box.n[a] - box.n[a] % 2 < taps)
          mri::detail::invalid_argument("wavelet levels along axis " + std::to_string(a),
                                        levels.levels[static_cast<std::size_t>(a)],
                                        "more splits than the extent " + std::to_string(levels.grid.extent(a)) +
                                            " allows for " + to_string(levels.wavelet));
        passes.push_back({box, a});
      }
    for (int a = 0; a < 3; ++a)
      if (levels.levels[static_cast<std::size_t>(a)] > level)
        box.n[a] = ::mri::detail::wavelet_approximation_extent(box.n[a]);
  }
  return passes;
}

// Runs the passes from `src_in` into `dst` (on levels.grid), the last one writing `dst`; the others
// alternate with a scratch image so that no pass reads what it writes.
void run_wavelet_passes(const WaveletLevels &levels, const std::vector<WaveletPass> &passes, bool inverse,
                        const DeviceImage &src_in, DeviceImage &dst) {
  const Grid &grid = levels.grid;
  require_grid(src_in, grid, inverse ? "wavelet_inverse input" : "wavelet_forward input");
  const int family = family_index(levels.wavelet);
  const std::size_t count = passes.size();
  // Everything on dst's stream (allocated on the input's when dst is not on the grid yet).
  ensure_grid(dst, grid, src_in.stream());
  const cudaStream_t stream = as_stream(dst.stream());
  // Scratch from the stream-ordered pool: freed in stream order after the passes that use it, and
  // reused by the next call without a cudaMalloc.
  const auto scratch_image = [&] {
    detail::DeviceBuffer<float2> b;
    b.allocate(static_cast<std::size_t>(grid.voxels()), detail::plan_pool(), stream);
    return b;
  };
  // src and dst one array: read from a copy (the first pass would otherwise write its own input).
  detail::DeviceBuffer<float2> alias_copy;
  const float2 *in = dev(src_in);
  if (src_in.data() == dst.data()) {
    alias_copy = scratch_image();
    MRI_CUDA_CHECK(cudaMemcpyAsync(alias_copy.get(), in, src_in.size() * sizeof(cfloat), cudaMemcpyDeviceToDevice,
                                   stream));
    in = alias_copy.get();
  }
  detail::DeviceBuffer<float2> scratch;
  if (count > 1) scratch = scratch_image();
  const Extents g = extents_of(grid.extents());
  const int blocks = elementwise_blocks(grid.voxels());
  for (std::size_t k = 0; k < count; ++k) {
    float2 *out = (count - 1 - k) % 2 == 0 ? dev(dst) : scratch.get();
    const WaveletPass &p = passes[k];
    if (inverse)
      wavelet_pass_kernel<true><<<blocks, kThreads, 0, stream>>>(in, out, g, p.box, p.axis, family);
    else
      wavelet_pass_kernel<false><<<blocks, kThreads, 0, stream>>>(in, out, g, p.box, p.axis, family);
    check_launch();
    in = out;
  }
  if (count == 0) // no level: the identity
    MRI_CUDA_CHECK(cudaMemcpyAsync(dev(dst), in, dst.size() * sizeof(cfloat), cudaMemcpyDeviceToDevice, stream));
}

AxisList axis_list(const Grid &grid, unsigned axes) {
  const unsigned resolved = resolve_axes(grid, axes);
  AxisList list{0, {0, 0, 0}};
  for (int a = 0; a < 3; ++a)
    if (resolved & (1u << a)) list.axis[list.count++] = a;
  return list;
}

template <bool Shrink>
double group_reduction(const DeviceImage &z, const Grid &base, int group_size, const KeepBox &keep, double t) {
  if (group_size < 1) mri::detail::invalid_argument("group_size", group_size, "must be >= 1");
  if (z.empty() || static_cast<long long>(z.size()) != base.voxels() * group_size)
    mri::detail::invalid_argument("shrink vector size", z.size(),
                                  "must be group_size (" + std::to_string(group_size) + ") times the voxels of " +
                                      describe(base));
  for (std::int64_t k : keep)
    if (k < 0) mri::detail::invalid_argument("keep", k, "a keep box extent is >= 0");
  if (Shrink && !(t >= 0.0 && std::isfinite(t)))
    mri::detail::invalid_argument("shrink threshold", t, "must be finite and >= 0");
  const cudaStream_t stream = as_stream(z.stream());
  const int blocks = reduce_blocks(base.voxels());
  double *partial = reduction_scratch();
  // group_norm_sum's z is const: the kernel only reads it when Shrink is false.
  float2 *zd = const_cast<float2 *>(dev(z));
  group_kernel<Shrink><<<blocks, kThreads, 0, stream>>>(zd, extents_of(base.extents()), extents_of(keep), group_size, t,
                                                        partial);
  check_launch();
  sum_partials_kernel<<<1, kThreads, 0, stream>>>(partial, blocks, partial + kMaxReduceBlocks);
  check_launch();
  double sum = 0.0;
  MRI_CUDA_CHECK(cudaMemcpyAsync(&sum, partial + kMaxReduceBlocks, sizeof(double), cudaMemcpyDeviceToHost, stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
  return sum;
}

} // namespace
} // namespace mri::cuda

namespace mri {

using cuda::DeviceImage;
using namespace cuda; // the helpers above

DeviceImage SparseOps<DeviceImage>::make(const Grid &grid, const DeviceImage &like) {
  return DeviceImage(grid, like.stream());
}

void SparseOps<DeviceImage>::wavelet_forward(const WaveletLevels &levels, const DeviceImage &x, DeviceImage &c) {
  run_wavelet_passes(levels, forward_passes(levels), false, x, c);
}

void SparseOps<DeviceImage>::wavelet_inverse(const WaveletLevels &levels, const DeviceImage &c, DeviceImage &x) {
  std::vector<WaveletPass> passes = forward_passes(levels);
  std::reverse(passes.begin(), passes.end()); // Psi^H = the adjoint passes in reverse order
  run_wavelet_passes(levels, passes, true, c, x);
}

void SparseOps<DeviceImage>::circular_shift(const DeviceImage &x, const std::array<std::int64_t, 3> &shift,
                                            DeviceImage &out) {
  if (x.empty()) mri::detail::invalid_argument("circular_shift input", "empty", "must be a vector");
  const Grid &grid = x.grid();
  for (int a = 0; a < 3; ++a)
    if (shift[static_cast<std::size_t>(a)] < 0 || shift[static_cast<std::size_t>(a)] >= grid.extent(a))
      mri::detail::invalid_argument("shift along axis " + std::to_string(a), shift[static_cast<std::size_t>(a)],
                                    "must be in [0, " + std::to_string(grid.extent(a)) + ")");
  if (out.data() == x.data() && !x.empty())
    mri::detail::invalid_argument("circular_shift output", "the input", "must not alias the input");
  ensure_grid(out, grid, x.stream());
  const long long voxels = grid.voxels();
  shift_kernel<<<elementwise_blocks(voxels), kThreads, 0, as_stream(out.stream())>>>(
      dev(x), dev(out), extents_of(grid.extents()), extents_of(shift));
  check_launch();
}

void SparseOps<DeviceImage>::gradient_forward(const Grid &grid, unsigned axes, const DeviceImage &x, DeviceImage &g) {
  require_grid(x, grid, "gradient_forward input");
  const AxisList list = axis_list(grid, axes);
  ensure_grid(g, stacked_grid(grid, list.count), x.stream());
  gradient_forward_kernel<<<elementwise_blocks(grid.voxels()), kThreads, 0, as_stream(g.stream())>>>(
      dev(x), dev(g), extents_of(grid.extents()), list);
  check_launch();
}

void SparseOps<DeviceImage>::gradient_adjoint(const Grid &grid, unsigned axes, const DeviceImage &g, DeviceImage &x) {
  const AxisList list = axis_list(grid, axes);
  require_grid(g, stacked_grid(grid, list.count), "gradient_adjoint input");
  ensure_grid(x, grid, g.stream());
  gradient_adjoint_kernel<<<elementwise_blocks(grid.voxels()), kThreads, 0, as_stream(x.stream())>>>(
      dev(g), dev(x), extents_of(grid.extents()), list);
  check_launch();
}

void SparseOps<DeviceImage>::tv_dual_step(const Grid &grid, unsigned axes, bool isotropic, const DeviceImage &u,
                                          double step, double radius, double momentum, DeviceImage &p,
                                          DeviceImage &q) {
  const AxisList list = axis_list(grid, axes);
  require_grid(u, grid, "tv_dual_step u");
  const Grid stacked = stacked_grid(grid, list.count);
  require_grid(p, stacked, "tv_dual_step p");
  require_grid(q, stacked, "tv_dual_step q");
  if (p.data() == q.data()) mri::detail::invalid_argument("tv_dual_step q", "p", "the dual and its extrapolation must be two vectors");
  if (!(radius >= 0) || !std::isfinite(radius)) mri::detail::invalid_argument("tv_dual_step radius", radius, "must be finite and >= 0");
  tv_dual_step_kernel<<<elementwise_blocks(grid.voxels()), kThreads, 0, as_stream(q.stream())>>>(
      dev(u), dev(p), dev(q), extents_of(grid.extents()), list, isotropic, static_cast<float>(step),
      static_cast<float>(radius), static_cast<float>(momentum));
  check_launch();
}

double SparseOps<DeviceImage>::shrink(DeviceImage &z, const Grid &base, int group_size, const KeepBox &keep,
                                      double t) {
  return group_reduction<true>(z, base, group_size, keep, t);
}

double SparseOps<DeviceImage>::group_norm_sum(const DeviceImage &z, const Grid &base, int group_size,
                                              const KeepBox &keep) {
  return group_reduction<false>(z, base, group_size, keep, 0.0);
}

} // namespace mri
