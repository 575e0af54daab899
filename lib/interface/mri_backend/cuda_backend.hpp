#pragma once
// The seam between libmri (host code, no CUDA library) and the CUDA backend, a plugin
// (libmri_cuda.so) that libmri loads with dlopen the first time a CUDA backend is asked for.
// lib/ owns this interface; cuda/ implements it and includes nothing else of lib/ (the headers
// in this folder are the whole of what a backend sees besides the public ones).
//
// The plugin exports two C symbols (see kCudaPluginVersionSymbol, kCudaPluginEntrySymbol):
// its ABI number and version, checked by libmri before anything else is called, and the entry
// that returns its CudaBackend. Both sides are built from one tree with one compiler; the
// version check refuses a plugin from another build of mri rather than risk a mismatched vtable.
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mri/dynamic.hpp"
#include "mri/image.hpp"
#include "mri/mcir.hpp"
#include "mri/motion.hpp"
#include "mri/nufft.hpp"
#include "mri/offresonance.hpp"
#include "mri/options.hpp"
#include "mri/reconstruct.hpp"
#include "mri/trajectory.hpp"
#include "offresonance.hpp"

namespace mri {
class MotionBackend; // motion_backend.hpp
}

namespace mri::detail {

// Bumped whenever a class below changes shape.
inline constexpr int kCudaPluginAbi = 13;

// The widest NUFFT kernel the device kernels are compiled for (tolerances down to 1e-7 need 8);
// NufftOperator sends wider kernels (float64 tolerances) to the CPU.
inline constexpr int kMaxDeviceNufftWidth = 8;

// The sum s(x) = sum_m c_m exp(+i 2 pi sum_a k_ma x_a / period_a) on a grid `out` (F^H: out ==
// period; Q: out = period.doubled()) and F's forward on out == period, for one trajectory whose
// device copies the object owns (mri::detail::adjoint_sum_f64's semantics). Host arrays; calls
// block until the result is on the host. Not thread-safe: one object per thread.
class DeviceFourier {
public:
  virtual ~DeviceFourier() = default;
  virtual void adjoint(KernelPolicy policy, const cfloat *coefficients, cfloat *result) = 0;
  // F x by the fastest forward path of `precision`.
  virtual void forward(Precision precision, const cfloat *image, cfloat *samples) = 0;
  // Complex double end to end (host arrays; SeparableGemm's ZGEMM path).
  virtual void adjoint_f64(const cdouble *coefficients, cdouble *result) = 0;
  virtual void forward_f64(const cdouble *image, cdouble *samples) = 0;
  // The same as adjoint/forward on the caller's device memory (see DeviceNufft::forward_on_device).
  virtual void adjoint_on_device(KernelPolicy policy, const cfloat *coefficients, cfloat *result) = 0;
  virtual void forward_on_device(Precision precision, const cfloat *image, cfloat *samples) = 0;
};

// The gridding NUFFT of one trajectory on the device (NufftOperator with backend = Cuda).
// Host arrays; calls block. Not thread-safe: one object per thread.
class DeviceNufft {
public:
  virtual ~DeviceNufft() = default;
  virtual void forward(const cfloat *image, cfloat *samples) = 0;
  virtual void adjoint(const cfloat *samples, cfloat *image, Gridding gridding) = 0;
  // `coils` coils (coil c's M samples at samples + c M, its image at images + c N), each equal
  // to adjoint() of its coil, the gather reading each sample's weights once for a block of coils.
  virtual void adjoint_coils(const cfloat *samples, int coils, cfloat *images, Gridding gridding) = 0;
  // forward / adjoint on the caller's device memory (cudaMalloc, a CuPy or PyTorch CUDA array): no
  // host copy. InvalidArgument naming the argument when a pointer is not device (or managed)
  // memory of the plan's device. The call waits for the work queued on that device before it
  // reads, and returns when its result is written.
  virtual void forward_on_device(const cfloat *image, cfloat *samples) = 0;
  virtual void adjoint_on_device(const cfloat *samples, cfloat *image, Gridding gridding) = 0;
};

// What the host side chooses for a NUFFT (lib/nufft/nufft_setup.cpp): kernel, oversampled grid, the
// kernel polynomial the device evaluates, and the deapodization; the same numbers the CPU plan
// uses.
struct NufftSetup {
  KaiserBessel kernel;
  int dims = 2;
  int width = 4;
  int degree = 0;
  std::array<std::int64_t, 3> n{1, 1, 1};   // image grid
  std::array<std::int64_t, 3> g{1, 1, 1};   // oversampled grid
  std::vector<float> coef;                  // (degree + 1) x width kernel polynomial
  std::array<std::vector<float>, 3> deapod; // 1 / Phi per axis, n_a values
};
// options: validated (validated_nufft_options). Kept per grid and options for the process, so a
// second plan of the same problem skips the polynomial fit and the Bessel evaluations.
std::shared_ptr<const NufftSetup> nufft_setup(const Grid &grid, const NufftOptions &options);
// NufftOperator's validation and resolution of the backend and the gridding (Throws as its
// constructor), for a grid of `dims` dimensions.
NufftOptions validated_nufft_options(NufftOptions options, int dims);
// What Gridding::Auto runs on `backend` (resolved) at kernel width `width`.
Gridding deterministic_gridding(Backend backend, int dims, int width);

// reconstruct_motion_corrected's states on the device (CudaBackend::motion_corrected): each
// state's b_s = sum_c conj(S_c) F_s^H (w .* D_{s,c}) and Toeplitz Q_s made once, as mri::reconstruct's
// device path makes them, and kept there for every solve with other fields (the chain's rounds,
// MotionChainOptions), the refinement of a warped image on one state's data, and MCIR's data fit.
// N_s below: the state's SENSE normal sum_c conj(S_c) Q_s S_c (Q_s alone without maps).
class DeviceMcir {
public:
  virtual ~DeviceMcir() = default;
  virtual std::size_t states() const = 0;
  // (sum_s W_s^H N_s W_s + lambda R^H R) x = sum_s W_s^H b_s by CG, or with the options' sparse
  // terms the proximal solver; warps: one per state (reference -> state s), each outliving the
  // call; data_energy: ||W^(1/2) y||^2 over every state's samples (McirCache::data_energy), the
  // proximal objective's constant. Fills report's cg_seconds, iterations, status, residuals,
  // solver (and the proximal solver's fields), device_note, and motion's rhs_seconds (the warps'
  // part of b). The warps stay on the device for data_fit.
  virtual Image solve(const std::vector<const ImageWarp *> &warps, double data_energy, ReconReport &report,
                      MotionCorrectionReport &motion) = 0;
  // start + d, d after `iterations` CG iterations on N_s d = b_s - N_s start (state s's normal
  // equations from start, without the regulariser); residual: CG's last relative residual.
  virtual Image refine(std::size_t s, const Image &start, int iterations, double &residual) const = 0;
  // sum_s (W_s x)^H N_s (W_s x) - 2 Re (W_s x)^H b_s with the last solve's warps (add
  // ||W^(1/2) y||^2 for ||W^(1/2) (E x - y)||^2). Throws InvalidArgument before any solve.
  virtual double data_fit(const Image &x) const = 0;
};

class CudaBackend {
public:
  virtual ~CudaBackend() = default;
  // Whether a CUDA device is usable (a driver and at least one device).
  virtual bool device_present() const = 0;
  // The kernel policy that runs for `policy` at `precision` (Auto: the fastest accurate one);
  // Unsupported for one that cannot run (cuda/README.md).
  virtual KernelPolicy resolve_policy(KernelPolicy policy, Precision precision) const = 0;
  // Throws InvalidArgument for an empty trajectory or one outside period's k-space, Unsupported
  // when it does not fit the device.
  virtual std::unique_ptr<DeviceFourier> fourier(const Trajectory &trajectory, const Grid &out,
                                                 const Grid &period) const = 0;
  // The NUFFT's device plan for `trajectory` as given. Null when a sample lies outside the grid's
  // k-space [-n/2, n/2) (checked on the device, where it costs no host pass over the samples): the
  // caller wraps the trajectory (Trajectory::wrapped) and asks again. Throws InvalidArgument for
  // an empty trajectory or one of other dimensions, Unsupported when it does not fit the device.
  virtual std::unique_ptr<DeviceNufft> nufft(const Trajectory &trajectory, const Grid &grid,
                                             const NufftOptions &validated) const = 0;
  // The exact field-corrected F and F^H (FieldFourierOperator with backend = Cuda): `trajectory`
  // within the grid's k-space (Trajectory::wrapped), field on `grid`, one time per sample (validated
  // by the caller). A field that vanishes (zero map or zero times) runs DeviceFourier's exact sums,
  // as the host's operator runs FourierOperator. Throws InvalidArgument, Unsupported as fourier().
  virtual std::unique_ptr<DeviceFieldFourier> field_fourier(const Trajectory &trajectory, const Grid &grid,
                                                            const FieldMap &field, std::span<const float> times) const = 0;
  // mri::reconstruct with options.offresonance.field_map (non-zero, on `grid`) on the device: as
  // reconstruct() below, with `times` the data's sample times (one coil's), the report's
  // off-resonance fields filled (lib/offresonance/recon_offresonance.hpp).
  virtual ReconResult reconstruct_offresonance(const KSpaceData &data, std::span<const float> times, const Grid &grid,
                                               const ReconOptions &options, const CoilSensitivities *maps,
                                               ReconReport report,
                                               std::chrono::steady_clock::time_point t_start) const = 0;
  // MotionEstimator's device backend (float32); options validated.
  virtual std::unique_ptr<MotionBackend> motion(const Grid &grid, const MotionOptions &options) const = 0;
  // mri::reconstruct on the device; data, grid and options already validated, the coils prepared
  // (lib/sense/recon_coils.hpp): `data` is what to reconstruct (compressed when asked), `maps` its
  // coils' sensitivities (null: single coil without maps, no SENSE; else maps->coils() ==
  // data.coils()). ReconOptions::coils is not read again. `report`
  // arrives with the coil fields filled; its total_seconds counts from t_start (when
  // mri::reconstruct was entered), as on the CPU.
  virtual ReconResult reconstruct(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                                  const CoilSensitivities *maps, ReconReport report,
                                  std::chrono::steady_clock::time_point t_start) const = 0;
  // mri::reconstruct_frames on the device, as reconstruct() above for each frame (every frame's
  // data prepared alike, `maps` shared), one solver on the stack of frames.
  virtual FramesResult reconstruct_frames(const std::vector<KSpaceData> &frames, const Grid &grid,
                                          const ReconOptions &options, const CoilSensitivities *maps,
                                          ReconReport report, std::chrono::steady_clock::time_point t_start) const = 0;
  // reconstruct_motion_corrected's states on the device (DeviceMcir): `states` as solved
  // (coil-compressed when asked; trajectories within the grid's k-space), `maps` their coils'
  // sensitivities (null: one coil without maps), options validated and resolved (method,
  // precision, gpu.policy, the solver's settings and terms read; kept for every solve). Makes every
  // state's b_s and Q_s, the report getting the F^H D, Q, transfer and setup seconds and the
  // device notes as reconstruct() would. Unsupported when it does not fit the device.
  virtual std::unique_ptr<DeviceMcir> motion_corrected(const std::vector<const KSpaceData *> &states, const Grid &grid,
                                                       const ReconOptions &options, const CoilSensitivities *maps,
                                                       ReconReport &report) const = 0;

