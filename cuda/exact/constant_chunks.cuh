#pragma once
// What the constant-memory policies (fhd_constant_chunked.cu, fhd_sfu_trig.cu) share: the
// packed samples stream through a __constant__ array in chunks, one kernel launch per chunk
// accumulating into the output. The array is declared here with internal linkage, so each
// policy's translation unit has its own copy (whole-program compilation: one constant bank per
// module); the kernel body is one template over the trig functor, and each stage file keeps its
// own named __global__ kernel (what ncu and the SASS dumps show) calling it.
//
// Double buffering: the symbol holds two chunk slots (2 x 30 KB <= 64 KB). Chunk i is copied
// (cudaMemcpyToSymbolAsync, device to device, on the plan's copy stream) into slot i % 2 while
// the kernel of chunk i-1 runs on the compute stream from the other slot. Events order it:
//   copy i   waits for kernel i-2 (last reader of the slot)  -> kernel_done[slot]
//   kernel i waits for copy i                                -> copy_done[slot]
// and the first copies wait for the packing pass (packed_ready), which itself follows every
// kernel of the previous call on the compute stream.
#include <algorithm>

#include "fhd_plan.cuh"

namespace mri::cuda::detail {

struct ConstantChunkLaunch {
  int threads = 256;
  int chunk = 1536; // samples per launch
  int slots = 2;    // double buffer
};
inline constexpr ConstantChunkLaunch kConstantChunk{};
static_assert(kConstantChunk.slots * kConstantChunk.chunk * sizeof(PackedSample) <= 64 * 1024,
              "the __constant__ double buffer must fit the 64 KB constant bank");

namespace {

// This translation unit's chunk slots.
__constant__ PackedSample c_chunk[kConstantChunk.slots][kConstantChunk.chunk];

// One chunk for voxel n (one thread per voxel): the phase arg = k . x in the packing pass' unit,
// trig(arg, sin, cos) per pair (the only difference between the two stages), a float sum over
// the chunk's samples, written (first chunk) or added to the output.
template <class Trig>
__device__ __forceinline__ void constant_chunk_body(Trig trig, int slot, int count, bool first, const OutGrid &g,
                                                    float2 *__restrict__ out) {
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
    trig(arg, sn, cs);
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

// Streams plan.ws->packed through this translation unit's c_chunk.
// `launch(slot, count, first)`: enqueue the chunk kernel on plan.stream; first == true for the
// first chunk (which writes the output instead of adding to it).
template <class Launch> void run_constant_chunks(const PlanState &plan, Launch &&launch) {
  const void *symbol = c_chunk;
  const PackedSample *packed = plan.ws->packed.get();
  MRI_CUDA_CHECK(cudaEventRecord(plan.packed_ready, plan.stream));
  MRI_CUDA_CHECK(cudaStreamWaitEvent(plan.copy_stream, plan.packed_ready, 0));
  const int chunk = kConstantChunk.chunk;
  const int chunks = (plan.m + chunk - 1) / chunk;
  for (int i = 0; i < chunks; ++i) {
    const int slot = i % kConstantChunk.slots;
    const int first = i * chunk;
    const int count = std::min(chunk, plan.m - first);
    if (i >= kConstantChunk.slots) MRI_CUDA_CHECK(cudaStreamWaitEvent(plan.copy_stream, plan.kernel_done[slot], 0));
    MRI_CUDA_CHECK(cudaMemcpyToSymbolAsync(symbol, packed + first, static_cast<std::size_t>(count) * sizeof(PackedSample),
                                           static_cast<std::size_t>(slot) * chunk * sizeof(PackedSample),
                                           cudaMemcpyDeviceToDevice, plan.copy_stream));
    MRI_CUDA_CHECK(cudaEventRecord(plan.copy_done[slot], plan.copy_stream));
    MRI_CUDA_CHECK(cudaStreamWaitEvent(plan.stream, plan.copy_done[slot], 0));
    launch(slot, count, i == 0);
    MRI_CUDA_CHECK(cudaEventRecord(plan.kernel_done[slot], plan.stream));
  }
}

} // namespace mri::cuda::detail
