// The Toeplitz operator's cuFFT plans (toeplitz_plans.cuh): plain, pruned (slabs + last axis) and
// LTO-callback plans sharing one work area per set, and the process-wide cache of sets.
#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include <cufftXt.h>

#include "cuda_check.cuh"
#include "mri_backend/device_operator_bytes.hpp"
#include "toeplitz_plans.cuh"
#ifdef MRI_TOEPLITZ_LTO
#include <nvJitLink.h>

#include "toeplitz_callbacks_fatbin.h" // mri_toeplitz_callbacks_fatbin[] (generated, cuda/CMakeLists.txt)
#endif

namespace mri::cuda {
namespace detail {

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

namespace {

// A cuFFT handle without its own work area: every plan of a set shares set.work (make_plan_set).
void create_plan(cufftHandle &h, bool &has) {
  MRI_CUFFT_CHECK(cufftCreate(&h));
  has = true;
  MRI_CUFFT_CHECK(cufftSetAutoAllocation(h, 0));
}

// Plans handle `h` (created) as C2C transforms of `batch` contiguous whole padded grids; returns
// the work size it needs.
std::size_t plan_whole_grid(cufftHandle h, const FftShape &s, int batch = 1) {
  std::size_t work = 0;
  int n[3] = {s.n[0], s.n[1], s.n[2]};
  MRI_CUFFT_CHECK(cufftMakePlanMany(h, s.rank, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, batch, &work));
  return work;
}

} // namespace

// Creates a C2C plan without its own work area; returns the work size it needs.
std::size_t make_plain_plan(cufftHandle &h, bool &has, const FftShape &s, int batch) {
  create_plan(h, has);
  return plan_whole_grid(h, s, batch);
}

namespace {

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
  set.params_dev = static_cast<ToeplitzCallbackParams *>(device_malloc(sizeof(ToeplitzCallbackParams)));
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

std::shared_ptr<PlanSet> make_plan_set(const Grid &padded, ToeplitzFft fft, int batch) {
  auto set = std::make_shared<PlanSet>();
  MRI_CUDA_CHECK(cudaGetDevice(&set->device));
  set->padded = padded;
  set->batch = batch;
  const FftShape shape = fft_shape(padded);
  std::size_t work = make_plain_plan(set->fwd, set->has_fwd, shape, batch);
  set->fft = ToeplitzFft::Unfused;
  set->note = "unfused";
  if (batch > 1) fft = ToeplitzFft::Unfused; // the coil-batched SENSE operator's plans
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
  if (set->fft == ToeplitzFft::Unfused)
    work = std::max(work, make_plain_plan(set->inv, set->has_inv, shape, batch));
  if (work > 0) set->work = device_malloc(work);
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

} // namespace

// A plan set for `padded`, from the cache or new. Operators share a set only on one stream: their
// applications are then ordered, and each re-uploads the callback parameters it needs.
std::shared_ptr<PlanSet> acquire_plans(const Grid &padded, ToeplitzFft requested, cudaStream_t stream, int batch) {
  std::shared_ptr<PlanSet> set;
  int device = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&device));
  {
    std::lock_guard lock(g_plans_mutex);
    for (auto &[req, s] : g_plans)
      if (req == requested && s->padded == padded && s->batch == batch && s->device == device &&
          (s.use_count() == 1 || s->stream == stream)) {
        set = s;
        break;
      }
  }
  if (!set) {
    set = make_plan_set(padded, requested, batch);
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
  // The callbacks make cuFFT's 256^3 kernels slower than the unfused passes they replace, so they
  // are not the default (bench_recon_gpu RECON-3D; docs/history.md, "One CG iteration of
  // RECON-3D: how the pad / multiply / crop run"); the rule is shared with the memory estimates.
  return mri::detail::toeplitz_auto_pruned(padded) ? ToeplitzFft::Pruned : ToeplitzFft::Unfused;
}

void clear_plan_cache() {
  std::lock_guard lock(g_plans_mutex);
  g_plans.clear();
}

} // namespace detail

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

void release_toeplitz_plans() { detail::clear_plan_cache(); }

} // namespace mri::cuda
