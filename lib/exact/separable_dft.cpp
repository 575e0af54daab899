// The fast float32 CPU path of the exact non-uniform DFT (Precision::Float32).
//
// On a Cartesian output grid the phase separates per axis,
//     exp(i 2 pi k.x / p) = ex(k, x) * ey(k, y) * ez(k, z),
// so F^H c over one chunk of samples is a complex matrix product
//     R[x, (y,z)] = sum_m A[m, x] * B[m, (y,z)],  A[m, x] = c_m ex(k_m, x),
//                                                  B[m, (y,z)] = ey(k_m, y) ez(k_m, z),
// and the forward sum is the same product with the roles of the axes swapped:
//     T[m, (y,z)] = sum_x conj ex(k_m, x) X[x, (y,z)],   (F X)_m = sum_(y,z) T[m, (y,z)] conj(ey ez).
// Both are GEMM-bound (N*M complex multiply-adds); the phase tables are O((nx + ny*nz) M)
// and are built without per-entry trig:
//   - per sample and axis, two double-precision sincos of phases reduced in turns
//     (t - nearbyint(t)): the start exp(i 2 pi k x0 / p) and the step exp(i 2 pi k / p);
//   - along an axis, an angle-addition recurrence in double: in blocks of W lanes, a double
//     anchor advanced by step^W times float powers step^0..step^(W-1) (the tables the GEMM
//     reads along its vector lanes), or a plain double recurrence across W samples (the
//     forward's tables, vectorised over samples). Every table entry is within a few float
//     ulps of the exact phasor.
//
// The GEMM is our own register-blocked micro-kernel, not Eigen: libmri is compiled for the
// baseline ISA (SSE2; -march is left to the builder, see lib/CMakeLists.txt), where Eigen's
// complex<float> GEMM cannot use the wider vector units the machine has. The kernels are
// compiled per ISA with function target attributes and chosen at run time (AVX-512F, AVX2+FMA,
// portable C++), so the library stays runnable on any x86-64 (and non-x86) machine.
// MRI_SEPARABLE_KERNEL=generic|avx2|avx512 caps the choice (used by the tests to cover every
// kernel; a request above the CPU's support is ignored).
//
// Accumulation: each micro-kernel call sums at most kChunk = 256 samples (adjoint) or one
// image row of nx voxels (forward) in float registers. Those partial sums are then added in
// double (adjoint: a per-thread double accumulator for the thread's block of output columns;
// forward: the NR columns of a tile are weighted and summed in float, then added into a
// double accumulator per sample), so the float error stays ~eps * sqrt(256) instead of
// growing like eps * sqrt(M) over the trajectory. Against the float64 reference: rel L2
// ~3e-7 (adjoint) and ~1e-7..3e-7 (forward), independent of M (tests/exact/test_fourier.cpp).
//
// Threading (OpenMP, the library's): the adjoint splits the output columns (y,z) into about
// one block per thread (each block streams all samples: no reduction, no atomics), the
// forward splits the samples. Memory per thread is bounded (tables for kChunk samples x the
// thread's block, a ~1 MB double accumulator) independent of M; the forward adds one packed
// copy of the image. 3D 128^3 (and Q's 256^3) needs no large buffers.
//
// Speed: the micro-kernel loop is most of the time, the phase tables' sincos a few percent;
// figures: docs/performance.md (the F^H D stages, CPU), benchmarks/bench_fhd_cpu.cpp.
#include <exception>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "platform/cpu_isa.hpp"
#include "separable_dft_kernels.hpp"
#include "mri_backend/direct_sums.hpp"

