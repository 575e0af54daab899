#pragma once
// Internal to cuda/: the device state of an FhdPlan, RAII wrappers for CUDA resources, the
// per-policy launcher templates and the device helpers every F^H D kernel shares.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "device_buffer.cuh"
#include "fhd_backend.hpp"

namespace mri::cuda::detail {

// ---------------------------------------------------------------------------------------
// RAII

class Stream {
public:
  Stream() { MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  cudaStream_t get() const { return s_; }

private:
  cudaStream_t s_ = nullptr;
};

class Event {
public:
  explicit Event(bool timing = false) {
    MRI_CUDA_CHECK(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  cudaEvent_t get() const { return e_; }

private:
  cudaEvent_t e_ = nullptr;
};

// ---------------------------------------------------------------------------------------
// Plan state

// The output grid as the kernels see it. Voxel (ix, iy, iz) has the coordinates (ix + x0, iy + y0,
// iz + z0): {-L/2 .. L/2-1} per axis for a whole grid (x0 = -nx/2, ...), or a window's share of
// its whole grid's coordinates (FhdPlanOptions::window: a voxel slab).
struct OutGrid {
  int nx = 1, ny = 1, nz = 1;
  int voxels = 1;
  int x0 = 0, y0 = 0, z0 = 0;
};

// The sample record of the chunked policies (Register, ConstantChunked, SfuTrig): AoS, so one
// sample's fields share a cache line / constant-cache line (the layout of the F^H D stages, Stone
// et al. 2008; docs/architecture.md). `k` is the per-voxel phase step of each axis:
// 2 pi k_a / period_a (radians) or k_a / period_a (turns), depending on the pass that packed it;
// `c` the coefficient (Stone et al.'s mu = phi^* D).
struct PackedSample {
  float kx, ky, kz;
  float re, im;
};
static_assert(sizeof(PackedSample) == 20);

// SeparableGemm's cuBLAS handle and operand buffers (fhd_separable_gemm.cu; opaque here so
// that only that file sees cuBLAS types).
struct GemmScratch;
struct GemmScratchDeleter {
  void operator()(GemmScratch *g) const noexcept;
};

// Scratch a policy needs beyond the plan's fixed buffers; allocated on first use, then reused.
struct Workspace {
  DeviceBuffer<float> soa;          // Gather: kx, ky, kz, rMu, iMu as five arrays of M
  DeviceBuffer<float> voxel_coords; // Gather: x, y, z as three arrays of `voxels`
  DeviceBuffer<PackedSample> packed;
  DeviceBuffer<float4> tuned;       // Tuned: 6 float4 per sample, or 80 per 8 (fhd_tuned.cu)
  DeviceBuffer<float2> partials;    // Tuned: per-split partial images
  bool voxel_coords_ready = false;
  std::unique_ptr<GemmScratch, GemmScratchDeleter> gemm; // SeparableGemm
  SeparableGemmConfig gemm_config;
  // The operand budget SeparableGemm uses when gemm_config.memory_budget_bytes is 0; 0: its own
  // default (a quarter of the free memory, at most 2 GiB). A chunked plan sets its share.
  std::size_t gemm_default_budget = 0;
};

// Which per-sample scratch buffer of the Workspace a call uses (a chunked plan frees the others
// before it runs: one policy's O(M) scratch at a time).
enum class SampleScratch { None, Soa, Packed, Tuned, Gemm };

struct PlanState {
  const KPoint *k = nullptr; // the trajectory on the device, AoS (mri::KPoint, 12 bytes)
  int m = 0;                 // samples
  OutGrid out;
  double inv_period[3] = {1, 1, 1}; // 1 / period_a
  cudaStream_t stream = nullptr;      // everything a call does is ordered on this stream...
  cudaStream_t copy_stream = nullptr; // ...except the constant-memory uploads that overlap it
  cudaEvent_t packed_ready = nullptr; // ConstantChunked/SfuTrig double buffering (see
  cudaEvent_t copy_done[2] = {};      // constant_chunks.cuh)
  cudaEvent_t kernel_done[2] = {};
  int multiprocessors = 1;
  Workspace *ws = nullptr;
};

// A chunked plan's streaming state (fhd_plan.cu). Chunk i of `chunk` samples goes through slot
// i % 2: its trajectory into k[slot] and its coefficients (adjoint, float or double) into
// io[slot] on the `upload` stream, then uploaded[slot] is recorded; the compute stream waits
// for it, computes (the forward writes its results into io[slot] and copies them back), and
// records consumed[slot], which the next upload into that slot waits for.
struct Streaming {
  std::vector<KPoint> host_k; // the whole trajectory, on the host
  std::size_t chunk = 0;
  Stream upload;
  Event uploaded[2], consumed[2];
  DeviceBuffer<KPoint> k[2];   // chunk each
  DeviceBuffer<double2> io[2]; // chunk each: coefficients in, forward results out
  DeviceBuffer<double2> acc;   // out.voxels(): the adjoint's double accumulator, or the
                               // forward's image in double (GemmDouble, forward_f64)
};

// What an FhdPlan owns (fhd_plan.cu builds it; fhd_dispatch.cu reads `state`).
struct FhdPlan::Impl {
  Grid out, period;
  std::size_t m = 0;
  std::size_t chunk = 0;  // samples on the device at a time (m when resident)
  std::size_t budget = 0; // bytes, what the layout was chosen against
  Stream stream;
  Stream copy_stream;
  Event packed_ready, copy_done0, copy_done1, kernel_done0, kernel_done1;
  Event start{true}, stop{true};
  DeviceBuffer<KPoint> k;       // resident: M
  DeviceBuffer<float2> samples; // resident: M
  DeviceBuffer<float2> image;   // out.voxels()
  Workspace ws;
  // Resident: the whole problem. Chunked: k = slot 0, m = chunk (the views each chunk runs
  // on replace k and m; see stream_chunks in fhd_plan.cu).
  PlanState state;
  std::unique_ptr<Streaming> streaming; // null when resident
};

// Throws Unsupported naming `entry_point` when the plan is chunked (fhd_plan.cu).
void require_resident(const FhdPlan::Impl &p, const char *entry_point);
// The host entry points of a chunked plan (fhd_plan.cu); `policy` already resolved.
void streamed_adjoint(FhdPlan::Impl &p, KernelPolicy policy, const float2 *c_host, float2 *result_host);
void streamed_adjoint_f64(FhdPlan::Impl &p, const double2 *c_host, double2 *result_host);
void streamed_forward(FhdPlan::Impl &p, ForwardPath path, const float2 *image_host, float2 *result_host);
void streamed_forward_f64(FhdPlan::Impl &p, const double2 *image_host, double2 *result_host);


// ---------------------------------------------------------------------------------------
// Per-policy launchers: one explicit specialisation of run_adjoint<P>(plan, c, out) per file
// (fhd_<policy>.cu), declared and listed in the one policy table of fhd_dispatch.cu. c and out
// are device arrays of M and out.voxels complex values; out is fully written.
template <KernelPolicy P> void run_adjoint(const PlanState &plan, const float2 *c, float2 *out);

// The runtime dispatch over policies / forward paths (fhd_dispatch.cu), on any PlanState
// (the plan's own, or a chunk's view of it).
void run_adjoint_policy(const PlanState &plan, KernelPolicy policy, const float2 *c, float2 *out);
// A streamed chunk summed by the policy straight into the double accumulator (= or += by
// `accumulate`); false when the policy has no such path (its float32 image is accumulated instead).
bool run_adjoint_into(const PlanState &plan, KernelPolicy policy, const float2 *c, double2 *acc, bool accumulate);
void run_forward_path(const PlanState &plan, ForwardPath path, const float2 *image, float2 *result);
// The per-sample scratch `policy` (resolved) uses.
SampleScratch sample_scratch(KernelPolicy policy);

// SeparableGemm for `coils` coefficient vectors (c: coils x M, coil-major) into coils images
// (out: coils x out.voxels), the coils as more GEMM columns (fhd_separable_gemm.cu).
void run_adjoint_coils_gemm(const PlanState &plan, const float2 *c, int coils, float2 *out);
int coils_per_gemm(std::int64_t voxels); // how many it puts into one GEMM
// The forward reference kernel (fhd_forward.cu).
void run_forward(const PlanState &plan, const float2 *image, float2 *result);
// The separable GEMM forward (fhd_separable_gemm.cu): CGEMM or ZGEMM, result rounded to float.
void run_forward_gemm(const PlanState &plan, const float2 *image, float2 *result, bool in_double);
// SeparableGemm pieces a chunked plan streams with (fhd_separable_gemm.cu):
// R (out.voxels, complex double) = (accumulate ? R : 0) + the sum over plan's samples;
void separable_adjoint_into(const PlanState &plan, const float2 *c, double2 *R, bool accumulate);
void separable_adjoint_into(const PlanState &plan, const double2 *c, double2 *R, bool accumulate);
// the ZGEMM forward of an image already in double, result in float or double;
void separable_forward_double(const PlanState &plan, const double2 *image, float2 *result);
void separable_forward_double(const PlanState &plan, const double2 *image, double2 *result);
// frees the operand and staging buffers (keeps the cuBLAS handle, the split and the R image).
void release_separable_operands(Workspace &ws);

// Shared passes (fhd_plan.cu). Phase unit of a packed record:
enum class PhaseUnit { Radians, Turns };

// The per-voxel phase step of each axis, k_a / period_a (turns) or 2 pi k_a / period_a
// (radians): the kernels that start from the trajectory take this and form it per sample in
// double with scaled_k(), rounding once to float.
struct KScale {
  double x = 1, y = 1, z = 1;
};
inline KScale k_scale(const PlanState &plan, PhaseUnit unit) {
  const double u = unit == PhaseUnit::Radians ? 2.0 * 3.14159265358979323846 : 1.0;
  return {u * plan.inv_period[0], u * plan.inv_period[1], u * plan.inv_period[2]};
}
// The loop-fission pass of the chunked policies: ws.packed[m] = {k_m scaled, c_m}.
void pack_samples(const PlanState &plan, const float2 *c, PhaseUnit unit);

// ---------------------------------------------------------------------------------------
// Device helpers

constexpr float kTwoPi = 6.28318530717958647692f;

inline int blocks_for(long long work, int threads) { return static_cast<int>((work + threads - 1) / threads); }

__device__ __forceinline__ float3 scaled_k(const KPoint &p, const KScale &s) {
  return make_float3(static_cast<float>(p.kx * s.x), static_cast<float>(p.ky * s.y), static_cast<float>(p.kz * s.z));
}

// Centred coordinates of voxel n of `g`.
__device__ __forceinline__ void voxel_coordinates(const OutGrid &g, int n, float &x, float &y, float &z) {
  const int ix = n % g.nx;
  const int rest = n / g.nx;
  const int iy = rest % g.ny;
  const int iz = rest / g.ny;
  x = static_cast<float>(ix + g.x0);
  y = static_cast<float>(iy + g.y0);
  z = static_cast<float>(iz + g.z0);
}

// t minus the integer nearest to t, in [-0.5, 0.5], for |t| < 2^22 -- without rintf: FRND
// issues on the same unit as MUFU.SIN/COS, so a kernel bound by sincos would pay for it twice.
// Adding and subtracting 1.5 * 2^23 rounds to an integer on the FMA pipe (the _rn intrinsics
// keep the compiler from contracting or reassociating the two adds); t - r is then exact.
__device__ __forceinline__ float reduce_turns(float t) {
  constexpr float kMagic = 12582912.0f; // 1.5 * 2^23
  const float r = __fadd_rn(__fadd_rn(t, kMagic), -kMagic);
  return __fadd_rn(t, -r);
}

} // namespace mri::cuda::detail

#define MRI_CUDA_CHECK_LAUNCH(kernel_name)                                                         \
  ::mri::cuda::detail::check(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
