// The multigrid solver on the device (motion_multigrid.cuh: the scheme; lib/motion/multigrid.cpp:
// the CPU's, which this follows operation for operation so that the two agree to float rounding).
// The residual and operator kernels evaluate the shared mri::detail::motion::clg_gradient; the
// smoother is motion_solver.cu's sweep; restriction and prolongation are the CPU's loops with one
// thread per output voxel. Reductions are float64, in a fixed order (deterministic).
#include "motion_multigrid.cuh"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mri::cuda::detail::motion {
namespace {

using mri::detail::motion::ClgGradient;
using mri::detail::motion::clg_gradient;
using mri::detail::motion::kTT;
using mri::detail::motion::kXX;
using mri::detail::motion::kXY;
using mri::detail::motion::kXZ;
using mri::detail::motion::kYY;
using mri::detail::motion::kYZ;
using mri::detail::motion::kZZ;
using mri::detail::motion::kXT;
using mri::detail::motion::kYT;
using mri::detail::motion::kZT;
using mri::detail::motion::trilinear;
using mri::detail::motion::VoxelPosition;

constexpr int kTime[3] = {kXT, kYT, kZT};
constexpr int kData[6] = {kXX, kXY, kXZ, kYY, kYZ, kZZ}; // J3
constexpr int kBlock = 256;                  // threads of the element-wise kernels
constexpr int kSumThreads = 1024;            // the one block that sums the partials

// The passes of the coarsest grid (lib/motion/multigrid.cpp's kCoarsestPasses).
constexpr int kCoarsestPasses = 20;

struct ConstTensor {
  const float *c[kTT]; // channels kXX..kZT (the solver never reads kTT)
};
struct ConstField {
  const float *c[3];
};
struct MutField {
  float *c[3];
};

ConstTensor pointers(const DeviceTensor &j) {
  ConstTensor t;
  for (int c = 0; c < kTT; ++c)
    t.c[c] = j[c].data();
  return t;
}
ConstField pointers(const DeviceField &f) { return {{f[0].data(), f[1].data(), f[2].data()}}; }
MutField mutable_pointers(DeviceField &f) { return {{f[0].data(), f[1].data(), f[2].data()}}; }

unsigned blocks(long long n) { return unsigned((n + kBlock - 1) / kBlock); }

// The block's sum of `value` (kReduceBlock threads) into partials[blockIdx.x], in a fixed order.
__device__ void block_sum(double value, double *partials) {
  __shared__ double s[kReduceBlock];
  s[threadIdx.x] = value;
  __syncthreads();
  for (int half = kReduceBlock / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half)
      s[threadIdx.x] += s[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    partials[blockIdx.x] = s[0];
}

__global__ void sum_partials(const double *partials, int count, double *out) {
  __shared__ double s[kSumThreads];
  double sum = 0;
  for (int i = threadIdx.x; i < count; i += kSumThreads)
    sum += partials[i];
  s[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half)
      s[threadIdx.x] += s[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *out = s[0];
}

void finish_sum(DeviceReduction &red, long long voxels, int slot, cudaStream_t s) {
  sum_partials<<<1, kSumThreads, 0, s>>>(red.partials(), int(reduce_blocks(voxels)), red.slot(slot));
  MRI_CUDA_CHECK(cudaGetLastError());
}

// Operator = false: r = -(the gradient of E/2) = b - A w, partial sums of ||r||^2 (cpu_stages.hpp's
// residual; r may be null). Operator = true: out = A x (the time column taken as 0), partial sums
// of <x, A x> (apply_operator).
template <bool Operator>
__global__ void __launch_bounds__(kReduceBlock) residual_kernel(ConstTensor j, ConstField w,
                                                                MutField r, Dims d, float alpha,
                                                                float gamma, double *partials) {
  const long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  double sum = 0;
  if (v < d.voxels()) {
    const int x = int(v % d.nx), y = int((v / d.nx) % d.ny), z = int(v / ((long long)d.nx * d.ny));
    const int sy = d.nx, sz = d.nx * d.ny;
    const auto load = [&](int c, int dx, int dy, int dz) {
      return w.c[c][v + dx + sy * dy + sz * dz];
    };
    float jv[kTT];
#pragma unroll
    for (int c = 0; c < kTT; ++c)
      jv[c] = (Operator && (c == kXT || c == kYT || c == kZT)) ? 0.0f : j.c[c][v];
    const ClgGradient<float> g =
        clg_gradient(jv, load, VoxelPosition<int>{{x, y, z}, {d.nx, d.ny, d.nz}}, alpha, gamma);
    for (int c = 0; c < 3; ++c) {
      if (Operator) {
        r.c[c][v] = g.r[c];
        sum += double(g.r[c]) * double(w.c[c][v]);
      } else {
        if (r.c[0])
          r.c[c][v] = -g.r[c];
        sum += double(g.r[c]) * double(g.r[c]);
      }
    }
  }
  block_sum(sum, partials);
}

__global__ void __launch_bounds__(kReduceBlock) rhs_kernel(ConstTensor j, long long n,
                                                           double *partials) {
  const long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  double sum = 0;
  if (v < n)
    for (int c : {kXT, kYT, kZT})
      sum += double(j.c[c][v]) * double(j.c[c][v]);
  block_sum(sum, partials);
}

// Levels of at most this many voxels (16^3) are smoothed by one block in one launch: all the
// requested passes, colour after colour, a barrier between colour passes (a pass writes only its
// colour and reads only other colours, as motion_solver.cu's, so each is race-free; the barrier
// makes its writes visible to the next). The coarse levels' passes would otherwise be a launch
// each for a few hundred voxels: the coarsest alone takes 20 passes x 4 colours per V-cycle.
constexpr long long kOneBlockVoxels = 4096;
constexpr int kOneBlockThreads = 1024;

__global__ void __launch_bounds__(kOneBlockThreads)
    smooth_one_block(ConstTensor j, MutField w, Dims d, int passes, int colours, bool reverse,
                     float alpha, float gamma) {
  const int n = int(d.voxels()), sy = d.nx, sz = d.nx * d.ny;
  for (int p = 0; p < passes; ++p)
    for (int k = 0; k < colours; ++k) {
      const int colour = reverse ? colours - 1 - k : k;
      for (int v = threadIdx.x; v < n; v += blockDim.x) {
        const int x = v % d.nx, y = (v / d.nx) % d.ny, z = v / sz;
        if (mri::detail::motion::voxel_colour(x, y, z, colours) != colour)
          continue;
        const auto load = [&](int c, int dx, int dy, int dz) {
          return w.c[c][v + dx + sy * dy + sz * dz]; // plain loads: written by earlier passes
        };
        float jv[kTT];
        for (int c = 0; c < kTT; ++c)
          jv[c] = j.c[c][v];
        float out[3];
        mri::detail::motion::clg_update(jv, load,
                                        VoxelPosition<int>{{x, y, z}, {d.nx, d.ny, d.nz}}, alpha,
                                        gamma, 1.0f, false, out);
        for (int c = 0; c < 3; ++c)
          w.c[c][v] = out[c];
      }
      __syncthreads();
    }
}

// Partial sums of <a, b> over the three components (the conjugate gradients' inner products).
__global__ void __launch_bounds__(kReduceBlock) dot_kernel(ConstField a, ConstField b, long long n,
                                                           double *partials) {
  const long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  double sum = 0;
  if (v < n)
    for (int c = 0; c < 3; ++c)
      sum += double(a.c[c][v]) * double(b.c[c][v]);
  block_sum(sum, partials);
}

// out_k(i) = scale * the mean of fine_k's children of coarse voxel i (2i and 2i + 1 per axis, the
// second only where it exists), summed in the CPU's order (restrict_mean), for the first
// `components` of the fields; where zeroed is given, zeroed_k(i) = 0 too (a coarse correction's
// start, fused with its right-hand side's restriction).
__global__ void restrict_mean_kernel(ConstField fine, Dims f, MutField out, Dims c, int components,
                                     float scale, MutField zeroed) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= c.voxels())
    return;
  const int x = int(i % c.nx), y = int((i / c.nx) % c.ny), z = int(i / ((long long)c.nx * c.ny));
  for (int k = 0; k < components; ++k) {
    float sum = 0;
    int children = 0;
    for (int cz = 2 * z; cz < min(2 * z + 2, f.nz); ++cz)
      for (int cy = 2 * y; cy < min(2 * y + 2, f.ny); ++cy)
        for (int cx = 2 * x; cx < min(2 * x + 2, f.nx); ++cx, ++children)
          sum += fine.c[k][cx + (long long)f.nx * (cy + (long long)f.ny * cz)];
    out.c[k][i] = scale * sum / float(children);
    if (zeroed.c[k])
      zeroed.c[k][i] = 0.0f;
  }
}

// Fine voxel i's position on the coarse grid: coarse voxel k at its children's centre, fine
// 2k + 1/2 (lib/motion/multigrid.hpp's children_position, there the reasons; exact in float, so
// bitwise the CPU's).
__device__ inline float children_position(int i) { return float(i) / 2.0f - 0.25f; }

// fine_k += the trilinear interpolation of coarse_k at children_position (prolong_add), for the
// three components.
__global__ void prolong_add_kernel(ConstField coarse, Dims c, MutField fine, Dims f) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= f.voxels())
    return;
  const int x = int(i % f.nx), y = int((i / f.nx) % f.ny), z = int(i / ((long long)f.nx * f.ny));
  const float px = children_position(x), py = children_position(y), pz = children_position(z);
  for (int k = 0; k < 3; ++k)
    fine.c[k][i] += trilinear(coarse.c[k], c.nx, c.ny, c.nz, px, py, pz);
}