  // ---- issue 42 (frames and MCIR): the joint solves' memory check (mri/detail/joint_device_memory.hpp) ----
  // The current device's free memory in bytes (cudaMemGetInfo), read before a joint solve allocates;
  // 0 where the backend does not report it (the check then uses gpu.memory_limit alone).
  virtual std::size_t device_free_bytes() const { return 0; }
};

// The plugin as libmri found it: the backend, or null and the reason (no driver, dlerror, a
// version mismatch). Loaded once per process, on the first call; thread-safe.
struct CudaPlugin {
  const CudaBackend *backend = nullptr;
  std::string path;   // the file loaded (or tried)
  std::string reason; // why backend is null
};
const CudaPlugin &cuda_plugin();
// The plugin's backend, or Unsupported naming why there is none (`who` starts the message).
const CudaBackend &require_cuda(const char *who);
// Loads the plugin at `path` without the driver probe, for tests (a missing file, a file that
// is no library, a plugin of another version). Each call loads anew.
CudaPlugin load_cuda_plugin(const std::string &path);

} // namespace mri::detail

// The plugin's exported C entry points.
extern "C" {
// "<abi> <version>", e.g. "1 0.1.0".
using MriCudaPluginVersionFn = const char *(*)();
using MriCudaPluginEntryFn = const mri::detail::CudaBackend *(*)();
}
namespace mri::detail {
inline constexpr const char *kCudaPluginVersionSymbol = "mri_cuda_plugin_version";
inline constexpr const char *kCudaPluginEntrySymbol = "mri_cuda_plugin_backend";
} // namespace mri::detail
