// The GPU normal operators: Toeplitz (Q on the 2x grid, spectrum on the device, cuFFT) and
// direct (FhdPlan forward + adjoint). See toeplitz_cuda.hpp.
//
// Toeplitz application, padded grid of L voxels, image of N (L = 8N in 3D):
//   Unfused:   pad N values into Z (Z's zeros are written once, never again) -> FFT Z->W (out of
//              place) -> W *= K -> IFFT W in place -> out = crop(W) (+ lambda W^H W in)
//   Pruned:    pad into Z (the n_last nonzero slabs only) -> slab FFT Z->A on those slabs (A's
//              other slabs stay zero) -> last-axis FFT A->W -> W *= K -> last-axis IFFT W ->
//              slab IFFT of the n_last slabs the crop reads -> crop
//   Callbacks: FFT W->W whose load callback reads the image (zeros without a read) and whose
//              store callback multiplies by K -> IFFT W->W whose store callback writes only the
//              cropped voxels (+ regulariser) into out: the pad, multiply and crop passes vanish.
// Plans are made once per padded grid and kept (release_toeplitz_plans()), so the cuFFT JIT of
// the callback kernels is paid once per process.
#include <cuda_runtime.h>
#include <cufft.h>
#include <cufftXt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "cufft_check.cuh"
#include "device.cuh"
#include "dirichlet_spectrum.cuh"
#include "fhd_backend.hpp"
#include "fhd_plan.cuh"
#include "gridding_cuda.hpp"
#include "mri/detail/regularizer_stencil.hpp"
#include "mri/error.hpp"
#include "mri/kspace.hpp"
#include "toeplitz_callback_params.h"
#include "random_fill.cuh"
#include "toeplitz_cuda.hpp"
#ifdef MRI_TOEPLITZ_LTO
#include <nvJitLink.h>

#include "toeplitz_callbacks_fatbin.h" // mri_toeplitz_callbacks_fatbin[] (generated, cuda/CMakeLists.txt)
#endif

namespace mri::cuda {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int kThreads = 256;
using detail::DeviceBuffer;
using detail::ToeplitzCallbackParams;

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }


int blocks_for(long long n) { return static_cast<int>(std::max<long long>(1, (n + kThreads - 1) / kThreads)); }

// Image and padded extents as the kernels see them.
struct Dims {
  int nx, ny, nz;
  int lx, ly, lz;
};
Dims dims_of(const Grid &g, const Grid &p) {
  return {static_cast<int>(g.nx()), static_cast<int>(g.ny()), static_cast<int>(g.nz()),
          static_cast<int>(p.nx()), static_cast<int>(p.ny()), static_cast<int>(p.nz())};
}

int log2_if_power_of_two(std::int64_t v) {
  if (v <= 0 || (v & (v - 1)) != 0) return -1;
  int s = 0;
  while ((std::int64_t{1} << s) < v) ++s;
  return s;
}

void check_regularizer(double lambda) {
  if (!(lambda >= 0) || !std::isfinite(lambda))
    mri::detail::invalid_argument("lambda", lambda, "must be finite and >= 0");
}

// ---------------------------------------------------------------------------------------------
// Kernels

// c_m = w_m exp(-i 2 pi k_hm s / n_h): moves the origin of the (n_h + 1)-plane grid of Q's
// direct sum so that its planes are the offsets d_h = -n_h .. 0 (turns = s / n_h).
__global__ void modulate_kernel(const float *__restrict__ kh, const float *__restrict__ w, int m, double turns,
                                float2 *__restrict__ c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float wi = w ? w[i] : 1.0f;
  double s = 0.0, co = 1.0;
  if (kh) sincospi(-2.0 * static_cast<double>(kh[i]) * turns, &s, &co);
  c[i] = make_float2(static_cast<float>(wi * co), static_cast<float>(wi * s));
}

// The full Q on the padded grid in FFT order (offset d at index d mod L) from the half grid:
// d_h <= 0 read directly, d_h > 0 as conj(Q(-d)); offsets with some d_a = -n_a zeroed. With
// h = -1 the "half" grid is the whole padded grid in image order (offset d at index d + n).
__global__ void expand_kernel(const float2 *__restrict__ qh, Dims d, int h, int hx, int hy, long long total,
                              float2 *__restrict__ out) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= total) return;
  const int pos[3] = {static_cast<int>(p % d.lx), static_cast<int>((p / d.lx) % d.ly),
                      static_cast<int>(p / (static_cast<long long>(d.lx) * d.ly))};
  const int n[3] = {d.nx, d.ny, d.nz}, l[3] = {d.lx, d.ly, d.lz};
  int off[3];
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    if (l[a] == 1) {
      off[a] = 0;
      continue;
    }
    off[a] = pos[a] < n[a] ? pos[a] : pos[a] - l[a];
    if (off[a] == -n[a]) {
      out[p] = make_float2(0.f, 0.f);
      return;
    }
  }
  const bool flip = h >= 0 && off[h] > 0;
  int idx[3];
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    const int o = flip ? -off[a] : off[a];
    idx[a] = l[a] == 1 ? 0 : o + n[a]; // the half grid: L_a planes (a != h) or n_h + 1 (a == h)
  }
  const float2 v = qh[idx[0] + static_cast<long long>(hx) * (idx[1] + static_cast<long long>(hy) * idx[2])];
  out[p] = flip ? make_float2(v.x, -v.y) : v;
}

__global__ void real_part_kernel(const float2 *__restrict__ w, float scale, long long total, float *__restrict__ k) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p < total) k[p] = w[p].x * scale;
}

__device__ __forceinline__ void image_coordinates(int v, const Dims &d, int &ix, int &iy, int &iz) {
  ix = v % d.nx;
  const int rest = v / d.nx;
  iy = rest % d.ny;
  iz = rest / d.ny;
}
__device__ __forceinline__ long long padded_index(int ix, int iy, int iz, const Dims &d) {
  return ix + static_cast<long long>(d.lx) * (iy + static_cast<long long>(d.ly) * iz);
}

// Unfused pad: the image into the corner of Z (the rest of Z stays zero).
__global__ void pad_kernel(const float2 *__restrict__ in, Dims d, int n, float2 *__restrict__ z) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  int ix, iy, iz;
  image_coordinates(v, d, ix, iy, iz);
  z[padded_index(ix, iy, iz, d)] = in[v];
}