// One axis of P^T (restrict_transpose): out(.., ic, ..) = sum over the fine points i of that axis
// whose linear-interpolation weights reach ic, in ascending i as the CPU's scatter adds them,
// times scale. Fine point i sits at q = children_position(i) (clamped): weight 1 - t on floor(q),
// t on the next (the same voxel at the clamped end).
__global__ void transpose_axis_kernel(const float *__restrict__ in, Dims n_in, float *out,
                                      Dims n_out, int axis, float scale) {
  const long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (o >= n_out.voxels())
    return;
  const int pos[3] = {int(o % n_out.nx), int((o / n_out.nx) % n_out.ny),
                      int(o / ((long long)n_out.nx * n_out.ny))};
  const int ext_in[3] = {n_in.nx, n_in.ny, n_in.nz}, ext_out[3] = {n_out.nx, n_out.ny, n_out.nz};
  const long long stride_in[3] = {1, n_in.nx, (long long)n_in.nx * n_in.ny};
  const int nf = ext_in[axis], nc = ext_out[axis], ic = pos[axis];
  long long base = 0;
  for (int a = 0; a < 3; ++a)
    if (a != axis)
      base += pos[a] * stride_in[a];
  float sum = 0;
  // Fine point i lands at coarse i / 2 - 1/4: only i within 2 ic +- 4 can reach ic.
  for (int i = max(0, 2 * ic - 4); i <= min(nf - 1, 2 * ic + 4); ++i) {
    float q = children_position(i);
    q = q < 0.0f ? 0.0f : (q > float(nc - 1) ? float(nc - 1) : q);
    const int i0 = int(q), i1 = min(i0 + 1, nc - 1);
    const float t = q - float(i0), f = in[base + i * stride_in[axis]];
    if (i0 == ic)
      sum += (1.0f - t) * f;
    if (i1 == ic)
      sum += t * f;
  }
  (void)ext_out;
  out[o] = sum * scale;
}

