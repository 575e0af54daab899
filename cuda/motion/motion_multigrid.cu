// The multigrid solver on the device (motion_multigrid.cuh: the scheme; lib/motion/multigrid.cpp:
// the CPU's, which this follows operation for operation so that the two agree to float rounding).
// The residual and operator kernels evaluate the shared mri::detail::motion::clg_gradient; the
// smoother is motion_solver.cu's sweep; restriction and prolongation are the CPU's loops with one
// thread per output voxel. Reductions are float64, in a fixed order (deterministic).
#include "motion_multigrid.cuh"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "motion_bench.hpp"

namespace mri::cuda::detail::motion {
namespace {

using mri::detail::motion::ClgGradient;
using mri::detail::motion::clg_gradient;
using mri::detail::motion::kTT;
using mri::detail::motion::multigrid_grids;
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

// -(b - A w)(v) at voxel v, or with Operator (the time column taken as 0) (A x)(v): the shared
// clg_gradient, as cpu_stages.hpp's residual and apply_operator evaluate it.
template <bool Operator>
__device__ inline ClgGradient<float> gradient_at(const ConstTensor &j, const ConstField &w, int nx,
                                                 int ny, int nz, long long v, float alpha,
                                                 float gamma) {
  const int x = int(v % nx), y = int((v / nx) % ny), z = int(v / ((long long)nx * ny));
  const int sy = nx, sz = nx * ny;
  const auto load = [&](int c, int dx, int dy, int dz) {
    return w.c[c][v + dx + sy * dy + sz * dz];
  };
  float jv[kTT];
#pragma unroll
  for (int c = 0; c < kTT; ++c)
    jv[c] = (Operator && (c == kXT || c == kYT || c == kZT)) ? 0.0f : j.c[c][v];
  return clg_gradient(jv, load, VoxelPosition<int>{{x, y, z}, {nx, ny, nz}}, alpha, gamma);
}

// Operator = false: r = -(the gradient of E/2) = b - A w, partial sums of ||r||^2 (cpu_stages.hpp's
// residual; r may be null; partials null: no norm, as inside a V-cycle, which never reads it).
// Operator = true: out = A x (the time column taken as 0), partial sums of <x, A x>
// (apply_operator).
template <bool Operator>
__global__ void __launch_bounds__(kReduceBlock) residual_kernel(ConstTensor j, ConstField w,
                                                                MutField r, Dims d, float alpha,
                                                                float gamma, double *partials) {
  const long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  double sum = 0;
  if (v < d.voxels()) {
    const ClgGradient<float> g = gradient_at<Operator>(j, w, d.nx, d.ny, d.nz, v, alpha, gamma);
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
  if (partials) // uniform over the grid: the barrier inside is reached by every thread or none
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

// The block's smoothing passes (all the block's threads; a barrier after each colour pass).
__device__ void smooth_block(const ConstTensor &j, const MutField &w, int nx, int ny, int nz,
                             int passes, int colours, bool reverse, float alpha, float gamma) {
  const int n = nx * ny * nz, sy = nx, sz = nx * ny;
  for (int p = 0; p < passes; ++p)
    for (int k = 0; k < colours; ++k) {
      const int colour = reverse ? colours - 1 - k : k;
      for (int v = threadIdx.x; v < n; v += blockDim.x) {
        const int x = v % nx, y = (v / nx) % ny, z = v / sz;
        if (mri::detail::motion::voxel_colour(x, y, z, colours) != colour)
          continue;
        const auto load = [&](int c, int dx, int dy, int dz) {
          return w.c[c][v + dx + sy * dy + sz * dz]; // plain loads: written by earlier passes
        };
        float jv[kTT];
        for (int c = 0; c < kTT; ++c)
          jv[c] = j.c[c][v];
        float out[3];
        mri::detail::motion::clg_update(jv, load, VoxelPosition<int>{{x, y, z}, {nx, ny, nz}},
                                        alpha, gamma, 1.0f, false, out);
        for (int c = 0; c < 3; ++c)
          w.c[c][v] = out[c];
      }
      __syncthreads();
    }
}

__global__ void __launch_bounds__(kOneBlockThreads)
    smooth_one_block(ConstTensor j, MutField w, Dims d, int passes, int colours, bool reverse,
                     float alpha, float gamma) {
  smooth_block(j, w, d.nx, d.ny, d.nz, passes, colours, reverse, alpha, gamma);
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

// scale * the mean of fine's children of coarse voxel (x, y, z) (2i and 2i + 1 per axis, the
// second only where it exists), summed in the CPU's order (restrict_mean).
__device__ inline float children_mean(const float *fine, int fnx, int fny, int fnz, int x, int y,
                                      int z, float scale) {
  float sum = 0;
  int children = 0;
  for (int cz = 2 * z; cz < min(2 * z + 2, fnz); ++cz)
    for (int cy = 2 * y; cy < min(2 * y + 2, fny); ++cy)
      for (int cx = 2 * x; cx < min(2 * x + 2, fnx); ++cx, ++children)
        sum += fine[cx + (long long)fnx * (cy + (long long)fny * cz)];
  return scale * sum / float(children);
}

constexpr int kMaxChannels = 6; // J3's channels: the most one restriction launch carries
struct ConstChannels {
  const float *c[kMaxChannels];
};
struct MutChannels {
  float *c[kMaxChannels];
};

// out_k(i) = children_mean(fine_k) for the first `components` channels; where given,
// negated_k(i) = -out_k(i) (a coarse right-hand side, minus the restricted residual: bitwise the
// CPU's negation) and zeroed_k(i) = 0 (a coarse correction's start), fused with it.
__global__ void restrict_mean_kernel(ConstChannels fine, Dims f, MutChannels out, Dims c,
                                     int components, float scale, MutChannels negated,
                                     MutChannels zeroed) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= c.voxels())
    return;
  const int x = int(i % c.nx), y = int((i / c.nx) % c.ny), z = int(i / ((long long)c.nx * c.ny));
  for (int k = 0; k < components; ++k) {
    const float value = children_mean(fine.c[k], f.nx, f.ny, f.nz, x, y, z, scale);
    if (out.c[k])
      out.c[k][i] = value;
    if (negated.c[k])
      negated.c[k][i] = -value;
    if (zeroed.c[k])
      zeroed.c[k][i] = 0.0f;
  }
}

// Fine voxel i's position on the coarse grid: coarse voxel k at its children's centre, fine
// 2k + 1/2 (lib/motion/multigrid.hpp's children_position, there the reasons; exact in float, so
// bitwise the CPU's).
__device__ inline float children_position(int i) { return float(i) / 2.0f - 0.25f; }

// The trilinear interpolation of coarse at fine voxel (x, y, z)'s children_position.
__device__ inline float prolongated(const float *coarse, int cnx, int cny, int cnz, int x, int y,
                                    int z) {
  return trilinear(coarse, cnx, cny, cnz, children_position(x), children_position(y),
                   children_position(z));
}

// fine_k += the prolongation of coarse_k (prolong_add), for the three components; with assign,
// fine_k = it (a zeroed correction plus it: the same values, one pass fewer).
__global__ void prolong_kernel(ConstField coarse, Dims c, MutField fine, Dims f, bool assign) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= f.voxels())
    return;
  const int x = int(i % f.nx), y = int((i / f.nx) % f.ny), z = int(i / ((long long)f.nx * f.ny));
  for (int k = 0; k < 3; ++k) {
    const float value = prolongated(coarse.c[k], c.nx, c.ny, c.nz, x, y, z);
    fine.c[k][i] = (assign ? 0.0f : fine.c[k][i]) + value; // 0 + value: the old zeroed start
  }
}

// ---- The coarse levels' V-cycle in one block ----------------------------------------------
// Every level of at most kOneBlockVoxels voxels (the last levels of the hierarchy) is cycled by
// one block in one launch: the plain V-cycle's steps (smoothing, residual, children's-mean
// restriction, the coarsest passes, trilinear prolongation, smoothing) in the host's order, a
// barrier between steps, through the same per-voxel functions as the grid-wide kernels. A launch
// per step would cost more than the step: from a 16^3 level down to 2^3 a V-cycle is 20 launches
// of at most 4096 voxels each, and the full-multigrid pass runs one from every coarse level.
// The symmetric V-cycle (krylov, or after a switch) keeps the launches (its restriction is the
// prolongation's transpose, by axis passes).
constexpr int kMaxBlockLevels = 8; // 4096 voxels halve to extent < 4 within 5 levels

} // namespace