__global__ void multiply_kernel(float2 *__restrict__ w, const float *__restrict__ k, long long total) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += stride) {
    const float kp = k[p];
    const float2 v = w[p];
    w[p] = make_float2(v.x * kp, v.y * kp);
  }
}

// Unfused crop: out[v] = W[p(v)] + lambda (W^H W in)[v].
__global__ void crop_kernel(const float2 *__restrict__ w, const float2 *__restrict__ in, Dims d, int n, int reg,
                            float lambda, float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  int ix, iy, iz;
  image_coordinates(v, d, ix, iy, iz);
  const float2 c = w[padded_index(ix, iy, iz, d)];
  float rr = 0.f, ri = 0.f;
  if (reg != mri::detail::kRegNone)
    mri::detail::regularizer_normal_voxel<int>(reg, lambda, reinterpret_cast<const float *>(in), v, ix, iy, iz, d.nx,
                                               d.ny, d.nz, rr, ri);
  out[v] = make_float2(c.x + rr, c.y + ri);
}

// out[v] += lambda (W^H W in)[v] (the direct operator's regulariser).
__global__ void add_regularizer_kernel(const float2 *__restrict__ in, Dims d, int n, int reg, float lambda,
                                       float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  int ix, iy, iz;
  image_coordinates(v, d, ix, iy, iz);
  float rr, ri;
  mri::detail::regularizer_normal_voxel<int>(reg, lambda, reinterpret_cast<const float *>(in), v, ix, iy, iz, d.nx,
                                             d.ny, d.nz, rr, ri);
  const float2 o = out[v];
  out[v] = make_float2(o.x + rr, o.y + ri);
}

__global__ void weight_kernel(float2 *__restrict__ y, const float *__restrict__ w, int m) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float2 v = y[i];
  y[i] = make_float2(v.x * w[i], v.y * w[i]);
}

// ---------------------------------------------------------------------------------------------
// cuFFT plans, kept per padded grid

struct PlanSet {
  Grid padded;
  ToeplitzFft fft = ToeplitzFft::Unfused; // what runs
  std::string note;
  cufftHandle fwd = 0, inv = 0;       // plain C2C plans (fwd also transforms Q)
  cufftHandle cb_fwd = 0, cb_inv = 0; // callback plans (fft == Callbacks)
  cufftHandle slab = 0, last = 0;     // Pruned: the slabs' transform (batched) and the last axis's
  cufftHandle last_cb = 0;            // PrunedCallback: the last axis with the multiply on store
  bool has_fwd = false, has_inv = false, has_cb_fwd = false, has_cb_inv = false, has_slab = false,
       has_last = false, has_last_cb = false;
  std::int64_t slabs = 0, slab_size = 0; // Pruned: nonzero slabs (n_last) and voxels per slab
  void *work = nullptr;
  ToeplitzCallbackParams *params_dev = nullptr;
  ToeplitzCallbackParams params_host{};
  bool params_valid = false;
  void *caller_info[1] = {nullptr};
  cudaStream_t stream = nullptr;

  PlanSet() = default;
  PlanSet(const PlanSet &) = delete;
  PlanSet &operator=(const PlanSet &) = delete;
  ~PlanSet() {
    if (has_fwd) cufftDestroy(fwd);
    if (has_inv) cufftDestroy(inv);
    if (has_cb_fwd) cufftDestroy(cb_fwd);
    if (has_cb_inv) cufftDestroy(cb_inv);
    if (has_slab) cufftDestroy(slab);
    if (has_last) cufftDestroy(last);
    if (has_last_cb) cufftDestroy(last_cb);
    if (work) cudaFree(work);
    if (params_dev) cudaFree(params_dev);
  }

  void set_stream(cudaStream_t s) {
    if (s == stream) return;
    if (has_fwd) MRI_CUFFT_CHECK(cufftSetStream(fwd, s));
    if (has_inv) MRI_CUFFT_CHECK(cufftSetStream(inv, s));
    if (has_cb_fwd) MRI_CUFFT_CHECK(cufftSetStream(cb_fwd, s));
    if (has_cb_inv) MRI_CUFFT_CHECK(cufftSetStream(cb_inv, s));
    if (has_slab) MRI_CUFFT_CHECK(cufftSetStream(slab, s));
    if (has_last) MRI_CUFFT_CHECK(cufftSetStream(last, s));
    if (has_last_cb) MRI_CUFFT_CHECK(cufftSetStream(last_cb, s));
    stream = s;
  }
};

// cuFFT's dimensions, slowest first (our x is fastest).
struct FftShape {
  int rank = 0;
  int n[3] = {1, 1, 1};
};
FftShape fft_shape(const Grid &padded) {
  FftShape s;
  if (padded.dims() == 3) {
    s.rank = 3;
    s.n[0] = static_cast<int>(padded.nz());
    s.n[1] = static_cast<int>(padded.ny());
    s.n[2] = static_cast<int>(padded.nx());
  } else {
    s.rank = 2;
    s.n[0] = static_cast<int>(padded.ny());
    s.n[1] = static_cast<int>(padded.nx());
  }
  return s;
}

// A cuFFT handle without its own work area: every plan of a set shares set.work (make_plan_set).
void create_plan(cufftHandle &h, bool &has) {
  MRI_CUFFT_CHECK(cufftCreate(&h));
  has = true;
  MRI_CUFFT_CHECK(cufftSetAutoAllocation(h, 0));
}

// Plans handle `h` (created) as one C2C transform of the whole padded grid; returns the work
// size it needs.
std::size_t plan_whole_grid(cufftHandle h, const FftShape &s) {
  std::size_t work = 0;
  int n[3] = {s.n[0], s.n[1], s.n[2]};
  MRI_CUFFT_CHECK(cufftMakePlanMany(h, s.rank, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &work));
  return work;
}

// Creates a C2C plan without its own work area; returns the work size it needs.
std::size_t make_plain_plan(cufftHandle &h, bool &has, const FftShape &s) {
  create_plan(h, has);
  return plan_whole_grid(h, s);
}

// Plans handle `h` (created) as Pruned's last-axis transform: rank 1, stride = slab size,
// batch = slab size. Returns the work size it needs.
std::size_t plan_last_axis(cufftHandle h, const PlanSet &set) {
  const Grid &p = set.padded;
  int last_n[1] = {static_cast<int>(p.extent(p.dims() - 1))};
  int embed[1] = {last_n[0]};
  const int stride = static_cast<int>(set.slab_size);
  std::size_t w = 0;
  MRI_CUFFT_CHECK(cufftMakePlanMany(h, 1, last_n, embed, stride, 1, embed, stride, 1, CUFFT_C2C, stride, &w));
  return w;
}

