// Stage 4 of the seeds, "constant-chunked": the register kernel with the k-space records in
// __constant__ memory. Every thread of a warp reads the same sample at the same time, which
// the constant cache serves as one broadcast; the records are AoS (PackedSample: 2 pi k/period
// and the coefficient, 20 bytes) so a sample's fields share a constant-cache line. The 64 KB
// bank holds two chunk slots; chunks stream in with cudaMemcpyToSymbolAsync overlapped with the
// previous chunk's kernel (constant_chunks.cuh), one launch per chunk accumulating into the
// output. Trig is still the accurate sincosf.
#include "constant_chunks.cuh"

namespace mri::cuda::detail {
namespace {

__constant__ PackedSample c_chunk[kConstantChunk.slots][kConstantChunk.chunk];

__global__ void __launch_bounds__(kConstantChunk.threads)
    constant_chunked_kernel(int slot, int count, bool first, OutGrid g, float2 *__restrict__ out) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= g.voxels) return;
  float x, y, z;
  voxel_coordinates(g, n, x, y, z);
  const PackedSample *s = c_chunk[slot];
  float re = 0.f, im = 0.f;
#pragma unroll 4
  for (int i = 0; i < count; ++i) {
    const float arg = s[i].kx * x + s[i].ky * y + s[i].kz * z;
    float sn, cs;
    sincosf(arg, &sn, &cs);
    re += s[i].re * cs - s[i].im * sn;
    im += s[i].im * cs + s[i].re * sn;
  }
  if (first) {
    out[n] = make_float2(re, im);
  } else {
    const float2 o = out[n];
    out[n] = make_float2(o.x + re, o.y + im);
  }
}

} // namespace

template <> void run_adjoint<KernelPolicy::ConstantChunked>(const PlanState &plan, const float2 *c, float2 *out) {
  pack_samples(plan, c, PhaseUnit::Radians);
  const int blocks = blocks_for(plan.out.voxels, kConstantChunk.threads);
  run_constant_chunks(plan, c_chunk, [&](int slot, int count, bool first) {
    constant_chunked_kernel<<<blocks, kConstantChunk.threads, 0, plan.stream>>>(slot, count, first, plan.out, out);
    MRI_CUDA_CHECK_LAUNCH("constant_chunked_kernel");
  });
}

} // namespace mri::cuda::detail
