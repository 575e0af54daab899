// SeparableGemm (ours, beyond the F^H D stages of Stone et al. 2008; docs/architecture.md): the
// exact F^H D sum as a complex matrix product in double precision on the tensor cores (cuBLAS
// ZGEMM: FP64 DMMA), and the forward F x the same way (ZGEMM, or CGEMM in float).
//
// On a Cartesian grid the phase separates per axis. Split the voxel index n = x + Lx (y + Ly z)
// at one axis s into a low and a high part: rows r = (the axes below s, the low digit of s),
// columns q = (the high digit of s, the axes above s), so that n = r + rows * q. With
// e(t) = exp(i 2 pi t) and t in turns,
//     s(n) = sum_m [e(k_m . x_r / p)] [c_m e(k_m . x_q / p)] = sum_m A[m, r] B[m, q]
// where the split axis' coordinate offset -L_s/2 and its low digit sit on the row side and its
// high digit times the low extent on the column side. R = A^T B (rows x cols, column-major) is
// the image in its own layout. Several coils (phase reuse, docs/sense.md): A does not depend on the
// coefficients, so the coils' column operands side by side, B = [B_1 | ... | B_C], make one GEMM
// with C x cols columns whose result is the C images one after another; A's phases are
// evaluated once for all coils, and the column phase once per coil set (coils_per_gemm says how
// many share a GEMM). The split (axis and low extent, any divisor of L_s) minimises rows + cols,
// because the operand pass writes chunk x (rows + cols) values (C coils: rows + C cols) while the
// product does chunk x rows x cols multiply-adds: on FHD-3D-L (128^3) y splits 8 x 16, rows =
// 128 x 8 = 1024, cols = 16 x 128 = 2048: 3072 values per sample instead of 128 + 16384 for
// x | (y, z).
//
// Per chunk of samples (sized from a memory budget: any M streams through fixed buffers, even
// one larger than device memory allows) one kernel per operand writes A and B in double:
// phase in turns formed in double from the float trajectory, evaluated with sincospi (exact
// argument reduction); then cublasZgemm accumulates R (beta = 1 after the first chunk). The
// policy's API stays cfloat (c widened, R rounded at the end); adjoint_f64 keeps double.
// A chunked FhdPlan (fhd_plan.cu) runs this per chunk of its samples, accumulating R across
// its chunks too (separable_adjoint_into), with the operands sized from its memory budget.
//
// Forward, with the same column operand B:
//     T[r, m] = sum_q img[r + rows q] conj(B[m, q])        one GEMM per chunk (img times B^H)
//     (F x)_m = sum_r T[r, m] conj(e(k_m . x_r / p))       one warp per sample, double sums
// ZGEMM (GemmDouble) or CGEMM (GemmFloat: B and T in float, phases still formed in double).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <complex>
#include <vector>

#include "fhd_plan.cuh"
#include "random_fill.cuh"
#include "mri/error.hpp"
#include "mri_backend/tuning.hpp"