__global__ void negate_kernel(const float *__restrict__ in, float *out, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = -in[i];
}

// y += sign * float(num / den) x (the conjugate gradients' step; 0 where den <= 0: the CPU stops
// there before this update counts).
__global__ void axpy_kernel(const double *num, const double *den, float sign, ConstField x,
                            MutField y, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const float step = *den > 0 ? float(*num / *den) : 0.0f;
  for (int c = 0; c < 3; ++c)
    y.c[c][i] += (sign * step) * x.c[c][i];
}

// p = z + float(rz_next / rz) p.
__global__ void direction_kernel(const double *rz_next, const double *rz, ConstField z, MutField p,
                                 long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const float beta = float(*rz_next / *rz);
  for (int c = 0; c < 3; ++c)
    p.c[c][i] = z.c[c][i] + beta * p.c[c][i];
}

// The coarse grids below `fine` (lib/motion/multigrid.cpp's multigrid_grids): extents halved
// rounding up while every extent is >= 4.
std::vector<Grid> multigrid_grids(const Grid &fine) {
  std::vector<Grid> grids{fine};
  while (std::min({grids.back().nx(), grids.back().ny(), grids.back().nz()}) >= 4) {
    const Grid &g = grids.back();
    grids.emplace_back((g.nx() + 1) / 2, (g.ny() + 1) / 2, (g.nz() + 1) / 2);
  }
  return grids;
}

