#pragma once
// The launch shapes a GPU tuning table (sm90.hpp) fills in: what each field of the CUDA kernels'
// launch means. The values belong to the tables.
#include <cstddef>

namespace mri::detail::tuning {

// KernelPolicy::Tuned (cuda/exact/fhd_tuned.cu).
struct FhdTunedShape {
  int threads;
  int tile_x;        // voxels along x per thread (tile_x / 2 symmetric pairs)
  int tile_y;        // rows along y per thread
  int smem_samples;  // samples staged in shared memory at a time
  int pass_samples;  // samples summed in registers before a partial is written
  int record_float4; // packed record: float4 per sample
  int max_waves;     // choose_splits() searches split counts up to this many waves
  int variant;       // the variant KernelPolicy::Tuned runs (an index into fhd_tuned.cu's kVariants)
};

// KernelPolicy::SeparableGemm (cuda/exact/fhd_separable_gemm.cu).
struct SeparableGemmShape {
  int threads;         // operand and conversion kernels
  int per_thread;      // operand columns per thread (amortises the sample's load)
  int forward_threads; // forward row reduction: one warp per sample
  std::size_t max_chunk;
  std::size_t default_budget; // bytes, at most this by default
};

// Q's spectrum as Dirichlet kernels on the tensor cores (cuda/exact/dirichlet_spectrum.cu).
struct DirichletTileShape {
  int fx, fy, fz;   // frequencies per block along each axis
  int threads;      // warps of fx x fy x 1 fz each
  int stage;        // samples per shared-memory stage
  int flush_stages; // stages summed on the tensor cores between flushes
  int chunk;        // samples whose tables are built at a time (and one block sums)
  double scale;     // a power of two that puts the values in float16's normal range
};

// Method::Auto's cost model of F^H D and Q on a GPU (lib/recon/method_choice.cpp): the rates the
// estimate divides by.
struct MethodCostRates {
  double exact_pairs_per_second;      // voxel-sample pairs of the exact F^H D (and of F)
  double exact_q_3d_pairs_per_second; // doubled-grid pairs of Q's spectrum (3D, tensor cores)
  double nufft_spread_per_second;     // kernel weights spread (M W^d a adjoint)
  double nufft_fft_per_second;        // G log2 G of the oversampled grid's FFT
  double nufft_fixed_seconds;         // plans, launches and the spectrum's set-up, once per call
};

} // namespace mri::detail::tuning