namespace mri::cuda::detail {

// The split of the voxel index (see the top of this file).
struct SplitGeom {
  int axis = 0; // the axis split between rows and columns
  int lo = 1;   // extent of its low digit (row side); divides L[axis]
  int hi = 1;   // L[axis] / lo (column side)
  int half = 0; // -origin[axis], the coordinate offset of the split axis (row side)
  int rows = 1, cols = 1;
  int fast_rows = 1; // extent of the rows' fastest digit: x (L[0], or lo when axis == 0)
  int L[3] = {1, 1, 1};
  int origin[3] = {0, 0, 0}; // the coordinate of index 0 per axis (OutGrid's x0, y0, z0)
  double ip[3] = {1, 1, 1}; // 1 / period: turns per voxel per unit of k
};

struct GemmScratch {
  cublasHandle_t handle = nullptr;
  bool ready = false; // split, budget and chunk computed for the current config
  SplitGeom split;
  std::size_t budget = 0; // operand bytes
  std::size_t chunk = 0;  // samples per GEMM, one coil
  DeviceBuffer<double2> rows_op; // adjoint: A (chunk x rows); forward: T (rows x chunk)
  DeviceBuffer<double2> cols_op; // B (chunk x cols); the float forward uses half of each
  DeviceBuffer<double2> acc;     // adjoint: R (voxels); ZGEMM forward: the image in double
  DeviceBuffer<double2> io_in, io_out; // staging of the host f64 entry points
  ~GemmScratch() {
    if (handle) cublasDestroy(handle); // a destructor cannot throw
  }
};

void GemmScratchDeleter::operator()(GemmScratch *g) const noexcept { delete g; }

namespace {

inline constexpr auto kGemm = mri::detail::tuning::Gpu::separable_gemm; // launch shape: the tuning table

SplitGeom choose_split(const PlanState &plan) {
  const int L[3] = {plan.out.nx, plan.out.ny, plan.out.nz};
  SplitGeom best;
  long long best_sum = LLONG_MAX;
  for (int s = 0; s < 3; ++s) {
    long long below = 1, above = 1;
    for (int a = 0; a < s; ++a) below *= L[a];
    for (int a = s + 1; a < 3; ++a) above *= L[a];
    for (int d = 1; d <= L[s]; ++d) {
      if (L[s] % d != 0) continue;
      const long long rows = below * d, cols = static_cast<long long>(L[s] / d) * above;
      if (rows + cols < best_sum) {
        best_sum = rows + cols;
        best.axis = s;
        best.lo = d;
        best.hi = L[s] / d;
        best.rows = static_cast<int>(rows);
        best.cols = static_cast<int>(cols);
      }
    }
  }
  const int origin[3] = {plan.out.x0, plan.out.y0, plan.out.z0};
  for (int a = 0; a < 3; ++a) {
    best.L[a] = L[a];
    best.origin[a] = origin[a];
    best.ip[a] = plan.inv_period[a];
  }
  best.half = -origin[best.axis];
  best.fast_rows = best.axis > 0 ? L[0] : best.lo;
  return best;
}

std::size_t chunk_samples(const PlanState &plan, const GemmScratch &g, int coils);

GemmScratch &scratch(const PlanState &plan) {
  Workspace &ws = *plan.ws;
  if (!ws.gemm) {
    ws.gemm.reset(new GemmScratch);
    MRI_CUBLAS_CHECK(cublasCreate(&ws.gemm->handle));
  }
  GemmScratch &g = *ws.gemm;
  MRI_CUBLAS_CHECK(cublasSetStream(g.handle, plan.stream));
  if (!g.ready) {
    g.split = choose_split(plan);
    const SeparableGemmConfig &cfg = ws.gemm_config;
    std::size_t budget = cfg.memory_budget_bytes ? cfg.memory_budget_bytes : ws.gemm_default_budget;
    if (budget == 0) {
      std::size_t free_bytes = 0, total_bytes = 0;
      MRI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      budget = std::min(free_bytes / 4, kGemm.default_budget);
    }
    g.budget = budget;
    g.ready = true;
    g.chunk = chunk_samples(plan, g, 1);
  }
  return g;
}

// Samples per GEMM when `coils` column operands sit side by side: per sample the operands hold
// rows + coils x cols values.
std::size_t chunk_samples(const PlanState &plan, const GemmScratch &g, int coils) {
  const SeparableGemmConfig &cfg = plan.ws->gemm_config;
  const std::size_t per_sample =
      (static_cast<std::size_t>(g.split.rows) + static_cast<std::size_t>(coils) * g.split.cols) * sizeof(double2);
  std::size_t chunk = std::max<std::size_t>(1, g.budget / per_sample);
  if (chunk >= 64) chunk -= chunk % 64;
  chunk = std::min(chunk, cfg.max_chunk_samples ? cfg.max_chunk_samples : kGemm.max_chunk);
  return std::min(chunk, static_cast<std::size_t>(plan.m));
}

// Component a of t (a known only at run time: selects, no local-memory array).
__device__ __forceinline__ double component(const double3 &t, int a) { return a == 0 ? t.x : (a == 1 ? t.y : t.z); }

// Phase in turns of row r / column q for one sample (t = k / period per axis).
__device__ __forceinline__ double row_turns(const SplitGeom &s, const double3 &t, int r) {
  double acc = 0;
#pragma unroll
  for (int a = 0; a < 2; ++a) // the axes below the split (at most two)
    if (a < s.axis) {
      const int i = r % s.L[a];
      r /= s.L[a];
      acc += component(t, a) * static_cast<double>(i + s.origin[a]);
    }
  return acc + component(t, s.axis) * static_cast<double>(r - s.half); // r: the low digit now
}

__device__ __forceinline__ double col_turns(const SplitGeom &s, const double3 &t, int q) {
  const int high = q % s.hi;
  q /= s.hi;
  double acc = component(t, s.axis) * static_cast<double>(high * s.lo);
#pragma unroll
  for (int a = 1; a < 3; ++a) // the axes above the split
    if (a > s.axis) {
      const int i = q % s.L[a];
      q /= s.L[a];
      acc += component(t, a) * static_cast<double>(i + s.origin[a]);
    }
  return acc;
}

__device__ __forceinline__ double3 sample_turns(const SplitGeom &s, const KPoint &p) {
  return make_double3(static_cast<double>(p.kx) * s.ip[0], static_cast<double>(p.ky) * s.ip[1],
                      static_cast<double>(p.kz) * s.ip[2]);
}

__device__ __forceinline__ void store(float2 &o, double re, double im) {
  o = make_float2(static_cast<float>(re), static_cast<float>(im));
}
__device__ __forceinline__ void store(double2 &o, double re, double im) { o = make_double2(re, im); }

// Walks indices j, j + stride, ... of one side for one sample: e(phase(j)) by sincospi where
// the fastest digit of j rolls over, else by angle addition in double (e *= e(step)), the
// phase growing by the same step while the fastest digit advances by `stride` without rolling
// over. The rows' fastest digit is x (phase step t.x per unit), the columns' the split axis'
// high digit (step t_s * lo). A run of at most kGemm.per_thread steps drifts by ~1e-15.
template <bool kRows> struct PhaseWalk {
  const SplitGeom &s;
  double3 t;
  int fast, stride, digit;
  double sr, si, er, ei; // e(step), current e(phase)
  __device__ PhaseWalk(const SplitGeom &s_, const double3 &t_, int j, int stride_) : s(s_), t(t_), stride(stride_) {
    fast = kRows ? s.fast_rows : s.hi;
    sincospi(2.0 * stride * (kRows ? t.x : component(t, s.axis) * s.lo), &si, &sr);
    reset(j);
  }
  __device__ void reset(int j) {
    digit = j % fast;
    sincospi(2.0 * (kRows ? row_turns(s, t, j) : col_turns(s, t, j)), &ei, &er);
  }
  __device__ void advance(int j_next) {
    digit += stride;
    if (digit >= fast) return reset(j_next);
    const double nr = er * sr - ei * si;
    ei = er * si + ei * sr;
    er = nr;
  }
};

// Coefficients of one chunk: coil v's value for sample first + i at c[v * stride + first + i];
// none (ptr == nullptr): 1, one coil.
template <class Tc> struct Coefficients {
  const Tc *ptr = nullptr;
  std::size_t stride = 0;
  int coils = 1;
};

// One operand of one chunk: out[i + ld * (j + n v)] = c_v[first+i] e(phase of row/column j),
// i < count, n = rows or cols, for each coil v (its phase evaluated once for all coils).
// Tc: float2 or double2 coefficients; Tv: float2 or double2 operand values. Thread
// (i, blockIdx.y) writes runs of per_thread consecutive j (warps: 32 consecutive samples,
// coalesced); the coefficients are reread per j from L1 rather than held in registers.
template <bool kRows, class Tc, class Tv>
__global__ void __launch_bounds__(kGemm.threads)
    operand_kernel(const KPoint *__restrict__ k, Coefficients<Tc> c, int first, int count, int ld, SplitGeom s,
                   Tv *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const double3 t = sample_turns(s, k[first + i]);
  const int n = kRows ? s.rows : s.cols;
  const std::size_t coil_step = static_cast<std::size_t>(n) * ld;
  for (int j0 = blockIdx.y * kGemm.per_thread; j0 < n; j0 += gridDim.y * kGemm.per_thread) {
    PhaseWalk<kRows> w(s, t, j0, 1);
    const int end = min(j0 + kGemm.per_thread, n);
    for (int j = j0; j < end; ++j) {
      if (j > j0) w.advance(j);
      Tv *o = out + static_cast<std::size_t>(j) * ld + i;
      if (c.ptr == nullptr) {
        store(*o, w.er, w.ei);
        continue;
      }
      for (int v = 0; v < c.coils; ++v) {
        const Tc cv = c.ptr[v * c.stride + first + i];
        const double cr = static_cast<double>(cv.x), ci = static_cast<double>(cv.y);
        store(o[v * coil_step], cr * w.er - ci * w.ei, ci * w.er + cr * w.ei);
      }
    }
  }
}

// Forward, second contraction: result[first + w] = sum_r T[r + rows w] conj(e(row phase)),
// one warp per sample w (lanes stride over r: coalesced), sums in double.
template <class Tt, class Tr>
__global__ void __launch_bounds__(kGemm.forward_threads)
    forward_rows_kernel(const KPoint *__restrict__ k, int first, int count, SplitGeom s, const Tt *__restrict__ T,
                        Tr *__restrict__ result) {
  const int w = static_cast<int>((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5);
  const int lane = threadIdx.x & 31;
  if (w >= count) return; // whole warps (blockDim is a multiple of 32)
  const double3 t = sample_turns(s, k[first + w]);
  const Tt *col = T + static_cast<std::size_t>(w) * s.rows;
  double re = 0, im = 0;
  if (lane < s.rows) {
    PhaseWalk<true> pw(s, t, lane, 32); // x advances by 32 per step: 4 steps per sincospi at nx = 128
    for (int r = lane; r < s.rows; r += 32) {
      if (r > lane) pw.advance(r);
      const double cs = pw.er, sn = pw.ei;
      const double vr = static_cast<double>(col[r].x), vi = static_cast<double>(col[r].y);
      re += vr * cs + vi * sn; // v * exp(-i phi)
      im += vi * cs - vr * sn;
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    re += __shfl_down_sync(0xffffffffu, re, off);
    im += __shfl_down_sync(0xffffffffu, im, off);
  }
  if (lane == 0) store(result[first + w], re, im);
}

template <class Tin, class Tout> __global__ void convert_kernel(const Tin *__restrict__ in, int n, Tout *__restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) store(out[i], static_cast<double>(in[i].x), static_cast<double>(in[i].y));
}

template <class Tin, class Tout> void convert(const PlanState &plan, const Tin *in, int n, Tout *out) {
  convert_kernel<<<blocks_for(n, kGemm.threads), kGemm.threads, 0, plan.stream>>>(in, n, out);
  MRI_CUDA_CHECK_LAUNCH("convert_kernel");
}

template <bool kRows, class Tc, class Tv>
void launch_operand(const PlanState &plan, const SplitGeom &s, Coefficients<Tc> c, int first, int count, int ld, Tv *out) {
  const int n = kRows ? s.rows : s.cols;
  const int ys = std::min((n + kGemm.per_thread - 1) / kGemm.per_thread, 65535);
  const dim3 grid(static_cast<unsigned>(blocks_for(count, kGemm.threads)), static_cast<unsigned>(ys));
  operand_kernel<kRows><<<grid, kGemm.threads, 0, plan.stream>>>(plan.k, c, first, count, ld, s, out);
  MRI_CUDA_CHECK_LAUNCH("operand_kernel");
}

// cuBLAS' complex GEMMs by element type: plain (4 real products) and Gauss 3M (3).
template <class T> struct ComplexGemm;
template <> struct ComplexGemm<double2> {
  static constexpr auto plain = &cublasZgemm_v2;
  static constexpr auto gauss_3m = &cublasZgemm3m;
  static constexpr const char *names[2] = {"cublasZgemm", "cublasZgemm3m"};
};
template <> struct ComplexGemm<float2> {
  static constexpr auto plain = &cublasCgemm_v2;
  static constexpr auto gauss_3m = &cublasCgemm3m;
  static constexpr const char *names[2] = {"cublasCgemm", "cublasCgemm3m"};
};

// C = op(A) op(B) (+ C when accumulate), complex double or float.
template <class T>
void gemm(cublasHandle_t h, bool gauss_3m, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
          const T *A, int lda, const T *B, int ldb, bool accumulate, T *C, int ldc) {
  using G = ComplexGemm<T>;
  const T one{1, 0}, zero{0, 0};
  const auto call = gauss_3m ? G::gauss_3m : G::plain;
  check(call(h, ta, tb, m, n, k, &one, A, lda, B, ldb, accumulate ? &one : &zero, C, ldc), G::names[gauss_3m],
        __FILE__, __LINE__);
}

// R (rows x cols = the output grid, complex double, per coil: c.coils grids one after another) =
// sum over all samples of A^T B_v, added to R when `accumulate` (a chunked plan's later chunks).
template <class Tc>
void separable_adjoint(const PlanState &plan, Coefficients<Tc> c, double2 *R, bool accumulate = false) {
  GemmScratch &g = scratch(plan);
  const SplitGeom &s = g.split;
  const std::size_t chunk_size = chunk_samples(plan, g, c.coils);
  const int chunk = static_cast<int>(chunk_size);
  double2 *A = g.rows_op.grow(chunk_size * s.rows);
  double2 *B = g.cols_op.grow(chunk_size * s.cols * c.coils);
  const bool gauss_3m = plan.ws->gemm_config.gauss_3m;
  for (int first = 0; first < plan.m; first += chunk) {
    const int count = std::min(chunk, plan.m - first);
    launch_operand<true>(plan, s, Coefficients<Tc>{}, first, count, chunk, A);
    launch_operand<false>(plan, s, c, first, count, chunk, B);
    gemm(g.handle, gauss_3m, CUBLAS_OP_T, CUBLAS_OP_N, s.rows, s.cols * c.coils, count, A, chunk, B, chunk,
         accumulate || first > 0, R, s.rows);
  }
}

template <class Tc> Coefficients<Tc> one_coil(const Tc *c) { return {c, 0, 1}; }

// result (M) = F img; T: the operand/product type (float2: CGEMM, double2: ZGEMM).
template <class T, class Tr> void separable_forward(const PlanState &plan, const T *img, Tr *result) {
  GemmScratch &g = scratch(plan);
  const SplitGeom &s = g.split;
  const int chunk = static_cast<int>(g.chunk);
  T *B = reinterpret_cast<T *>(g.cols_op.grow(g.chunk * s.cols));
  T *Tm = reinterpret_cast<T *>(g.rows_op.grow(g.chunk * s.rows));
  const bool gauss_3m = plan.ws->gemm_config.gauss_3m;
  constexpr int kWarps = kGemm.forward_threads / 32;
  for (int first = 0; first < plan.m; first += chunk) {
    const int count = std::min(chunk, plan.m - first);
    launch_operand<false>(plan, s, Coefficients<float2>{}, first, count, chunk, B);
    gemm(g.handle, gauss_3m, CUBLAS_OP_N, CUBLAS_OP_C, s.rows, count, s.cols, img, s.rows, B, chunk, false, Tm, s.rows);
    forward_rows_kernel<<<blocks_for(count, kWarps), kGemm.forward_threads, 0, plan.stream>>>(plan.k, first, count, s,
                                                                                                static_cast<const T *>(Tm), result);
    MRI_CUDA_CHECK_LAUNCH("forward_rows_kernel");
  }
}

} // namespace

// Coils per GEMM. More columns pay where the operand pass is a large share of the work and cost
// where one coil's GEMM already fills the GPU, so the count falls as the grid grows. Tuned by
// bench_fhd_gpu's coils-8 rows (per-coil rate against one coil at a time; docs/sense.md, phase
// reuse in the exact F^H D).
int coils_per_gemm(std::int64_t voxels) { return voxels <= (1 << 16) ? 8 : (voxels <= (1 << 18) ? 4 : 1); }

void run_adjoint_coils_gemm(const PlanState &plan, const float2 *c, int coils, float2 *out) {
  const int group = std::min(coils, coils_per_gemm(plan.out.voxels)); // group x voxels <= 2^21
  double2 *R = scratch(plan).acc.grow(static_cast<std::size_t>(group) * plan.out.voxels);
  for (int c0 = 0; c0 < coils; c0 += group) {
    const int count = std::min(group, coils - c0);
    const auto m = static_cast<std::size_t>(plan.m);
    separable_adjoint(plan, Coefficients<float2>{c + c0 * m, m, count}, R);
    convert(plan, static_cast<const double2 *>(R), count * plan.out.voxels,
            out + static_cast<std::size_t>(c0) * plan.out.voxels);
  }
}

template <> void run_adjoint<KernelPolicy::SeparableGemm>(const PlanState &plan, const float2 *c, float2 *out) {
  run_adjoint_coils_gemm(plan, c, 1, out);
}

void run_forward_gemm(const PlanState &plan, const float2 *image, float2 *result, bool in_double) {
  if (!in_double) return separable_forward(plan, image, result);
  double2 *img = scratch(plan).acc.grow(static_cast<std::size_t>(plan.out.voxels));
  convert(plan, image, plan.out.voxels, img);
  separable_forward(plan, static_cast<const double2 *>(img), result);
}

void separable_adjoint_into(const PlanState &plan, const float2 *c, double2 *R, bool accumulate) {
  separable_adjoint(plan, one_coil(c), R, accumulate);
}
void separable_adjoint_into(const PlanState &plan, const double2 *c, double2 *R, bool accumulate) {
  separable_adjoint(plan, one_coil(c), R, accumulate);
}
void separable_forward_double(const PlanState &plan, const double2 *image, float2 *result) {
  separable_forward(plan, image, result);
}
void separable_forward_double(const PlanState &plan, const double2 *image, double2 *result) {
  separable_forward(plan, image, result);
}

void release_separable_operands(Workspace &ws) {
  if (!ws.gemm) return;
  ws.gemm->rows_op = DeviceBuffer<double2>();
  ws.gemm->cols_op = DeviceBuffer<double2>();
  ws.gemm->io_in = DeviceBuffer<double2>();
  ws.gemm->io_out = DeviceBuffer<double2>();
}

void FhdPlan::adjoint_f64_device(const std::complex<double> *c_dev, std::complex<double> *result_dev) {
  require_resident(*impl_, "adjoint_f64_device");
  separable_adjoint(impl_->state, one_coil(reinterpret_cast<const double2 *>(c_dev)), reinterpret_cast<double2 *>(result_dev));
}

void FhdPlan::forward_f64_device(const std::complex<double> *image_dev, std::complex<double> *result_dev) {
  require_resident(*impl_, "forward_f64_device");
  separable_forward(impl_->state, reinterpret_cast<const double2 *>(image_dev), reinterpret_cast<double2 *>(result_dev));
}

void FhdPlan::adjoint_f64(const std::complex<double> *c_host, std::complex<double> *result_host) {
  if (impl_->streaming)
    return streamed_adjoint_f64(*impl_, reinterpret_cast<const double2 *>(c_host), reinterpret_cast<double2 *>(result_host));
  const PlanState &s = impl_->state;
  GemmScratch &g = scratch(s);
  double2 *c = g.io_in.grow(impl_->m);
  double2 *out = g.io_out.grow(voxels());
  MRI_CUDA_CHECK(cudaMemcpyAsync(c, c_host, impl_->m * sizeof(double2), cudaMemcpyHostToDevice, s.stream));
  adjoint_f64_device(reinterpret_cast<const std::complex<double> *>(c), reinterpret_cast<std::complex<double> *>(out));
  MRI_CUDA_CHECK(cudaMemcpyAsync(result_host, out, voxels() * sizeof(double2), cudaMemcpyDeviceToHost, s.stream));
  synchronize();
}

void FhdPlan::forward_f64(const std::complex<double> *image_host, std::complex<double> *result_host) {
  if (impl_->streaming)
    return streamed_forward_f64(*impl_, reinterpret_cast<const double2 *>(image_host),
                                reinterpret_cast<double2 *>(result_host));
  const PlanState &s = impl_->state;
  GemmScratch &g = scratch(s);
  double2 *img = g.io_in.grow(voxels());
  double2 *out = g.io_out.grow(impl_->m);
  MRI_CUDA_CHECK(cudaMemcpyAsync(img, image_host, voxels() * sizeof(double2), cudaMemcpyHostToDevice, s.stream));
  forward_f64_device(reinterpret_cast<const std::complex<double> *>(img), reinterpret_cast<std::complex<double> *>(out));
  MRI_CUDA_CHECK(cudaMemcpyAsync(result_host, out, impl_->m * sizeof(double2), cudaMemcpyDeviceToHost, s.stream));
  synchronize();
}

void FhdPlan::set_separable_config(const SeparableGemmConfig &config) {
  impl_->ws.gemm_config = config;
  if (impl_->ws.gemm) impl_->ws.gemm->ready = false;
}

SeparableGemmShape FhdPlan::separable_shape() {
  const GemmScratch &g = scratch(impl_->state);
  SeparableGemmShape shape;
  shape.rows = g.split.rows;
  shape.cols = g.split.cols;
  shape.split_axis = g.split.axis;
  shape.split_low = g.split.lo;
  shape.chunk_samples = g.chunk;
  // GEMMs per call: per plan chunk (all of M when resident) ceil(its samples / g.chunk).
  const std::size_t whole = impl_->m / impl_->chunk, rest = impl_->m % impl_->chunk;
  shape.chunks = whole * ((impl_->chunk + g.chunk - 1) / g.chunk) + (rest + g.chunk - 1) / g.chunk;
  return shape;
}

GemmThroughput measure_zgemm_throughput(int m, int n, int k, int repeats, bool gauss_3m) {
  const std::size_t na = static_cast<std::size_t>(k) * m, nb = static_cast<std::size_t>(k) * n,
                    nc = static_cast<std::size_t>(m) * n;
  DeviceBuffer<double2> a(na), b(nb), c(nc);
  Stream stream;
  Event start(true), stop(true);
  fill_uniform(reinterpret_cast<double *>(a.get()), 2 * na, 1, -0.5, 0.5, stream.get());
  fill_uniform(reinterpret_cast<double *>(b.get()), 2 * nb, 2, -0.5, 0.5, stream.get());
  cublasHandle_t h = nullptr;
  MRI_CUBLAS_CHECK(cublasCreate(&h));
  std::unique_ptr<cublasContext, cublasStatus_t (*)(cublasHandle_t)> guard(h, cublasDestroy);
  MRI_CUBLAS_CHECK(cublasSetStream(h, stream.get()));
  const auto once = [&] { gemm(h, gauss_3m, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, a.get(), k, b.get(), k, false, c.get(), m); };
  once(); // warm-up: kernel selection, module load
  std::vector<float> ms;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    MRI_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
    once();
    MRI_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
    MRI_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float t = 0;
    MRI_CUDA_CHECK(cudaEventElapsedTime(&t, start.get(), stop.get()));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  GemmThroughput r;
  r.median_seconds = ms[ms.size() / 2] * 1e-3;
  r.complex_macs_per_second = static_cast<double>(m) * n * k / r.median_seconds;
  return r;
}

} // namespace mri::cuda::detail