DeviceField make_field(const Grid &g) { return {DeviceVolume(g), DeviceVolume(g), DeviceVolume(g)}; }

void zero(DeviceField &f, cudaStream_t s) {
  for (DeviceVolume &c : f)
    MRI_CUDA_CHECK(cudaMemsetAsync(c.data(), 0, c.grid.voxels() * sizeof(float), s));
}

void copy(const DeviceVolume &src, DeviceVolume &dst, cudaStream_t s) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.grid.voxels() * sizeof(float),
                                 cudaMemcpyDeviceToDevice, s));
}

constexpr MutField kNoField{{nullptr, nullptr, nullptr}};

// The time column of a tensor as a field (a coarse level's right-hand side).
MutField time_column(DeviceTensor &j) {
  return {{j[kXT].data(), j[kYT].data(), j[kZT].data()}};
}

void restrict_mean(const ConstField &fine, const Grid &fine_grid, const MutField &out,
                   const Grid &coarse_grid, int components, float scale, const MutField &zeroed,
                   cudaStream_t s) {
  restrict_mean_kernel<<<blocks(coarse_grid.voxels()), kBlock, 0, s>>>(
      fine, Dims(fine_grid), out, Dims(coarse_grid), components, scale, zeroed);
  MRI_CUDA_CHECK(cudaGetLastError());
}
void restrict_mean(const DeviceVolume &fine, DeviceVolume &coarse, float scale, cudaStream_t s) {
  restrict_mean({{fine.data(), nullptr, nullptr}}, fine.grid, {{coarse.data(), nullptr, nullptr}},
                coarse.grid, 1, scale, kNoField, s);
}

void prolong_add(const DeviceField &coarse, DeviceField &fine, cudaStream_t s) {
  prolong_add_kernel<<<blocks(fine[0].grid.voxels()), kBlock, 0, s>>>(
      pointers(coarse), Dims(coarse[0].grid), mutable_pointers(fine), Dims(fine[0].grid));
  MRI_CUDA_CHECK(cudaGetLastError());
}

void negate(const DeviceVolume &in, DeviceVolume &out, cudaStream_t s) {
  negate_kernel<<<blocks(in.grid.voxels()), kBlock, 0, s>>>(in.data(), out.data(),
                                                             in.grid.voxels());
  MRI_CUDA_CHECK(cudaGetLastError());
}

void dot(const DeviceField &a, const DeviceField &b, DeviceReduction &red, int slot,
         cudaStream_t s) {
  const long long n = a[0].grid.voxels();
  dot_kernel<<<reduce_blocks(n), kReduceBlock, 0, s>>>(pointers(a), pointers(b), n,
                                                       red.partials());
  MRI_CUDA_CHECK(cudaGetLastError());
  finish_sum(red, n, slot, s);
}

// out = A x, <x, A x> into reduction slot `slot` (cpu_stages.hpp's apply_operator).
void apply_operator(const DeviceTensor &j, const DeviceField &x, DeviceField &out, float alpha,
                    float gamma, DeviceReduction &red, int slot, cudaStream_t s) {
  const long long n = x[0].grid.voxels();
  residual_kernel<true><<<reduce_blocks(n), kReduceBlock, 0, s>>>(
      pointers(j), pointers(x), mutable_pointers(out), Dims(x[0].grid), alpha, gamma,
      red.partials());
  MRI_CUDA_CHECK(cudaGetLastError());
  finish_sum(red, n, slot, s);
}

