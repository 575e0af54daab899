#pragma once
// The CUDA F^H D backend as plain C++ (no CUDA types): what lib/ and the tests/benchmarks call.
//
//   adjoint: s(x) = sum_m c_m exp(+i 2 pi sum_a k_ma x_a / period_a)  on the grid `out`
//            (coordinates {-L/2 .. L/2-1}, voxel index x + Lx*(y + Ly*z)), exactly the
//            semantics of mri::detail::adjoint_sum_f64. F^H: out == period == image grid;
//            Q: out = period.doubled(), c = |phi|^2 (or the density weights).
//   forward: (F x)_m = sum_{x in out} x_n exp(-i 2 pi sum_a k_ma x_a / period_a); with
//            out == period it is mri::detail::forward_sum_f64. Two ways (ForwardPath): a simple
//            accurate reference kernel (thread per sample) and the separable GEMM form
//            (cuBLAS, cuda/exact/fhd_separable_gemm.cu) in float or double.
//
// Each KernelPolicy is one of the F^H D stages (Stone et al. 2008; docs/architecture.md) or ours
// (cuda/README.md maps files to stages); no policy ever runs another kernel in its place. Every
// CUDA failure becomes mri::CudaError naming the call.
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "mri/grid.hpp"
#include "mri/image.hpp" // mri::cfloat
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace mri::cuda::detail {

// The policy that runs for `policy`: Auto becomes the fastest accurate policy (every other
// policy has its kernel); a value outside the enum throws InvalidArgument.
KernelPolicy resolve_policy(KernelPolicy policy);
// The same for an operator of `precision`: float32 as above; float64 runs SeparableGemm (the
// one policy that computes in double) for Auto and SeparableGemm, and any other policy (they
// compute in float32) throws Unsupported rather than silently computing in float.
KernelPolicy resolve_policy(KernelPolicy policy, Precision precision);

// How FhdPlan::forward computes F x.
enum class ForwardPath {
  Reference,  // cuda/exact/fhd_forward.cu: thread per sample, accurate sincospif (the tests' yardstick)
  GemmFloat,  // separable GEMM form, cuBLAS CGEMM (float32 products and sums, phases in double)
  GemmDouble  // separable GEMM form, cuBLAS ZGEMM (float64 throughout)
};
const char *to_string(ForwardPath path);
// The fastest forward path of `precision` (float64: GemmDouble).
ForwardPath forward_path(Precision precision);

// SeparableGemm's chunking (fhd_separable_gemm.cu). The operands of one chunk of samples take
// chunk x (rows + cols) complex doubles; the chunk is sized from a memory budget so that any M
// streams through fixed buffers.
struct SeparableGemmConfig {
  std::size_t max_chunk_samples = 0;   // 0: 16384 (and the budget below)
  std::size_t memory_budget_bytes = 0; // 0: a quarter of the free device memory, at most 2 GiB
  bool gauss_3m = false;               // cublasZgemm3m / Cgemm3m (3 real products, not 4)
};
// The product a plan runs: the voxel index split as n = r + rows * q at one axis (the low
// extent of the split axis on the row side), R (rows x cols) += A^T (rows x chunk) B.
struct SeparableGemmShape {
  int rows = 0, cols = 0;
  int split_axis = 0, split_low = 0; // the axis split and its extent on the row side
  std::size_t chunk_samples = 0;     // samples per GEMM (K)
  std::size_t chunks = 0;            // GEMMs per call
};

// How much device memory an FhdPlan may hold (see FhdPlan: resident or chunked).
struct FhdPlanOptions {
  // 0: 90% of the free device memory (cudaMemGetInfo) when the plan is created; the rest is
  // left to cuBLAS/cuFFT work areas and the caller's buffers. Tests force small values.
  std::size_t memory_budget_bytes = 0;
  // The output grid as a window of a larger grid `whole` (same dims), from its voxel `first`:
  // the coordinates are whole's ({-L/2 .. L/2-1} of whole's extents), so a plan on a slab of
  // planes computes exactly whole's values there, each voxel's sum the same (cuda/devices/device_slabs.hpp).
  // Unset: out is the whole grid.
  struct Window {
    Grid whole;
    std::array<std::int64_t, 3> first{};
  };
  std::optional<Window> window;
};

// A plan owns the device copies of one trajectory and the buffers of one problem size,
// allocated once (per-policy scratch on first use) and reused by every call. Not thread-safe:
// one plan per host thread. Movable, not copyable.
//
// Memory layout, chosen at construction against the memory budget (FhdPlanOptions):
//  - resident (everything fits: resident_bytes(out, M) <= budget and M < 2^31): the whole
//    trajectory and an M-sample buffer live on the device; every entry point works.
//  - chunked (otherwise): the plan keeps a host copy of the trajectory and at most
//    chunk_samples() samples on the device (trajectory, coefficients / results and the
//    running policy's scratch, in two upload slots), C = the largest multiple of
//    kChunkQuantum with chunked_bytes(out, C) <= budget (at most 2^30). The host entry points
//    (adjoint, forward, adjoint_f64, forward_f64) stream chunk after chunk, uploading chunk
//    i+1 on a second stream while chunk i computes, and accumulate the partial images in
//    double (adjoint) or copy each chunk's samples back (forward): the same sums as the
//    resident plan up to float rounding. M may exceed 2^31 (chunks stay int32-indexed). The
//    device-pointer entry points and the resident buffers (adjoint_device, forward_device,
//    adjoint_f64_device, forward_f64_device, device_samples, upload_samples,
//    download_samples, time_*_ms, adjoint_tuned_variant) need the resident layout and throw
//    Unsupported on a chunked plan; device_image / upload_image / download_image work.
//    Running a policy frees the per-sample scratch another policy left (one policy's scratch
//    at a time).
// A budget that cannot hold even one chunk of kChunkQuantum samples (or, for M <=
// kChunkQuantum, the resident plan) throws Unsupported naming the bytes needed and free.
class FhdPlan {
public:
  using Options = FhdPlanOptions;

  // Throws InvalidArgument when the trajectory is empty, out and period differ in dims, or a
  // sample lies outside period's k-space (the CPU operators' check, Trajectory::check_within);
  // Unsupported when no CUDA device is usable, the output grid exceeds the 32-bit index range,
  // or the memory budget cannot hold the smallest chunk.
  FhdPlan(const Trajectory &trajectory, const Grid &out, const Grid &period);
  FhdPlan(const Trajectory &trajectory, const Grid &out, const Grid &period, const FhdPlanOptions &options);
  ~FhdPlan();
  FhdPlan(FhdPlan &&) noexcept;
  FhdPlan &operator=(FhdPlan &&) noexcept;
  FhdPlan(const FhdPlan &) = delete;
  FhdPlan &operator=(const FhdPlan &) = delete;

  std::size_t samples() const;   // M
  std::size_t voxels() const;    // out.voxels()
  const Grid &out() const;
  const Grid &period() const;

  // The layout chosen at construction (see above).
  bool chunked() const;
  std::size_t chunk_samples() const;       // samples on the device at a time: M when resident
  std::size_t chunks() const;              // chunks per host call: 1 when resident
  std::size_t memory_budget_bytes() const; // the budget the layout was chosen against
  // Chunks hold a multiple of this many samples (a multiple of Register's 1024-sample blocks
  // and the constant policies' 1536-sample launches, so their sums group the samples as in
  // the resident plan); also the smallest chunk.
  static constexpr std::size_t kChunkQuantum = 3072;
  // The device bytes the layout rule compares with the budget, for a plan on `out` (current
  // device): resident with `samples` samples, or chunked with chunks of `chunk_samples`.
  // Per sample: resident 12 (trajectory) + 8 (samples) + 160 (the largest policy scratch,
  // Tuned's tensor-core records); chunked 2 x (12 + 16) (two upload slots, sized for complex
  // double) + 160; plus 7 x 160 (the records' last group padded to 8 samples).
  // Per voxel 36 (the image, a complex-double image: SeparableGemm's or the chunked
  // accumulator, Gather's coordinates), plus a bound on Tuned's split partial images.
  // SeparableGemm's operands: resident, their own budget (SeparableGemmConfig); chunked, at
  // most 96 bytes per chunk sample unless SeparableGemmConfig::memory_budget_bytes says more.
  static std::size_t resident_bytes(const Grid &out, std::size_t samples);
  static std::size_t chunked_bytes(const Grid &out, std::size_t chunk_samples);

  // Host arrays: c_host holds M values, result_host out.voxels(). Blocks until the result is
  // on the host; every element of result_host is written.
  void adjoint(KernelPolicy policy, const cfloat *c_host, cfloat *result_host);
  // image_host holds out.voxels() values, result_host M. Blocks. The two-argument form runs
  // ForwardPath::Reference.
  void forward(const cfloat *image_host, cfloat *result_host);
  void forward(ForwardPath path, const cfloat *image_host, cfloat *result_host);

  // Device pointers (any device allocation, e.g. device_samples()/device_image() or a GPU CG's
  // vectors): enqueued on the plan's stream, returns without waiting (synchronize() waits).
  // c_dev must not alias result_dev. Resident plans only (Unsupported when chunked).
  void adjoint_device(KernelPolicy policy, const cfloat *c_dev, cfloat *result_dev);
  // `coils` coefficient vectors at once: c_dev holds coils x M values (coil-major, the BART
  // layout), result_dev coils x out.voxels() (coil v's image at v x voxels). SeparableGemm
  // evaluates each phase once for all of them (the coils are more columns of one GEMM; its
  // operands and a complex-double image per coil stay in the plan's workspace); the other
  // policies run one coil at a time. InvalidArgument when coils < 1.
  void adjoint_coils_device(KernelPolicy policy, const cfloat *c_dev, int coils, cfloat *result_dev);
  // The coils adjoint_coils_device evaluates together for `policy` on a grid of `voxels`:
  // SeparableGemm 8 up to 2^16 voxels, 4 up to 2^18, else 1 (tuned: cuda/exact/fhd_separable_gemm.cu);
  // the other policies 1 (why phase reuse gains them nothing: docs/sense.md).
  static int coils_per_pass(KernelPolicy policy, std::int64_t voxels);
  void forward_device(const cfloat *image_dev, cfloat *result_dev); // ForwardPath::Reference
  void forward_device(ForwardPath path, const cfloat *image_dev, cfloat *result_dev);
  void synchronize();
  void *stream() const; // the cudaStream_t the plan enqueues on, as void*

  // The plan's resident device buffers: M samples and out.voxels() image values (a chunked
  // plan has no M-sample buffer: the *_samples calls throw Unsupported there).
  cfloat *device_samples();
  cfloat *device_image();
  void upload_samples(const cfloat *host);
  void upload_image(const cfloat *host);
  void download_samples(cfloat *host);
  void download_image(cfloat *host);

  // One adjoint / forward on the resident buffers (device_samples -> device_image and back),
  // timed with CUDA events on the plan's stream; every pass of the policy (operand packing,
  // constant uploads, partial-sum reduction) is inside the timed region. Milliseconds.
  float time_adjoint_ms(KernelPolicy policy);
  float time_forward_ms(); // ForwardPath::Reference
  float time_forward_ms(ForwardPath path);

  // Float64 end to end through the SeparableGemm policy (ZGEMM): coefficients, image and
  // results in complex double (the cfloat API rounds its output to float). Host forms block
  // (and stream on a chunked plan); device forms enqueue on the plan's stream (inputs must not
  // alias outputs; resident plans only).
  void adjoint_f64(const std::complex<double> *c_host, std::complex<double> *result_host);
  void adjoint_f64_device(const std::complex<double> *c_dev, std::complex<double> *result_dev);
  void forward_f64(const std::complex<double> *image_host, std::complex<double> *result_host);
  void forward_f64_device(const std::complex<double> *image_dev, std::complex<double> *result_dev);

  // SeparableGemm's chunking; takes effect at the next call (the tests force many chunks).
  void set_separable_config(const SeparableGemmConfig &config);
  SeparableGemmShape separable_shape(); // queries free memory on first use

  // The Tuned policy's variants (cuda/exact/fhd_tuned.cu; KernelPolicy::Tuned runs
  // tuned_default_variant()), for the benchmark's ablation and the tests. Same semantics as
  // adjoint / adjoint_device / time_adjoint_ms; InvalidArgument for an unknown variant.
  // Resident plans only.
  void adjoint_tuned_variant(int variant, const cfloat *c_host, cfloat *result_host);
  void adjoint_device_tuned_variant(int variant, const cfloat *c_dev, cfloat *result_dev);
  float time_tuned_variant_ms(int variant);

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

int tuned_variant_count();
int tuned_default_variant();
const char *tuned_variant_name(int variant);

// SFU microbenchmark: sustained __sincosf throughput of the current device in special-function
// operations per second (one __sincosf = MUFU.SIN + MUFU.COS = 2 operations), the median of
// `repeats` timed launches after a warm-up. A kernel that evaluates one sincos per (voxel,
// sample) pair is bound at ops_per_second / 2 pairs/s.
struct SincosThroughput {
  double ops_per_second = 0;
  double ops_per_launch = 0;
  double median_seconds = 0; // of one launch
};
SincosThroughput measure_sincos_throughput(int repeats = 5);

// FFMA microbenchmark: sustained FP32 fused multiply-adds per second of the current device on
// independent chains (the FP32 pipe's bound; Tuned's), and the SM clock that rate implies at
// 128 FP32 lanes per SM: the clock the card holds under a full FP32 load.
struct FfmaThroughput {
  double ffma_per_second = 0;
  double implied_sm_clock_hz = 0;
  double median_seconds = 0; // of one launch
};
FfmaThroughput measure_ffma_throughput(int repeats = 5);

// Tensor-core microbenchmark: sustained mma.sync m16n8k16 (float16 in, float accumulate)
// multiply-adds per second of the current device, independent tiles, nothing else in the loop:
// the bound of the Dirichlet spectrum's sum (cuda/exact/dirichlet_spectrum.cu), 3 such products per term.
struct HmmaThroughput {
  double macs_per_second = 0;
  double median_seconds = 0; // of one launch
};
HmmaThroughput measure_hmma_throughput(int repeats = 5);

// cuBLAS ZGEMM throughput of the current device on random operands, the bound of the
// SeparableGemm policy: complex multiply-adds per second (1 MAC = 8 real FLOPs) of
// C (m x n) = A^T B with A k x m and B k x n (the policy's layout), median of `repeats`.
struct GemmThroughput {
  double complex_macs_per_second = 0;
  double median_seconds = 0;
};
GemmThroughput measure_zgemm_throughput(int m, int n, int k, int repeats = 5, bool gauss_3m = false);

// Name and SM count of device 0, for benchmark context.
struct DeviceInfo {
  char name[256] = {};
  int multiprocessors = 0;
  int sm_clock_khz = 0;
};
DeviceInfo device_info();

} // namespace mri::cuda::detail
