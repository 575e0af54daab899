// Stage 4 of the F^H D stages (Stone et al. 2008; docs/architecture.md), "constant-chunked": the
// register kernel with the k-space records in __constant__ memory. Every thread of a warp reads the
// same sample at the same time, which the constant cache serves as one broadcast; the records are
// AoS (PackedSample: 2 pi k/period and the coefficient, 20 bytes) so a sample's fields share a
// constant-cache line. The 64 KB bank holds two chunk slots; chunks stream in with
// cudaMemcpyToSymbolAsync overlapped with the previous chunk's kernel (constant_chunks.cuh), one
// launch per chunk accumulating into the output. Trig is still the accurate sincosf.
#include "constant_chunks.cuh"

namespace mri::cuda::detail {
namespace {

struct AccurateTrig { // the phase in radians (PhaseUnit::Radians)
  __device__ void operator()(float arg, float &sn, float &cs) const { sincosf(arg, &sn, &cs); }
};

__global__ void __launch_bounds__(kConstantChunk.threads)
    constant_chunked_kernel(int slot, int count, bool first, OutGrid g, float2 *__restrict__ out) {
  constant_chunk_body(AccurateTrig{}, slot, count, first, g, out);
}

} // namespace

template <> void run_adjoint<KernelPolicy::ConstantChunked>(const PlanState &plan, const float2 *c, float2 *out) {
  pack_samples(plan, c, PhaseUnit::Radians);
  const int blocks = blocks_for(plan.out.voxels, kConstantChunk.threads);
  run_constant_chunks(plan, [&](int slot, int count, bool first) {
    constant_chunked_kernel<<<blocks, kConstantChunk.threads, 0, plan.stream>>>(slot, count, first, plan.out, out);
    MRI_CUDA_CHECK_LAUNCH("constant_chunked_kernel");
  });
}

} // namespace mri::cuda::detail