// Reduction slots.
enum Slot : int { kB2, kR2, kRz, kPap, kRr, kRzNext };

} // namespace

double relative(double r2, double b2) {
  if (r2 == 0)
    return 0;
  return b2 > 0 ? std::sqrt(r2 / b2) : std::numeric_limits<double>::infinity();
}

DeviceReduction::DeviceReduction(std::int64_t max_voxels)
    : partials_(reduce_blocks(max_voxels)), sums_(kSlots) {}

void DeviceReduction::read(int count, double *out, cudaStream_t s) const {
  MRI_CUDA_CHECK(
      cudaMemcpyAsync(out, sums_.get(), count * sizeof(double), cudaMemcpyDeviceToHost, s));
  MRI_CUDA_CHECK(cudaStreamSynchronize(s));
}

void residual(const DeviceTensor &j, const DeviceField &w, DeviceField *r, float alpha,
              float gamma, DeviceReduction &red, int slot, cudaStream_t s) {
  const long long n = w[0].grid.voxels();
  MutField out{{nullptr, nullptr, nullptr}};
  if (r)
    out = mutable_pointers(*r);
  residual_kernel<false><<<reduce_blocks(n), kReduceBlock, 0, s>>>(
      pointers(j), pointers(w), out, Dims(w[0].grid), alpha, gamma, red.partials());
  MRI_CUDA_CHECK(cudaGetLastError());
  finish_sum(red, n, slot, s);
}

void rhs_norm2(const DeviceTensor &j, DeviceReduction &red, int slot, cudaStream_t s) {
  const long long n = j[0].grid.voxels();
  rhs_kernel<<<reduce_blocks(n), kReduceBlock, 0, s>>>(pointers(j), n, red.partials());
  MRI_CUDA_CHECK(cudaGetLastError());
  finish_sum(red, n, slot, s);
}

DeviceMultigrid::DeviceMultigrid(const Grid &fine, const MotionMultigridOptions &options,
                                 MotionMemory memory, cudaStream_t s)
    : options_(options), memory_(memory), stream_(s), reduction_(fine.voxels()) {
  if (fine.voxels() >= (std::int64_t{1} << 31))
    throw Unsupported("motion multigrid: volumes of 2^31 voxels or more need 64-bit indexing");
  for (const Grid &g : multigrid_grids(fine)) {
    Level l{g, {}, {}, make_field(g), 0.0f, 0.0f};
    if (!levels_.empty()) { // the finest level's tensor and unknown are the caller's
      for (int c = 0; c < kTT; ++c)
        l.j[c] = DeviceVolume(g);
      l.e = make_field(g);
    }
    levels_.push_back(std::move(l));
  }
  last_ = make_field(fine);
}

void DeviceMultigrid::make_symmetric() {
  symmetric_ = true;
  pre_ = post_ = std::max(options_.pre_smoothing, options_.post_smoothing);
  if (!r_[0].data()) {
    const Grid &fine = levels_[0].grid;
    for (int c = 0; c < kTT; ++c)
      pre_j_[c] = DeviceVolume(fine);
    r_ = make_field(fine), z_ = make_field(fine), p_ = make_field(fine), q_ = make_field(fine);
    for (std::size_t l = 0; l + 1 < levels_.size(); ++l) {
      const Grid &f = levels_[l].grid, &c = levels_[l + 1].grid;
      transpose_scratch_.push_back({DeviceVolume(Grid(c.nx(), f.ny(), f.nz())),
                                    DeviceVolume(Grid(c.nx(), c.ny(), f.nz()))});
    }
  }
}

void DeviceMultigrid::save_w() {
  for (int c = 0; c < 3; ++c)
    copy((*fine_w_)[c], last_[c], stream_);
}
void DeviceMultigrid::restore_w() {
  for (int c = 0; c < 3; ++c)
    copy(last_[c], (*fine_w_)[c], stream_);
}