// Pruned's two plans: the slabs (rank dims-1, contiguous, batch n_last) and the last axis.
std::size_t make_pruned_plans(PlanSet &set) {
  const Grid &p = set.padded;
  const int last_axis = p.dims() - 1;
  set.slab_size = p.voxels() / p.extent(last_axis);
  set.slabs = p.extent(last_axis) / 2;
  std::size_t work = 0, w = 0;
  create_plan(set.slab, set.has_slab);
  int slab_n[2] = {static_cast<int>(p.ny()), static_cast<int>(p.nx())};
  if (p.dims() == 3)
    MRI_CUFFT_CHECK(cufftMakePlanMany(set.slab, 2, slab_n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C,
                                      static_cast<int>(set.slabs), &w));
  else
    MRI_CUFFT_CHECK(cufftMakePlanMany(set.slab, 1, slab_n + 1, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C,
                                      static_cast<int>(set.slabs), &w));
  work = std::max(work, w);
  create_plan(set.last, set.has_last);
  return std::max(work, plan_last_axis(set.last, set));
}

#ifdef MRI_TOEPLITZ_LTO
// The device copy of the callbacks' parameters, passed to them as caller_info.
void allocate_callback_params(PlanSet &set) {
  void *p = nullptr;
  MRI_CUDA_CHECK(cudaMalloc(&p, sizeof(ToeplitzCallbackParams)));
  set.params_dev = static_cast<ToeplitzCallbackParams *>(p);
  set.caller_info[0] = set.params_dev;
}

// Attaches the callback `name` (from the embedded LTO fatbin) to plan h, before it is planned.
void set_callback(cufftHandle h, const char *name, cufftXtCallbackType type, PlanSet &set) {
  MRI_CUFFT_CHECK(cufftXtSetJITCallback(h, name, mri_toeplitz_callbacks_fatbin, sizeof(mri_toeplitz_callbacks_fatbin),
                                        type, set.caller_info));
}

std::size_t make_callback_plan(cufftHandle &h, bool &has, const FftShape &s, PlanSet &set, const char *load,
                               const char *store) {
  create_plan(h, has);
  if (load) set_callback(h, load, CUFFT_CB_LD_COMPLEX, set);
  if (store) set_callback(h, store, CUFFT_CB_ST_COMPLEX, set);
  return plan_whole_grid(h, s);
}
#endif

#ifdef MRI_TOEPLITZ_LTO
// The last-axis plan of Pruned with the spectrum multiply as its store callback.
std::size_t make_last_callback_plan(PlanSet &set) {
  create_plan(set.last_cb, set.has_last_cb);
  set_callback(set.last_cb, "mri_toeplitz_store_multiply", CUFFT_CB_ST_COMPLEX, set);
  return plan_last_axis(set.last_cb, set);
}
#endif

std::shared_ptr<PlanSet> make_plan_set(const Grid &padded, ToeplitzFft fft) {
  auto set = std::make_shared<PlanSet>();
  set->padded = padded;
  const FftShape shape = fft_shape(padded);
  std::size_t work = make_plain_plan(set->fwd, set->has_fwd, shape);
  set->fft = ToeplitzFft::Unfused;
  set->note = "unfused";
  if (fft == ToeplitzFft::Callbacks) {
#ifdef MRI_TOEPLITZ_LTO
    try {
      allocate_callback_params(*set);
      work = std::max(work, make_callback_plan(set->cb_fwd, set->has_cb_fwd, shape, *set, "mri_toeplitz_load_pad",
                                               "mri_toeplitz_store_multiply"));
      work = std::max(work, make_callback_plan(set->cb_inv, set->has_cb_inv, shape, *set, nullptr,
                                               "mri_toeplitz_store_crop"));
      set->fft = ToeplitzFft::Callbacks;
      // nvJitLinkVersion: also what keeps libnvJitLink a direct dependency of libmri, so that
      // cuFFT's dlopen finds it loaded.
      unsigned major = 0, minor = 0;
      nvJitLinkVersion(&major, &minor);
      set->note = "cufft-callbacks (nvJitLink " + std::to_string(major) + "." + std::to_string(minor) + ")";
    } catch (const CudaError &e) {
      if (set->has_cb_fwd) cufftDestroy(set->cb_fwd);
      if (set->has_cb_inv) cufftDestroy(set->cb_inv);
      set->has_cb_fwd = set->has_cb_inv = false;
      set->note = std::string("unfused (cuFFT callbacks unavailable: ") + e.what() + ")";
    }
#else
    set->note = "unfused (this build has no cuFFT LTO callbacks)";
#endif
  }
  if (fft == ToeplitzFft::Pruned || fft == ToeplitzFft::PrunedCallback) {
    if (padded.extent(padded.dims() - 1) % 2 == 0 && padded.extent(padded.dims() - 1) >= 2) {
      work = std::max(work, make_pruned_plans(*set));
      set->fft = ToeplitzFft::Pruned;
      set->note = "pruned";
    } else {
      set->note = "unfused (pruned needs a doubled last axis)";
    }
  }
  if (fft == ToeplitzFft::PrunedCallback && set->fft == ToeplitzFft::Pruned) {
#ifdef MRI_TOEPLITZ_LTO
    try {
      allocate_callback_params(*set);
      work = std::max(work, make_last_callback_plan(*set));
      set->fft = ToeplitzFft::PrunedCallback;
      set->note = "pruned + multiply callback";
    } catch (const CudaError &e) {
      if (set->has_last_cb) cufftDestroy(set->last_cb);
      set->has_last_cb = false;
      set->note = std::string("pruned (cuFFT callbacks unavailable: ") + e.what() + ")";
    }
#else
    set->note = "pruned (this build has no cuFFT LTO callbacks)";
#endif
  }
  if (set->fft == ToeplitzFft::Unfused) work = std::max(work, make_plain_plan(set->inv, set->has_inv, shape));
  if (work > 0) MRI_CUDA_CHECK(cudaMalloc(&set->work, work));
  if (set->has_fwd) MRI_CUFFT_CHECK(cufftSetWorkArea(set->fwd, set->work));
  if (set->has_inv) MRI_CUFFT_CHECK(cufftSetWorkArea(set->inv, set->work));
  if (set->has_cb_fwd) MRI_CUFFT_CHECK(cufftSetWorkArea(set->cb_fwd, set->work));
  if (set->has_cb_inv) MRI_CUFFT_CHECK(cufftSetWorkArea(set->cb_inv, set->work));
  if (set->has_slab) MRI_CUFFT_CHECK(cufftSetWorkArea(set->slab, set->work));
  if (set->has_last) MRI_CUFFT_CHECK(cufftSetWorkArea(set->last, set->work));
  if (set->has_last_cb) MRI_CUFFT_CHECK(cufftSetWorkArea(set->last_cb, set->work));
  return set;
}