// (Outside the anonymous namespace: DeviceMultigrid's block_levels returns it.)
struct BlockLevel {
  ConstTensor j; // J3 and the right-hand side (coarse levels: written by the restriction)
  MutField time; // j's time column, written (coarse levels)
  MutField e;    // the unknown (the finest level of the hierarchy: w itself)
  MutField r;    // the residual
  int nx, ny, nz;
  float alpha, gamma;
  int colours;
};
struct BlockLevels {
  BlockLevel level[kMaxBlockLevels];
  int count;     // level[count - 1]: the coarsest
  int pre, post; // smoothing passes
};

namespace {

__device__ inline ConstField as_const(const MutField &f) { return {{f.c[0], f.c[1], f.c[2]}}; }

__device__ void smooth_level(const BlockLevel &l, int passes) {
  smooth_block(l.j, l.e, l.nx, l.ny, l.nz, passes, l.colours, false, l.alpha, l.gamma);
}

// The plain V-cycle from level `from` of the block's levels (DeviceMultigrid::v_cycle, not
// symmetric), by the whole block.
__device__ void block_v_cycle(const BlockLevels &h, int from) {
  const int last = h.count - 1;
  for (int l = from; l < last; ++l) {
    const BlockLevel &f = h.level[l], &c = h.level[l + 1];
    smooth_level(f, h.pre);
    __syncthreads();
    const int nf = f.nx * f.ny * f.nz, nc = c.nx * c.ny * c.nz;
    for (int v = threadIdx.x; v < nf; v += blockDim.x) {
      const ClgGradient<float> g =
          gradient_at<false>(f.j, as_const(f.e), f.nx, f.ny, f.nz, v, f.alpha, f.gamma);
      for (int k = 0; k < 3; ++k)
        f.r.c[k][v] = -g.r[k];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nc; i += blockDim.x) {
      const int x = i % c.nx, y = (i / c.nx) % c.ny, z = i / (c.nx * c.ny);
      for (int k = 0; k < 3; ++k) {
        c.time.c[k][i] = children_mean(f.r.c[k], f.nx, f.ny, f.nz, x, y, z, -1.0f);
        c.e.c[k][i] = 0.0f;
      }
    }
    __syncthreads();
  }
  smooth_level(h.level[last], kCoarsestPasses);
  __syncthreads();
  for (int l = last - 1; l >= from; --l) {
    const BlockLevel &f = h.level[l], &c = h.level[l + 1];
    const int nf = f.nx * f.ny * f.nz;
    for (int i = threadIdx.x; i < nf; i += blockDim.x) {
      const int x = i % f.nx, y = (i / f.nx) % f.ny, z = i / (f.nx * f.ny);
      for (int k = 0; k < 3; ++k)
        f.e.c[k][i] = f.e.c[k][i] + prolongated(c.e.c[k], c.nx, c.ny, c.nz, x, y, z);
    }
    __syncthreads();
    smooth_level(f, h.post);
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kOneBlockThreads) v_cycle_one_block(BlockLevels h, int from) {
  block_v_cycle(h, from);
}

// The full-multigrid pass's part on the block's levels (DeviceMultigrid::full_multigrid): the
// coarsest solved from 0, then each level down to `to` started from the prolongated coarser
// correction and given one V-cycle (the right-hand sides already restricted).
__global__ void __launch_bounds__(kOneBlockThreads) full_multigrid_one_block(BlockLevels h, int to) {
  const int last = h.count - 1;
  const BlockLevel &coarsest = h.level[last];
  for (int i = threadIdx.x; i < coarsest.nx * coarsest.ny * coarsest.nz; i += blockDim.x)
    for (int k = 0; k < 3; ++k)
      coarsest.e.c[k][i] = 0.0f;
  __syncthreads();
  smooth_level(coarsest, kCoarsestPasses);
  __syncthreads();
  for (int l = last - 1; l >= to; --l) {
    const BlockLevel &f = h.level[l], &c = h.level[l + 1];
    const int nf = f.nx * f.ny * f.nz;
    for (int i = threadIdx.x; i < nf; i += blockDim.x) {
      const int x = i % f.nx, y = (i / f.nx) % f.ny, z = i / (f.nx * f.ny);
      for (int k = 0; k < 3; ++k)
        f.e.c[k][i] = 0.0f + prolongated(c.e.c[k], c.nx, c.ny, c.nz, x, y, z); // zeroed + P e
    }
    __syncthreads();
    block_v_cycle(h, l);
    __syncthreads();
  }
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

constexpr MutChannels kNoChannels{};

ConstChannels channels(const ConstField &f) { return {{f.c[0], f.c[1], f.c[2]}}; }
MutChannels channels(const MutField &f) { return {{f.c[0], f.c[1], f.c[2]}}; }

// out = scale * the children's mean of fine, channel by channel (out's channels may be null);
// negated = -out and zeroed = 0 where given: one launch for up to kMaxChannels channels.
void restrict_mean(const ConstChannels &fine, const Grid &fine_grid, const MutChannels &out,
                   const Grid &coarse_grid, int components, float scale,
                   const MutChannels &negated, const MutChannels &zeroed, cudaStream_t s) {
  restrict_mean_kernel<<<blocks(coarse_grid.voxels()), kBlock, 0, s>>>(
      fine, Dims(fine_grid), out, Dims(coarse_grid), components, scale, negated, zeroed);
  MRI_CUDA_CHECK(cudaGetLastError());
}
void restrict_mean(const DeviceVolume &fine, DeviceVolume &coarse, float scale, cudaStream_t s) {
  restrict_mean({{fine.data()}}, fine.grid, {{coarse.data()}}, coarse.grid, 1, scale, kNoChannels,
                kNoChannels, s);
}

// fine += (assign: fine =) the prolongation of coarse.
void prolong(const DeviceField &coarse, DeviceField &fine, bool assign, cudaStream_t s) {
  prolong_kernel<<<blocks(fine[0].grid.voxels()), kBlock, 0, s>>>(
      pointers(coarse), Dims(coarse[0].grid), mutable_pointers(fine), Dims(fine[0].grid), assign);
  MRI_CUDA_CHECK(cudaGetLastError());
}
void prolong_add(const DeviceField &coarse, DeviceField &fine, cudaStream_t s) {
  prolong(coarse, fine, false, s);
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

// r = b - A w without its norm (inside a V-cycle, where no norm is read).
void residual_only(const DeviceTensor &j, const DeviceField &w, DeviceField &r, float alpha,
                   float gamma, cudaStream_t s) {
  const long long n = w[0].grid.voxels();
  residual_kernel<false><<<reduce_blocks(n), kReduceBlock, 0, s>>>(
      pointers(j), pointers(w), mutable_pointers(r), Dims(w[0].grid), alpha, gamma, nullptr);
  MRI_CUDA_CHECK(cudaGetLastError());
}

// motion_bench.hpp's set_coarse_block_cycles (read when a plan is made).
std::atomic<bool> g_block_cycles{true};

// Reduction slots.
enum Slot : int { kB2, kR2, kRz, kPap, kRr, kRzNext };

} // namespace

double relative(double r2, double b2) {
  if (r2 == 0)
    return 0;
  return b2 > 0 ? std::sqrt(r2 / b2) : std::numeric_limits<double>::infinity();
}

DeviceReduction::DeviceReduction(std::int64_t max_voxels)
    : partials_(reduce_blocks(max_voxels)), sums_(kSlots) {
  double *p = nullptr;
  if (cudaHostAlloc(reinterpret_cast<void **>(&p), kSlots * sizeof(double), cudaHostAllocDefault) ==
      cudaSuccess)
    pinned_.reset(p);
  else
    cudaGetLastError(); // not sticky: read() takes the pageable copy
}

void DeviceReduction::read(int count, double *out, cudaStream_t s) const {
  double *host = pinned_ ? pinned_.get() : out;
  MRI_CUDA_CHECK(
      cudaMemcpyAsync(host, sums_.get(), count * sizeof(double), cudaMemcpyDeviceToHost, s));
  MRI_CUDA_CHECK(cudaStreamSynchronize(s));
  if (host != out)
    std::copy(host, host + count, out);
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
  // The block's levels: from the first of at most kOneBlockVoxels voxels to the coarsest (the
  // voxels fall from level to level), if they fit its kernel's parameters.
  block_from_ = levels_.size();
  while (block_from_ > 0 && levels_[block_from_ - 1].grid.voxels() <= kOneBlockVoxels)
    --block_from_;
  if (levels_.size() - block_from_ > std::size_t(kMaxBlockLevels) || !g_block_cycles.load())
    block_from_ = levels_.size();
}

void set_coarse_block_cycles(bool on) { g_block_cycles.store(on); }

BlockLevels DeviceMultigrid::block_levels() {
  BlockLevels h{};
  h.count = int(levels_.size() - block_from_);
  h.pre = pre_, h.post = post_;
  for (std::size_t l = block_from_; l < levels_.size(); ++l) {
    Level &lv = levels_[l];
    BlockLevel &b = h.level[l - block_from_];
    b.j = pointers(tensor(l));
    b.time = l == 0 ? kNoField : time_column(lv.j); // the finest's right-hand side is the caller's
    b.e = mutable_pointers(unknown(l));
    b.r = mutable_pointers(lv.r);
    b.nx = int(lv.grid.nx()), b.ny = int(lv.grid.ny()), b.nz = int(lv.grid.nz());
    b.alpha = lv.alpha, b.gamma = lv.gamma;
    b.colours = mri::detail::motion::sor_colours(double(lv.gamma));
  }
  return h;
}

// The plain V-cycle from level l >= block_from_ in one launch; the finest grid's passes counted
// as smooth and restrict_residual count them.
void DeviceMultigrid::v_cycle_in_block(std::size_t l) {
  v_cycle_one_block<<<1, kOneBlockThreads, 0, stream_>>>(block_levels(), int(l - block_from_));
  MRI_CUDA_CHECK(cudaGetLastError());
  if (l != 0)
    return;
  const int colours = mri::detail::motion::sor_colours(double(levels_[0].gamma));
  fine_passes_ += levels_.size() == 1 ? std::int64_t(kCoarsestPasses) * colours
                                      : std::int64_t(pre_ + post_) * colours + 1;
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
  residual_only(tensor(l), unknown(l), lv.r, lv.alpha, lv.gamma, stream_);
  if (l == 0)
    ++fine_passes_;
  if (!symmetric_) {
    restrict_mean(channels(pointers(lv.r)), lv.grid, channels(time_column(coarse.j)), coarse.grid,
                  3, -1.0f, kNoChannels, channels(mutable_pointers(coarse.e)), stream_);
    return;
  }
  for (int c = 0; c < 3; ++c)
    restrict_into(l, lv.r[c], coarse.j[kTime[c]], -1.0f);
  zero(coarse.e, stream_);
}

void DeviceMultigrid::v_cycle(std::size_t l) {
  if (!symmetric_ && l >= block_from_) {
    v_cycle_in_block(l);
    return;
  }
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
  for (std::size_t l = 1; l < levels_.size(); ++l) {
    if (!symmetric_) { // r_l = the children's mean of r_{l-1}, and -r_l its right-hand side
      restrict_mean(channels(pointers(levels_[l - 1].r)), levels_[l - 1].grid,
                    channels(mutable_pointers(levels_[l].r)), levels_[l].grid, 3, 1.0f,
                    channels(time_column(levels_[l].j)), kNoChannels, stream_);
      continue;
    }
    for (int c = 0; c < 3; ++c) {
      restrict_into(l - 1, levels_[l - 1].r[c], levels_[l].r[c], 1.0f);
      negate(levels_[l].r[c], levels_[l].j[kTime[c]], stream_);
    }
  }
  const std::size_t coarsest = levels_.size() - 1;
  std::size_t solved = coarsest; // levels from here to the coarsest have had their V-cycle
  if (!symmetric_ && block_from_ <= coarsest) {
    solved = std::max<std::size_t>(block_from_, 1);
    full_multigrid_one_block<<<1, kOneBlockThreads, 0, stream_>>>(block_levels(),
                                                                  int(solved - block_from_));
    MRI_CUDA_CHECK(cudaGetLastError());
  } else {
    zero(levels_[coarsest].e, stream_);
    smooth(coarsest, kCoarsestPasses, false);
  }
  for (std::size_t l = solved; l-- > 1;) {
    prolong(levels_[l + 1].e, levels_[l].e, true, stream_); // the zeroed correction plus P e
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
// the conjugate gradients from the better iterate, or the stop at a non-finite residual: the
// decisions are continue_v_cycles (mri_backend/motion_multigrid_rule.hpp), the CPU's function.
void DeviceMultigrid::v_cycles(MultigridResult &result, double tolerance, double b2) {
  while (result.residual > tolerance && result.cycles < options_.max_cycles) {
    save_w();
    if (options_.full && result.cycles == 0 && levels_.size() > 1)
      full_multigrid();
    else
      v_cycle(0);
    ++result.cycles;
    const double previous = result.residual;
    const bool go_on = continue_v_cycles(
        result, previous, relative(measure(), b2), tolerance, options_.max_cycles,
        [&] {
          restore_w();
          return relative(measure(), b2); // previous, bitwise; its residual into levels_[0].r
        },
        [&] {
          make_symmetric();
          conjugate_gradients(result, tolerance, b2);
        });
    if (!go_on)
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
  for (std::size_t l = 1; l < levels_.size(); ++l) { // J3's 6 channels in one launch per level
    ConstChannels fine;
    MutChannels coarse;
    for (int k = 0; k < 6; ++k)
      fine.c[k] = tensor(l - 1)[kData[k]].data(), coarse.c[k] = levels_[l].j[kData[k]].data();
    restrict_mean(fine, levels_[l - 1].grid, coarse, levels_[l].grid, 6, 1.0f, kNoChannels,
                  kNoChannels, stream_);
  }
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