// reverse: the colours in the opposite order (post-smoothing with krylov: a symmetric V-cycle).
void DeviceMultigrid::smooth(std::size_t l, int passes, bool reverse) {
  const Level &lv = levels_[l];
  const int colours = mri::detail::motion::sor_colours(double(lv.gamma));
  DeviceField &x = unknown(l);
  if (lv.grid.voxels() <= kOneBlockVoxels && passes > 0) {
    smooth_one_block<<<1, kOneBlockThreads, 0, stream_>>>(pointers(tensor(l)), mutable_pointers(x),
                                                          Dims(lv.grid), passes, colours, reverse,
                                                          lv.alpha, lv.gamma);
    MRI_CUDA_CHECK(cudaGetLastError());
  } else
    for (int p = 0; p < passes; ++p)
      for (int k = 0; k < colours; ++k) {
        const int c = reverse ? colours - 1 - k : k;
        sweep(tensor(l), x, x, c, colours, lv.alpha, lv.gamma, 1.0f, memory_, stream_);
      }
  if (l == 0)
    fine_passes_ += std::int64_t(passes) * colours;
}

// Krylov: the prolongation's transpose scaled by coarse / fine voxels (preserves a mean);
// plain V-cycles: the children's mean (lib/motion/multigrid.cpp's restrict_residual_into).
void DeviceMultigrid::restrict_into(std::size_t l, const DeviceVolume &fine, DeviceVolume &coarse,
                                    float sign) {
  if (!symmetric_) {
    restrict_mean(fine, coarse, sign, stream_);
    return;
  }
  const float scale = sign * float(coarse.grid.voxels()) / float(fine.grid.voxels());
  DeviceVolume &a = transpose_scratch_[l][0], &b = transpose_scratch_[l][1];
  const auto pass = [&](const DeviceVolume &in, DeviceVolume &out, int axis, float s) {
    transpose_axis_kernel<<<blocks(out.grid.voxels()), kBlock, 0, stream_>>>(
        in.data(), Dims(in.grid), out.data(), Dims(out.grid), axis, s);
    MRI_CUDA_CHECK(cudaGetLastError());
  };
  pass(fine, a, 0, 1.0f);
  pass(a, b, 1, 1.0f);
  pass(b, coarse, 2, scale);
}

// The residual of level l restricted into level l + 1's right-hand side (A e = r: time column
// -r), its correction zeroed.
void DeviceMultigrid::restrict_residual(std::size_t l) {
  Level &lv = levels_[l], &coarse = levels_[l + 1];
  residual(tensor(l), unknown(l), &lv.r, lv.alpha, lv.gamma, reduction_, kR2, stream_);
  if (l == 0)
    ++fine_passes_;
  if (!symmetric_) {
    restrict_mean(pointers(lv.r), lv.grid, time_column(coarse.j), coarse.grid, 3, -1.0f,
                  mutable_pointers(coarse.e), stream_);
    return;
  }
  for (int c = 0; c < 3; ++c)
    restrict_into(l, lv.r[c], coarse.j[kTime[c]], -1.0f);
  zero(coarse.e, stream_);
}

void DeviceMultigrid::v_cycle(std::size_t l) {
  if (l + 1 == levels_.size()) {
    smooth(l, kCoarsestPasses / 2, false);
    smooth(l, kCoarsestPasses / 2, symmetric_);
    return;
  }
  smooth(l, pre_, false);
  restrict_residual(l);
  v_cycle(l + 1);
  prolong_add(levels_[l + 1].e, unknown(l), stream_);
  smooth(l, post_, symmetric_);
}

