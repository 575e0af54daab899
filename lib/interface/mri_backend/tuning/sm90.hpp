#pragma once
// The tuning table of NVIDIA sm_90 (Hopper): every threshold and launch choice of the
// CUDA backend that a new GPU generation would tune again. Each entry names the benchmark that
// measures it; the figures are in docs/performance.md (and, for choices since replaced, in
// docs/history.md). Kernels read these values at compile time (cuda/), the host's choices for the
// device at run time (lib/): changing one changes speed only, never the result beyond the
// rounding of a different summation order (the deterministic methods stay deterministic).
#include <cstddef>

#include "mri_backend/tuning/shapes.hpp"

namespace mri::detail::tuning {

struct Sm90 {
  // ---- The exact F^H D, KernelPolicy::Tuned and SeparableGemm (cuda/exact/); bench_fhd_gpu
  // (FHD-3D-L, FHD-2D): the variants' sweep over tile shapes and staging depths.
  static constexpr FhdTunedShape fhd_tuned{.threads = 128,
                                           .tile_x = 16,
                                           .tile_y = 4,
                                           .smem_samples = 64,
                                           .pass_samples = 4096,
                                           .record_float4 = 6,
                                           .max_waves = 16,
                                           .variant = 11};
  static constexpr SeparableGemmShape separable_gemm{.threads = 256,
                                                     .per_thread = 16,
                                                     .forward_threads = 256,
                                                     .max_chunk = 16384,
                                                     .default_budget = std::size_t{2} << 30};
  // Q's spectrum on the tensor cores: 8 warps; 4 stages (128 samples) between flushes; 2^15
  // scale; bench_recon_gpu (RECON-3D's Q phase).
  static constexpr DirichletTileShape dirichlet{.fx = 64,
                                                .fy = 32,
                                                .fz = 8,
                                                .threads = 256,
                                                .stage = 32,
                                                .flush_stages = 4,
                                                .chunk = 65536,
                                                .scale = 32768.0};

  // ---- NUFFT gridding (cuda/nufft/); bench_nufft_front_gpu (uniform, radial, koosh; W 3-8) and
  // bench_nufft_gpu (NUFFT_adjoint_coils, GRID2D). -------------------------------------------
  // RGA: grid points of one row per work item. In 3D 8 (one point per thread re-reads each sample
  // W times); in 2D 1 (the 2D grids hold too few items of 8 to fill the GPU).
  static constexpr int gather_run(int dims) { return dims == 3 ? 8 : 1; }
  // RGA: an item whose runs hold more samples than this (a radial or koosh centre) is summed by a
  // block (gather_dense_kernel) instead of one thread: the fastest of 128 ... 2048 per width.
  static constexpr unsigned gather_dense(int dims, int width) {
    if (dims == 2) return width <= 6 ? 256 : 512;
    return width <= 3 ? 256 : width <= 5 ? 512 : 1024;
  }
  static constexpr int gather_dense_threads = 128;
  static constexpr unsigned gather_dense_max_blocks = 2048; // the blocks stride over the dense items
  // SM: samples per subproblem (a tile's samples cut into runs of at most this, so that a dense
  // centre tile is summed by many blocks), and consecutive samples per thread.
  static constexpr unsigned sm_subproblem = 1024;
  static constexpr int sm_run = 4;
  // Coils the coil-batched gather grids per pass (adjoint_coils).
  static constexpr int coil_block = 4;
  // ScatterMethod::Auto: SM in 3D; in 2D SM from this many samples per oversampled grid point,
  // global atomics (GA) below (GRID2D, at half a sample a point, is faster by GA).
  static constexpr double sm_min_samples_per_point_2d = 1.0;
  // Gridding::Auto of a NufftOperator on CUDA (the fastest deterministic adjoint): the gather in
  // 3D up to this width, SM in fixed point (ScatterFixed) above it and in 2D.
  static constexpr int gather_max_width_3d = 3;

  // ---- Host-to-device uploads through the pinned ring (cuda/staged_upload.cu); bench_nufft_gpu
  // (NUFFT_plan from host points).
  static constexpr std::size_t upload_threads = 8;
  static constexpr std::size_t upload_chunk_bytes = std::size_t{384} << 10; // 16 slots = 6 MB pinned
  static constexpr std::size_t upload_staging_min_bytes = std::size_t{1} << 20;

  // ---- SENSE's batched Toeplitz pass (cuda/sense/sense_toeplitz.cu); bench_recon_gpu
  // (RECON-3D-MC): what the padded grids of one pass may take (cuFFT's work area on top).
  static constexpr std::size_t sense_batch_bytes = std::size_t{512} << 20;

  // ---- Method::Auto's cost model (lib/recon/method_choice.cpp): exact pairs/s from bench_fhd_gpu
  // (FHD-3D-L, Tuned on the tensor cores) and bench_recon_gpu (RECON-3D's Q phase, Dirichlet
  // spectrum); the NUFFT's spread and FFT rates from bench_recon_gpu's RECON-3D/nufft phases (its
  // F^H D and Q spread the same M W^d onto grids 8x apart); its fixed cost from RECON-2D/nufft's
  // Q phase beyond spread and FFT.
  static constexpr MethodCostRates method_cost{.exact_pairs_per_second = 1.2e13,
                                               .exact_q_3d_pairs_per_second = 5.4e13,
                                               .nufft_spread_per_second = 4.5e10,
                                               .nufft_fft_per_second = 5.1e11,
                                               .nufft_fixed_seconds = 2.5e-4};
};

} // namespace mri::detail::tuning