// The kept plan sets, (requested path, plans). Deliberately never destroyed: at process exit the
// CUDA runtime and cuFFT may already be torn down when static destructors run.
std::mutex g_plans_mutex;
auto &g_plans = *new std::vector<std::pair<ToeplitzFft, std::shared_ptr<PlanSet>>>();
constexpr std::size_t kMaxCachedPlans = 8;

// A plan set for `padded`, from the cache or new. Operators share a set only on one stream: their
// applications are then ordered, and each re-uploads the callback parameters it needs.
std::shared_ptr<PlanSet> acquire_plans(const Grid &padded, ToeplitzFft requested, cudaStream_t stream) {
  std::shared_ptr<PlanSet> set;
  {
    std::lock_guard lock(g_plans_mutex);
    for (auto &[req, s] : g_plans)
      if (req == requested && s->padded == padded && (s.use_count() == 1 || s->stream == stream)) {
        set = s;
        break;
      }
  }
  if (!set) {
    set = make_plan_set(padded, requested);
    std::lock_guard lock(g_plans_mutex);
    if (g_plans.size() >= kMaxCachedPlans) {
      const auto unused = std::find_if(g_plans.begin(), g_plans.end(), [](auto &e) { return e.second.use_count() == 1; });
      if (unused != g_plans.end()) g_plans.erase(unused);
    }
    if (g_plans.size() < kMaxCachedPlans) g_plans.emplace_back(requested, set);
  }
  set->set_stream(stream);
  return set;
}

ToeplitzFft resolve_fft(ToeplitzFft requested, const Grid &padded) {
  if (requested != ToeplitzFft::Auto) return requested;
  // Measured (RECON-3D, H200): the callbacks made cuFFT's 256^3 kernels slower than the unfused
  // passes they replace (0.91 vs 0.59 ms per apply), so they are not the default.
  return padded.dims() == 3 && padded.voxels() >= (std::int64_t{1} << 21) ? ToeplitzFft::Pruned
                                                                         : ToeplitzFft::Unfused;
}

// The last axis of extent > 1 (-1 for a single voxel).
int last_axis(const Grid &grid) {
  for (int a = 2; a >= 0; --a)
    if (grid.extent(a) > 1) return a;
  return -1;
}

// Where Q's spectrum comes from, decided here only: the tensor-core Dirichlet sum for 3D grids
// under KernelPolicy::Auto (RECON-3D on the H200: 0.326 s against 0.942 s for Q by the Tuned F^H D
// kernel plus its FFT, docs/performance.md); a named policy sums Q with that F^H D kernel (the stage
// benchmarks and tests), as do 1D/2D grids.
bool spectrum_by_dirichlet(const Grid &grid, KernelPolicy policy) {
  return policy == KernelPolicy::Auto && detail::dirichlet_spectrum_applies(grid);
}

// Where the exact Q is summed: the doubled grid with n_h + 1 planes along the last axis h
// (offsets -n_h .. 0); the other half follows from Q(-d) = conj(Q(d)).
Grid q_half_grid(const Grid &grid) {
  const Grid padded = grid.doubled();
  std::int64_t e[3] = {padded.nx(), padded.ny(), padded.nz()};
  const int h = last_axis(grid);
  if (h >= 0) e[h] = grid.extent(h) + 1;
  return Grid(e[0], e[1], e[2]);
}

bool same_params(const ToeplitzCallbackParams &a, const ToeplitzCallbackParams &b) {
  return a.in == b.in && a.out == b.out && a.kernel == b.kernel && a.nx == b.nx && a.ny == b.ny && a.nz == b.nz &&
         a.lx == b.lx && a.ly == b.ly && a.lx_shift == b.lx_shift && a.ly_shift == b.ly_shift &&
         a.regularizer == b.regularizer && a.lambda == b.lambda;
}

void join(cudaStream_t from, cudaStream_t to, cudaEvent_t event) {
  if (from == to) return;
  MRI_CUDA_CHECK(cudaEventRecord(event, from));
  MRI_CUDA_CHECK(cudaStreamWaitEvent(to, event, 0));
}

cudaEvent_t make_event() {
  cudaEvent_t e = nullptr;
  MRI_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void check_image(const DeviceImage &v, const Grid &grid, const char *what) {
  if (v.grid() != grid || v.data() == nullptr)
    mri::detail::invalid_argument(std::string(what) + ".grid().voxels()", v.grid().voxels(),
                                  "must be the operator's grid (" + std::to_string(grid.voxels()) + " voxels)");
}

std::vector<float> checked_weights(std::span<const float> weights, std::size_t m) {
  mri::detail::check_weights(weights, m);
  return {weights.begin(), weights.end()};
}

} // namespace

const char *to_string(ToeplitzFft f) {
  switch (f) {
  case ToeplitzFft::Auto: return "auto";
  case ToeplitzFft::Unfused: return "unfused";
  case ToeplitzFft::Pruned: return "pruned";
  case ToeplitzFft::PrunedCallback: return "pruned-callback";
  case ToeplitzFft::Callbacks: return "cufft-callbacks";
  }
  return "?";
}

bool toeplitz_callbacks_built() {
#ifdef MRI_TOEPLITZ_LTO
  return true;
#else
  return false;
#endif
}

void release_toeplitz_plans() {
  std::lock_guard lock(g_plans_mutex);
  g_plans.clear();
}

// ---------------------------------------------------------------------------------------------
// ToeplitzOperator