// Nested iteration on the residual equation (lib/motion/multigrid.cpp's full_multigrid): the
// finest residual (left in levels_[0].r by the last measurement) restricted to every level, the
// coarsest solved, each finer level started from the prolongated coarser correction and given one
// V-cycle; the finest level's V-cycle runs on w itself.
void DeviceMultigrid::full_multigrid() {
  for (std::size_t l = 1; l < levels_.size(); ++l)
    for (int c = 0; c < 3; ++c) {
      restrict_into(l - 1, levels_[l - 1].r[c], levels_[l].r[c], 1.0f);
      negate(levels_[l].r[c], levels_[l].j[kTime[c]], stream_);
    }
  const std::size_t coarsest = levels_.size() - 1;
  zero(levels_[coarsest].e, stream_);
  smooth(coarsest, kCoarsestPasses, false);
  for (std::size_t l = coarsest; l-- > 1;) {
    zero(levels_[l].e, stream_);
    prolong_add(levels_[l + 1].e, levels_[l].e, stream_);
    v_cycle(l);
  }
  prolong_add(levels_[1].e, unknown(0), stream_);
  v_cycle(0);
}

// The true residual of w into levels_[0].r; returns ||r||^2 (the one host read per check).
double DeviceMultigrid::measure() {
  ++fine_passes_;
  Level &fine = levels_[0];
  residual(*fine_j_, *fine_w_, &fine.r, fine.alpha, fine.gamma, reduction_, kR2, stream_);
  reduction_.read(kR2 + 1, host_, stream_);
  return host_[kR2];
}

void DeviceMultigrid::precondition() {
  for (int c = 0; c < 3; ++c)
    negate(r_[c], pre_j_[kTime[c]], stream_);
  zero(z_, stream_);
  const DeviceTensor *j = fine_j_;
  DeviceField *w = fine_w_;
  fine_j_ = &pre_j_, fine_w_ = &z_;
  v_cycle(0);
  fine_j_ = j, fine_w_ = w;
}

// Preconditioned conjugate gradients (lib/motion/multigrid.cpp's conjugate_gradients): the step
// and beta computed on the device from the inner products; the host reads, once per iteration,
// <p, A p> and ||r||^2 together (where the CPU tests them).
void DeviceMultigrid::conjugate_gradients(MultigridResult &result, double tolerance, double b2) {
  const Level &fine = levels_[0];
  const long long n = fine.grid.voxels();
  for (int c : kData)
    copy((*fine_j_)[c], pre_j_[c], stream_);
  bool restart = true;
  while (result.residual > tolerance && result.cycles < options_.max_cycles) {
    if (restart) { // from the true residual (left in levels_[0].r by the last measurement)
      for (int c = 0; c < 3; ++c)
        copy(fine.r[c], r_[c], stream_);
      precondition();
      dot(r_, z_, reduction_, kRz, stream_);
      for (int c = 0; c < 3; ++c)
        copy(z_[c], p_[c], stream_);
      restart = false;
    }
    apply_operator(*fine_j_, p_, q_, fine.alpha, fine.gamma, reduction_, kPap, stream_);
    ++fine_passes_;
    save_w();
    axpy_kernel<<<blocks(n), kBlock, 0, stream_>>>(reduction_.slot(kRz), reduction_.slot(kPap),
                                                   1.0f, pointers(p_), mutable_pointers(*fine_w_),
                                                   n);
    MRI_CUDA_CHECK(cudaGetLastError());
    axpy_kernel<<<blocks(n), kBlock, 0, stream_>>>(reduction_.slot(kRz), reduction_.slot(kPap),
                                                   -1.0f, pointers(q_), mutable_pointers(r_), n);
    MRI_CUDA_CHECK(cudaGetLastError());
    dot(r_, r_, reduction_, kRr, stream_);
    reduction_.read(kRr + 1, host_, stream_);
    if (!std::isfinite(host_[kPap]) || !std::isfinite(host_[kRz])) {
      restore_w(); // the CPU stops before its update: w as it was
      result.non_finite = true;
      break;
    }
    if (!(host_[kPap] > 0))
      break; // p = 0 or rounding: nothing left to gain (the updates above were by 0)
    ++result.cycles;
    const double recurrence = relative(host_[kRr], b2);
    if (!std::isfinite(recurrence)) {
      restore_w();
      result.non_finite = true;
      break;
    }
    result.residual = recurrence;
    if (result.residual <= tolerance || result.cycles >= options_.max_cycles) {
      save_w(); // the recurrence drifts in float: confirm with the true residual
      const double previous = result.residual;
      result.residual = relative(measure(), b2);
      if (!std::isfinite(result.residual)) {
        restore_w();
        result.residual = previous, result.non_finite = true;
        break;
      }
      restart = true;
      continue;
    }
    precondition();
    dot(r_, z_, reduction_, kRzNext, stream_);
    direction_kernel<<<blocks(n), kBlock, 0, stream_>>>(reduction_.slot(kRzNext),
                                                        reduction_.slot(kRz), pointers(z_),
                                                        mutable_pointers(p_), n);
    MRI_CUDA_CHECK(cudaGetLastError());
    MRI_CUDA_CHECK(cudaMemcpyAsync(reduction_.slot(kRz), reduction_.slot(kRzNext), sizeof(double),
                                   cudaMemcpyDeviceToDevice, stream_));
  }
}