namespace mri::detail {
namespace {

using namespace separable;

int thread_count() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// The best ISA this CPU has, capped by MRI_SEPARABLE_KERNEL (avx512_isa: AVX-512F, no VL).
SeparableIsa selected_isa() {
  switch (select_cpu_isa("MRI_SEPARABLE_KERNEL", /*avx512_needs_vl=*/false)) {
#if MRI_SEPARABLE_X86
  case CpuIsa::Avx512: return avx512_isa();
  case CpuIsa::Avx2: return avx2_isa();
#endif
  default: return generic_isa();
  }
}

// Runs body(thread_scratch, task) for task in [0, tasks) on the OpenMP team; an exception
// thrown by a task (bad_alloc) is rethrown on the calling thread.
template <class Scratch, class Body> void parallel_tasks(i64 tasks, Body &&body) {
  std::exception_ptr error;
#pragma omp parallel if (tasks > 1)
  {
    Scratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (i64 t = 0; t < tasks; ++t) {
      try {
        body(scratch, t);
      } catch (...) {
#pragma omp critical(mri_separable_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

// Packs the image as [q][x][NR] complex (column panels of NR columns, zero beyond cols).
void pack_image(const Image &img, int NR, std::vector<float> &packed, i64 &nq) {
  const Grid &g = img.grid();
  const i64 Lx = g.nx(), cols = g.ny() * g.nz();
  nq = ceil_div(cols, NR);
  packed.assign(static_cast<std::size_t>(nq * Lx * 2 * NR), 0.0f);
  const cfloat *src = img.data();
  float *dst = packed.data();
#pragma omp parallel for schedule(static) if (nq * Lx > 65536)
  for (i64 q = 0; q < nq; ++q)
    for (int j = 0; j < NR && q * NR + j < cols; ++j)
      for (i64 x = 0; x < Lx; ++x) {
        const cfloat v = src[(q * NR + j) * Lx + x];
        float *d = dst + ((q * Lx + x) * NR + j) * 2;
        d[0] = v.real();
        d[1] = v.imag();
      }
}

// Column-to-table offsets for the forward (complex units of the y / z tables).
void column_maps(const Grid &g, std::vector<std::int32_t> &ymap, std::vector<std::int32_t> &zmap) {
  const i64 cols = g.ny() * g.nz();
  ymap.resize(static_cast<std::size_t>(cols));
  zmap.resize(static_cast<std::size_t>(cols));
  for (i64 j = 0; j < cols; ++j) {
    ymap[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(2 * (j % g.ny()));
    zmap[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(2 * (j / g.ny()));
  }
}

void run_adjoint(const AdjointJob &job, const SeparableIsa &isa) {
  const i64 cols = job.ax[1].L * job.ax[2].L, Lx = job.ax[0].L;
  // One column block per thread, a multiple of NR columns, capped at 1024 columns and 2^16
  // accumulator entries: the per-thread double accumulator (16 B * Lx * block <= 1 MB) and
  // column panels (8 B * kChunk * block <= 2 MB) stay near L2 size whatever the grid and M.
  const i64 cap = std::max<i64>(isa.nr, std::min<i64>(1024, (i64{1} << 16) / std::max<i64>(Lx, 1)) / isa.nr * isa.nr);
  const i64 per_thread = ceil_div(ceil_div(cols, thread_count()), isa.nr) * isa.nr;
  const i64 nc = std::min(cap, per_thread);
  const i64 tasks = ceil_div(cols, nc);
  parallel_tasks<AdjointScratch>(tasks, [&](AdjointScratch &s, i64 t) {
    isa.adjoint(job, t * nc, std::min(cols, (t + 1) * nc), s);
  });
}

void run_forward(const Trajectory &t, const Image &img, cfloat *result, const SeparableIsa &isa) {
  const Grid &g = img.grid();
  ForwardJob job;
  job.k = t.data();
  job.m = static_cast<i64>(t.size());
  for (int a = 0; a < 3; ++a) job.ax[a] = make_axis(g, g, a);
  job.cols = g.ny() * g.nz();
  std::vector<float> packed;
  pack_image(img, isa.nr, packed, job.nq);
  job.image = packed.data();
  std::vector<std::int32_t> ymap, zmap;
  column_maps(g, ymap, zmap);
  job.ymap = ymap.data();
  job.zmap = zmap.data();
  job.out = result;
  const i64 per_task = kForwardPanels * isa.xw;
  const i64 tasks = ceil_div(job.m, per_task);
  parallel_tasks<ForwardScratch>(tasks, [&](ForwardScratch &s, i64 task) {
    const i64 s0 = task * per_task;
    isa.forward(job, s0, std::min(per_task, job.m - s0), s);
  });
}

} // namespace

void adjoint_sum_f32(const Trajectory &t, std::span<const cfloat> c, const Grid &out, const Grid &period,
                     cfloat *result) {
  AdjointJob job;
  job.k = t.data();
  job.c = c.data();
  job.m = static_cast<i64>(std::min(t.size(), c.size()));
  for (int a = 0; a < 3; ++a) job.ax[a] = make_axis(out, period, a);
  job.out = result;
  if (job.m == 0) {
    std::fill(result, result + out.voxels(), cfloat(0, 0));
    return;
  }
  run_adjoint(job, selected_isa());
}

void forward_sum_f32(const Trajectory &t, const Image &x, cfloat *result) {
  if (t.empty()) return;
  run_forward(t, x, result, selected_isa());
}

} // namespace mri::detail