struct ToeplitzOperator::Impl {
  Grid grid, padded;
  Dims dims{};
  cudaStream_t stream = nullptr;
  std::shared_ptr<PlanSet> plans;
  DeviceBuffer<float> kernel; // L: Re(FFT(Q)) / L, FFT order
  DeviceBuffer<float2> w;     // L: the FFT array
  DeviceBuffer<float2> z;     // Unfused: L, Pruned: the n_last slabs; the zero-padded input
  DeviceBuffer<float2> a;     // Pruned: L, the slab-transformed input (slabs >= n_last stay zero)
  int regularizer = mri::detail::kRegNone;
  float lambda = 0;
  ToeplitzSetup setup;
  std::string q_path = "spectrum upload";
  cudaEvent_t event = nullptr;

  Impl(const Grid &g, StreamHandle s)
      : grid(g), padded(g.doubled()), dims(dims_of(g, padded)),
        stream(as_stream(s ? s : default_stream())) {
    if (padded.voxels() > std::numeric_limits<int>::max())
      throw Unsupported("cuda Toeplitz operator: the padded grid of " + std::to_string(padded.voxels()) +
                        " voxels exceeds the 32-bit index range of cuFFT's callbacks and the kernels");
    event = make_event();
  }
  ~Impl() { // the buffers' cudaFree waits for work in flight; no use of the stream here (it may
             // be a thread's stream already destroyed at thread or process exit)
    if (event) cudaEventDestroy(event);
  }

  // Plans + buffers; `kernel` must be filled by the caller.
  void prepare(ToeplitzFft requested) {
    plans = acquire_plans(padded, resolve_fft(requested, padded), stream);
    const auto l = static_cast<std::size_t>(padded.voxels());
    kernel.grow(l); // may already hold the spectrum (the Dirichlet path writes it first)
    w = DeviceBuffer<float2>(l);
    if (plans->fft == ToeplitzFft::Unfused) {
      z = DeviceBuffer<float2>(l);
      MRI_CUDA_CHECK(cudaMemsetAsync(z.get(), 0, l * sizeof(float2), stream));
    } else if (plans->fft == ToeplitzFft::Pruned || plans->fft == ToeplitzFft::PrunedCallback) {
      const auto zl = static_cast<std::size_t>(plans->slabs * plans->slab_size);
      z = DeviceBuffer<float2>(zl);
      MRI_CUDA_CHECK(cudaMemsetAsync(z.get(), 0, zl * sizeof(float2), stream));
      a = DeviceBuffer<float2>(l);
      MRI_CUDA_CHECK(cudaMemsetAsync(a.get(), 0, l * sizeof(float2), stream));
    }
  }

  // K = Re(FFT(Q)) / L from Q on `half` (Q's offsets d_h <= 0 along axis h, or the whole padded
  // grid in image order for h = -1): expanded into the FFT array in FFT order, transformed.
  // Synchronises the stream (the caller frees Q next).
  void make_spectrum(const float2 *q, int h, const Grid &half) {
    const auto l = static_cast<long long>(padded.voxels());
    expand_kernel<<<blocks_for(l), kThreads, 0, stream>>>(q, dims, h, static_cast<int>(half.nx()),
                                                          static_cast<int>(half.ny()), l, w.get());
    MRI_CUDA_CHECK(cudaGetLastError());
    auto *buf = reinterpret_cast<cufftComplex *>(w.get());
    MRI_CUFFT_CHECK(cufftExecC2C(plans->fwd, buf, buf, CUFFT_FORWARD));
    real_part_kernel<<<blocks_for(l), kThreads, 0, stream>>>(w.get(), 1.0f / static_cast<float>(l), l, kernel.get());
    MRI_CUDA_CHECK(cudaGetLastError());
    MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // The callbacks' operands, uploaded (stream-ordered) only when they change.
  void update_params(const float2 *src, float2 *dst) {
    ToeplitzCallbackParams p{};
    p.in = src;
    p.out = dst;
    p.kernel = kernel.get();
    p.nx = dims.nx;
    p.ny = dims.ny;
    p.nz = dims.nz;
    p.lx = dims.lx;
    p.ly = dims.ly;
    p.lx_shift = log2_if_power_of_two(dims.lx);
    p.ly_shift = log2_if_power_of_two(dims.ly);
    p.regularizer = regularizer;
    p.lambda = lambda;
    if (!plans->params_valid || !same_params(p, plans->params_host)) {
      plans->params_host = p; // pageable source: copied to staging before cudaMemcpyAsync returns
      MRI_CUDA_CHECK(cudaMemcpyAsync(plans->params_dev, &plans->params_host, sizeof p, cudaMemcpyHostToDevice, stream));
      plans->params_valid = true;
    }
  }

  void apply(const DeviceImage &in, DeviceImage &out) {
    check_image(in, grid, "in");
    check_image(out, grid, "out");
    if (in.data() == out.data()) mri::detail::invalid_argument("out", "in", "must not alias the input");
    join(as_stream(in.stream()), stream, event);
    plans->set_stream(stream);
    const auto l = static_cast<long long>(padded.voxels());
    const int n = static_cast<int>(grid.voxels());
    const auto *src = reinterpret_cast<const float2 *>(in.data());
    auto *dst = reinterpret_cast<float2 *>(out.data());
    if (plans->fft == ToeplitzFft::Callbacks) {
      update_params(src, dst);
      auto *buf = reinterpret_cast<cufftComplex *>(w.get());
      MRI_CUFFT_CHECK(cufftExecC2C(plans->cb_fwd, buf, buf, CUFFT_FORWARD));
      MRI_CUFFT_CHECK(cufftExecC2C(plans->cb_inv, buf, buf, CUFFT_INVERSE));
    } else if (plans->fft == ToeplitzFft::Pruned || plans->fft == ToeplitzFft::PrunedCallback) {
      auto *zc = reinterpret_cast<cufftComplex *>(z.get());
      auto *ac = reinterpret_cast<cufftComplex *>(a.get());
      auto *wc = reinterpret_cast<cufftComplex *>(w.get());
      pad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dims, n, z.get());
      MRI_CUDA_CHECK(cudaGetLastError());
      MRI_CUFFT_CHECK(cufftExecC2C(plans->slab, zc, ac, CUFFT_FORWARD));
      if (plans->fft == ToeplitzFft::PrunedCallback) {
        update_params(src, dst);
        MRI_CUFFT_CHECK(cufftExecC2C(plans->last_cb, ac, wc, CUFFT_FORWARD)); // multiplied on store
      } else {
        MRI_CUFFT_CHECK(cufftExecC2C(plans->last, ac, wc, CUFFT_FORWARD));
        multiply_kernel<<<static_cast<int>(std::min<long long>(blocks_for(l), 132LL * 16)), kThreads, 0, stream>>>(
            w.get(), kernel.get(), l);
        MRI_CUDA_CHECK(cudaGetLastError());
      }
      MRI_CUFFT_CHECK(cufftExecC2C(plans->last, wc, wc, CUFFT_INVERSE));
      MRI_CUFFT_CHECK(cufftExecC2C(plans->slab, wc, wc, CUFFT_INVERSE));
      crop_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w.get(), src, dims, n, regularizer, lambda, dst);
      MRI_CUDA_CHECK(cudaGetLastError());
    } else {
      pad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dims, n, z.get());
      MRI_CUDA_CHECK(cudaGetLastError());
      MRI_CUFFT_CHECK(cufftExecC2C(plans->fwd, reinterpret_cast<cufftComplex *>(z.get()),
                                   reinterpret_cast<cufftComplex *>(w.get()), CUFFT_FORWARD));
      multiply_kernel<<<static_cast<int>(std::min<long long>(blocks_for(l), 132LL * 16)), kThreads, 0, stream>>>(
          w.get(), kernel.get(), l);
      MRI_CUDA_CHECK(cudaGetLastError());
      MRI_CUFFT_CHECK(cufftExecC2C(plans->inv, reinterpret_cast<cufftComplex *>(w.get()),
                                   reinterpret_cast<cufftComplex *>(w.get()), CUFFT_INVERSE));
      crop_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w.get(), src, dims, n, regularizer, lambda, dst);
      MRI_CUDA_CHECK(cudaGetLastError());
    }
    join(stream, as_stream(out.stream()), event);
  }
};