// The V-cycles while each lowers the residual below kStallRatio of the last; else the switch to
// the conjugate gradients from the better iterate, or the stop at a non-finite residual
// (lib/motion/multigrid.cpp's v_cycles, decision for decision).
void DeviceMultigrid::v_cycles(MultigridResult &result, double tolerance, double b2) {
  while (result.residual > tolerance && result.cycles < options_.max_cycles) {
    save_w();
    if (options_.full && result.cycles == 0 && levels_.size() > 1)
      full_multigrid();
    else
      v_cycle(0);
    ++result.cycles;
    const double previous = result.residual, next = relative(measure(), b2);
    if (next <= tolerance || (std::isfinite(next) && next < kStallRatio * previous)) {
      result.residual = next;
      continue;
    }
    if (!std::isfinite(next) || next > previous) { // back to the better iterate
      restore_w();
      result.residual = relative(measure(), b2); // its residual into levels_[0].r
    } else
      result.residual = next;
    if (!std::isfinite(next)) {
      result.non_finite = true;
      return;
    }
    if (result.cycles >= options_.max_cycles)
      return;
    result.switched = true;
    make_symmetric();
    conjugate_gradients(result, tolerance, b2);
    return;
  }
}

MultigridResult DeviceMultigrid::solve(const DeviceTensor &j, DeviceField &w, float alpha,
                                       float gamma, double tolerance) {
  fine_j_ = &j, fine_w_ = &w, fine_passes_ = 0;
  symmetric_ = false, pre_ = options_.pre_smoothing, post_ = options_.post_smoothing;
  if (options_.krylov)
    make_symmetric();
  for (Level &l : levels_) {
    l.alpha = alpha, l.gamma = gamma;
    alpha /= 4.0f, gamma /= 4.0f;
  }
  for (std::size_t l = 1; l < levels_.size(); ++l)
    for (int c : kData)
      restrict_mean(tensor(l - 1)[c], levels_[l].j[c], 1.0f, stream_);
  rhs_norm2(j, reduction_, kB2, stream_);
  MultigridResult result;
  ++fine_passes_;
  residual(j, w, &levels_[0].r, levels_[0].alpha, levels_[0].gamma, reduction_, kR2, stream_);
  reduction_.read(kR2 + 1, host_, stream_); // ||b||^2 and the first ||r||^2 in one read
  const double b2 = host_[kB2];
  result.residual = relative(host_[kR2], b2);
  if (!std::isfinite(result.residual)) { // the system itself overflowed: w unchanged
    result.non_finite = true;
  } else if (options_.krylov) {
    if (options_.full && levels_.size() > 1 && result.residual > tolerance) {
      save_w();
      const double start = result.residual;
      full_multigrid();
      ++result.cycles;
      result.residual = relative(measure(), b2);
      if (!std::isfinite(result.residual)) {
        restore_w();
        result.residual = start, result.non_finite = true;
      }
    }
    if (!result.non_finite)
      conjugate_gradients(result, tolerance, b2);
  } else
    v_cycles(result, tolerance, b2);
  result.fine_passes = fine_passes_;
  fine_j_ = nullptr, fine_w_ = nullptr;
  return result;
}

} // namespace mri::cuda::detail::motion