ToeplitzOperator::ToeplitzOperator(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
                                   KernelPolicy policy, ToeplitzFft fft, StreamHandle stream) {
  if (trajectory.empty()) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  trajectory.check_within(grid);
  const std::vector<float> w = checked_weights(weights, trajectory.size());
  impl_ = std::make_unique<Impl>(grid, stream);
  Impl &im = *impl_;

  if (spectrum_by_dirichlet(grid, policy)) {
    // The spectrum directly (no Q, no FFT of Q): the tensor-core sum of dirichlet_spectrum.cu.
    auto t = Clock::now();
    const detail::DevicePoints k(trajectory);
    DeviceBuffer<float> w_dev(w.size());
    if (!w.empty())
      MRI_CUDA_CHECK(cudaMemcpyAsync(w_dev.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice, im.stream));
    const double w_max = w.empty() ? 1.0 : *std::max_element(w.begin(), w.end());
    const auto l = static_cast<std::size_t>(im.padded.voxels());
    im.kernel.grow(l);
    if (w_max > 0.0)
      detail::dirichlet_spectrum(k.data(), w.empty() ? nullptr : w_dev.get(), trajectory.size(), w_max, grid,
                                 im.kernel.get(), im.stream);
    else
      MRI_CUDA_CHECK(cudaMemsetAsync(im.kernel.get(), 0, l * sizeof(float), im.stream));
    MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream)); // k and w_dev are freed next
    im.setup.q_seconds = seconds_since(t);
    t = Clock::now();
    im.prepare(fft);
    MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream));
    im.setup.fft_setup_seconds = seconds_since(t);
    im.q_path = "dirichlet-tensor-cores";
    return;
  }
  im.q_path = std::string("q-sum/") + mri::to_string(policy) + " + fft";

  auto t = Clock::now();
  const int h = last_axis(grid);
  const Grid half = q_half_grid(grid);
  detail::FhdPlan plan(trajectory, half, grid);
  const auto m = static_cast<int>(trajectory.size());
  cudaStream_t ps = static_cast<cudaStream_t>(plan.stream());
  {
    std::vector<float> kh;
    if (h >= 0) {
      kh.resize(trajectory.size());
      for (std::size_t i = 0; i < kh.size(); ++i) {
        const KPoint &k = trajectory[i];
        kh[i] = h == 0 ? k.kx : h == 1 ? k.ky : k.kz;
      }
    }
    DeviceBuffer<float> kh_dev(kh.size()), w_dev(w.size());
    if (!kh.empty())
      MRI_CUDA_CHECK(cudaMemcpyAsync(kh_dev.get(), kh.data(), kh.size() * sizeof(float), cudaMemcpyHostToDevice, ps));
    if (!w.empty())
      MRI_CUDA_CHECK(cudaMemcpyAsync(w_dev.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice, ps));
    const double turns = h >= 0 ? static_cast<double>(grid.extent(h) / 2) / static_cast<double>(grid.extent(h)) : 0.0;
    modulate_kernel<<<blocks_for(m), kThreads, 0, ps>>>(kh.empty() ? nullptr : kh_dev.get(),
                                                          w.empty() ? nullptr : w_dev.get(), m, turns,
                                                          reinterpret_cast<float2 *>(plan.device_samples()));
    MRI_CUDA_CHECK(cudaGetLastError());
    plan.adjoint_device(policy, plan.device_samples(), plan.device_image());
    plan.synchronize(); // kh_dev and w_dev are freed next
  }
  im.setup.q_seconds = seconds_since(t);

  // Plans, Hermitian completion into the FFT array, FFT(Q) -> the real spectrum.
  t = Clock::now();
  im.prepare(fft);
  im.make_spectrum(reinterpret_cast<const float2 *>(plan.device_image()), h, half); // synchronises: the
  im.setup.fft_setup_seconds = seconds_since(t);                                   // FhdPlan's image is freed next
}

ToeplitzOperator::ToeplitzOperator(const Grid &grid, const DeviceImage &q, ToeplitzFft fft, StreamHandle stream) {
  check_image(q, grid.doubled(), "q");
  impl_ = std::make_unique<Impl>(grid, stream);
  Impl &im = *impl_;
  const auto t = Clock::now();
  join(as_stream(q.stream()), im.stream, im.event);
  im.prepare(fft);
  im.make_spectrum(reinterpret_cast<const float2 *>(q.data()), -1, im.padded); // the whole grid: no completion
  im.q_path = "device q + fft";
  im.setup.fft_setup_seconds = seconds_since(t);
}

ToeplitzOperator::ToeplitzOperator(const Grid &grid, std::span<const float> spectrum, ToeplitzFft fft,
                                   StreamHandle stream) {
  const Grid padded = grid.doubled();
  if (spectrum.size() != static_cast<std::size_t>(padded.voxels()))
    mri::detail::invalid_argument("spectrum.size()", spectrum.size(),
                                  "must be grid.doubled().voxels() = " + std::to_string(padded.voxels()));
  impl_ = std::make_unique<Impl>(grid, stream);
  Impl &im = *impl_;
  auto t = Clock::now();
  im.prepare(fft);
  MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream));
  im.setup.fft_setup_seconds = seconds_since(t);
  t = Clock::now();
  MRI_CUDA_CHECK(cudaMemcpyAsync(im.kernel.get(), spectrum.data(), spectrum.size_bytes(), cudaMemcpyHostToDevice,
                                 im.stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream));
  im.setup.transfer_seconds = seconds_since(t);
}

ToeplitzOperator::~ToeplitzOperator() = default;
ToeplitzOperator::ToeplitzOperator(ToeplitzOperator &&) noexcept = default;
ToeplitzOperator &ToeplitzOperator::operator=(ToeplitzOperator &&) noexcept = default;

const Grid &ToeplitzOperator::grid() const { return impl_->grid; }
ToeplitzFft ToeplitzOperator::fft() const { return impl_->plans->fft; }
const std::string &ToeplitzOperator::fft_note() const { return impl_->plans->note; }
const std::string &ToeplitzOperator::q_path() const { return impl_->q_path; }
const ToeplitzSetup &ToeplitzOperator::setup() const { return impl_->setup; }
StreamHandle ToeplitzOperator::stream() const { return impl_->stream; }

void ToeplitzOperator::set_regularizer(Regularizer r, double lambda) {
  check_regularizer(lambda);
  impl_->regularizer = lambda == 0 ? mri::detail::kRegNone : static_cast<int>(r);
  impl_->lambda = static_cast<float>(lambda);
}

void ToeplitzOperator::apply(const DeviceImage &in, DeviceImage &out) const { impl_->apply(in, out); }

std::vector<float> ToeplitzOperator::spectrum() const {
  std::vector<float> s(static_cast<std::size_t>(impl_->padded.voxels()));
  MRI_CUDA_CHECK(cudaMemcpyAsync(s.data(), impl_->kernel.get(), s.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                 impl_->stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
  return s;
}

// ---------------------------------------------------------------------------------------------
// DirectNormalOperator

struct DirectNormalOperator::Impl {
  Grid grid;
  Dims dims{};
  KernelPolicy policy = KernelPolicy::Auto;
  detail::ForwardPath forward{};
  std::optional<detail::FhdPlan> plan;             // the exact sums, or
  std::shared_ptr<detail::NufftDevicePlan> nufft;  // the NUFFT pair
  Gridding gridding = Gridding::Gather;
  DeviceBuffer<float2> nufft_samples;                  // F x between the two NUFFT halves
  DeviceBuffer<float> weights;
  bool weighted = false;
  int regularizer = mri::detail::kRegNone;
  float lambda = 0;
  cudaEvent_t event = nullptr;

  Impl(const Grid &g, const std::vector<float> &w) : grid(g), dims(dims_of(g, g)), weights(w.size()), weighted(!w.empty()) {
    event = make_event();
    if (weighted)
      MRI_CUDA_CHECK(cudaMemcpy(weights.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~Impl() {
    if (event) cudaEventDestroy(event);
  }
  cudaStream_t plan_stream() const { return as_stream(nufft ? nufft->stream() : plan->stream()); }
  int samples() const { return static_cast<int>(nufft ? nufft_samples.size() : plan->samples()); }
};

DirectNormalOperator::DirectNormalOperator(const Trajectory &trajectory, std::span<const float> weights,
                                           const Grid &grid, KernelPolicy policy, Precision precision,
                                           StreamHandle) {
  if (trajectory.empty()) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  impl_ = std::make_unique<Impl>(grid, checked_weights(weights, trajectory.size()));
  impl_->policy = detail::resolve_policy(policy, precision);
  impl_->forward = detail::forward_path(precision);
  impl_->plan.emplace(trajectory, grid, grid);
}

DirectNormalOperator::DirectNormalOperator(std::shared_ptr<detail::NufftDevicePlan> nufft, Gridding gridding,
                                           std::span<const float> weights, const Grid &grid, std::size_t samples) {
  if (!nufft) mri::detail::invalid_argument("nufft", "null", "needs a device NUFFT plan");
  impl_ = std::make_unique<Impl>(grid, checked_weights(weights, samples));
  impl_->nufft = std::move(nufft);
  impl_->gridding = gridding;
  impl_->nufft_samples = DeviceBuffer<float2>(samples);
}

DirectNormalOperator::~DirectNormalOperator() = default;
DirectNormalOperator::DirectNormalOperator(DirectNormalOperator &&) noexcept = default;
DirectNormalOperator &DirectNormalOperator::operator=(DirectNormalOperator &&) noexcept = default;

const Grid &DirectNormalOperator::grid() const { return impl_->grid; }

void DirectNormalOperator::set_regularizer(Regularizer r, double lambda) {
  check_regularizer(lambda);
  impl_->regularizer = lambda == 0 ? mri::detail::kRegNone : static_cast<int>(r);
  impl_->lambda = static_cast<float>(lambda);
}

void DirectNormalOperator::apply(const DeviceImage &in, DeviceImage &out) const {
  Impl &im = *impl_;
  check_image(in, im.grid, "in");
  check_image(out, im.grid, "out");
  if (in.data() == out.data()) mri::detail::invalid_argument("out", "in", "must not alias the input");
  const cudaStream_t ps = im.plan_stream();
  join(as_stream(in.stream()), ps, im.event);
  cfloat *y = im.nufft ? reinterpret_cast<cfloat *>(im.nufft_samples.get()) : im.plan->device_samples();
  if (im.nufft)
    im.nufft->forward_device(in.data(), y);
  else
    im.plan->forward_device(im.forward, in.data(), y);
  const int m = im.samples();
  if (im.weighted) {
    weight_kernel<<<blocks_for(m), kThreads, 0, ps>>>(reinterpret_cast<float2 *>(y), im.weights.get(), m);
    MRI_CUDA_CHECK(cudaGetLastError());
  }
  if (im.nufft)
    im.nufft->adjoint_device(y, out.data(), im.gridding);
  else
    im.plan->adjoint_device(im.policy, y, out.data());
  if (im.regularizer != mri::detail::kRegNone) {
    const int n = static_cast<int>(im.grid.voxels());
    add_regularizer_kernel<<<blocks_for(n), kThreads, 0, ps>>>(reinterpret_cast<const float2 *>(in.data()), im.dims,
                                                               n, im.regularizer, im.lambda,
                                                               reinterpret_cast<float2 *>(out.data()));
    MRI_CUDA_CHECK(cudaGetLastError());
  }
  join(ps, as_stream(out.stream()), im.event);
}

double time_cufft_pair_ms(const Grid &grid, int repeats) {
  const FftShape shape = fft_shape(grid);
  cufftHandle plan = 0;
  bool has = false;
  const std::size_t work = make_plain_plan(plan, has, shape);
  DeviceBuffer<char> work_area(work);
  DeviceBuffer<float2> data(static_cast<std::size_t>(grid.voxels()));
  cudaStream_t s = as_stream(default_stream());
  const auto n = static_cast<long long>(grid.voxels());
  std::vector<double> ms;
  try {
    MRI_CUFFT_CHECK(cufftSetWorkArea(plan, work_area.get()));
    MRI_CUFFT_CHECK(cufftSetStream(plan, s));
    StreamTimer timer;
    auto *buf = reinterpret_cast<cufftComplex *>(data.get());
    for (int r = 0; r <= repeats; ++r) {
      detail::fill_uniform(reinterpret_cast<float *>(data.get()), 2 * static_cast<std::size_t>(n),
                           12345u + static_cast<unsigned>(r), -1.0f, 1.0f, s);
      timer.start();
      MRI_CUFFT_CHECK(cufftExecC2C(plan, buf, buf, CUFFT_FORWARD));
      MRI_CUFFT_CHECK(cufftExecC2C(plan, buf, buf, CUFFT_INVERSE));
      const double t = timer.stop_ms();
      if (r > 0) ms.push_back(t);
    }
  } catch (...) {
    cufftDestroy(plan);
    throw;
  }
  cufftDestroy(plan);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// ---------------------------------------------------------------------------------------------
// Memory estimate

std::size_t DeviceBytes::peak() const {
  const std::size_t most = std::max({fhd, q, cg});
  return most + most / 20 + (std::size_t{128} << 20); // 5% + 128 MiB for library modules and slack
}

namespace {

// An exact-sum FhdPlan of `out` at its smallest: resident, or streaming its smallest chunk.
std::size_t fhd_plan_bytes(const Grid &out, std::size_t m) {
  return std::min(detail::FhdPlan::resident_bytes(out, m),
                  detail::FhdPlan::chunked_bytes(out, detail::FhdPlan::kChunkQuantum));
}

// A device NUFFT plan of `image` (cuda/gridding_cuda.cu): the oversampled grid (about 2^d voxels
// per image voxel at oversampling 2; the FFT sizes round up) with its cuFFT work area and per-cell
// offsets, the per-sample records, keys, permutation and staged samples, the image.
std::size_t nufft_plan_bytes(const Grid &image, std::size_t m) {
  const auto g = static_cast<std::size_t>(static_cast<double>(image.voxels()) * std::pow(2.2, image.dims()));
  return g * (8 + 8 + 4) + m * 64 + static_cast<std::size_t>(image.voxels()) * 8;
}

} // namespace

DeviceBytes reconstruct_device_bytes(const Grid &grid, std::size_t samples, bool direct, bool q_from_cache,
                                     bool nufft, int coils) {
  const std::size_t n = static_cast<std::size_t>(grid.voxels());
  const Grid padded = grid.doubled();
  const std::size_t l = static_cast<std::size_t>(padded.voxels());
  const std::size_t m = samples;
  const Grid half_grid = q_half_grid(grid);
  const auto half = static_cast<std::size_t>(half_grid.voxels());
  // The Toeplitz operator's buffers: spectrum (4 B), FFT array, the padded input (Pruned: half,
  // and the slab transform's full array), cuFFT work area.
  const std::size_t toeplitz = l * 4 + 7 * l * 8 / 2;
  DeviceBytes b;
  // + the right-hand side (and the NUFFT's uploaded samples).
  b.fhd = (nufft ? nufft_plan_bytes(grid, m) + m * 8 : fhd_plan_bytes(grid, m)) + n * 8;
  const std::size_t iterates = 5 * n * 8; // x, r, p, ap, rhs
  if (direct) {
    b.q = 0;
    b.cg = iterates + m * 4 + (nufft ? nufft_plan_bytes(grid, m) + m * 8 : fhd_plan_bytes(grid, m));
  } else {
    // Q (the rhs held): from the cache (spectrum upload); by NUFFT on the doubled grid (its plan,
    // the weights, Q; then Q and the Toeplitz buffers); by the exact sum on the half grid (its
    // plan, its uploads; then its image and the Toeplitz buffers), or, in 3D, by the Dirichlet sum
    // (samples, weights, tables and the spectrum; then the Toeplitz buffers): the larger of the two.
    if (q_from_cache)
      b.q = n * 8 + toeplitz;
    else if (nufft)
      b.q = n * 8 + std::max(nufft_plan_bytes(padded, m) + m * 8, l * 8 + toeplitz);
    else
      b.q = n * 8 + std::max({fhd_plan_bytes(half_grid, m) + m * 8, half * 8 + toeplitz,
                              detail::dirichlet_spectrum_applies(grid)
                                  ? m * 16 + detail::dirichlet_spectrum_bytes(grid) + l * 4
                                  : std::size_t{0}});
    b.cg = iterates + toeplitz;
  }
  if (coils > 0) {
    const std::size_t maps = static_cast<std::size_t>(coils) * n * 8;
    b.fhd += maps + n * 8;
    // The coil-batched adjoint NUFFT: per coil of a block its samples (uploaded and sorted), its
    // oversampled grid (2^d n points at oversampling 2) and its image.
    if (nufft)
      b.fhd += static_cast<std::size_t>(detail::NufftDevicePlan::kCoilBlock) *
               (2 * m * 8 + (std::size_t{1} << grid.dims()) * n * 8 + n * 8);
    b.q += maps;
    b.cg += maps + 2 * n * 8;
  }
  return b;
}

} // namespace mri::cuda
