#pragma once
// mri::reconstruct: F^H D, Q, then conjugate gradient on (F^H W F + lambda R^H R) x = F^H W D;
// with multi-coil data (or maps given), SENSE:
//   (sum_c S_c^H F^H W F S_c + lambda R^H R) x = sum_c S_c^H F^H W D_c   (mri/coils.hpp),
// Q computed once (it does not depend on the coil) and applied per coil. Multi-coil data is
// never reduced to one coil: without maps they are estimated (coils.maps = Estimate, the report
// says how) or the call is refused (Require).
//
// method = Exact computes F^H D and Q by the exact sums (Stone et al. 2008's operators, O(N*M));
// method = Nufft by the Kaiser-Bessel gridding NUFFT of mri/nufft.hpp (O(M W^d + G log G)) at
// nufft.tolerance: F^H D by one adjoint NUFFT, Q by one adjoint NUFFT on the doubled grid, and
// with solver.normal = Direct the CG applies the NUFFT pair F^H W F itself. method = Auto (the
// default) picks one of the two per call (choose_method below); the report says which and why.
//
// On backend = Cuda (Auto picks it when a GPU is usable) every phase runs on the device: F^H D,
// Q on the 2x grid (or its cached spectrum), the Toeplitz kernel's FFT, and the CG iterations
// on device vectors (the same ConjugateGradient template as the CPU); the image comes back to
// the host once. The report gives each phase's time, so the Amdahl split is visible.
//
// Thread safety: reconstruct() may be called from any number of threads at once, on different or
// identical problems, sharing one q_cache_dir or not (tests/concurrency: 16 CPU threads, images
// bitwise equal to a serial run; the cache is process- and thread-safe, toeplitz_cache.hpp). Each
// call builds its own operators; options.on_iteration runs on the calling thread. Each calling
// thread runs its own OpenMP team of omp_get_max_threads() threads, so N concurrent calls use N
// teams: size OMP_NUM_THREADS for that. Those tests cover the CPU backend; the CUDA backend under
// concurrent calls is not covered by them. Determinism per backend and thread count:
// docs/reliability.md.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mri/coils.hpp"
#include "mri/conjugate_gradient.hpp"
#include "mri/kspace.hpp"
#include "mri/nufft.hpp"
#include "mri/offresonance.hpp"
#include "mri/options.hpp"
#include "mri/proximal_solvers.hpp"
#include "mri/regularizer.hpp"
#include "mri/sparse.hpp"

namespace mri {

// How CG applies the normal operator F^H W F.
enum class Normal {
  Toeplitz, // crop(IFFT(FFT(Q) .* FFT(zero-pad(x)))) on the 2x grid: two FFTs per iteration
  Direct    // F^H (w .* (F x)): two direct sums, O(N*M) per iteration (verification; grids where
            // the Toeplitz embedding does not apply)
};
const char *to_string(Normal);

// How F^H D, Q and the direct normal operator are computed.
enum class Method {
  Exact, // the exact sums (KernelPolicy on the GPU)
  Nufft, // the gridding NUFFT at ReconOptions::nufft.tolerance
  Auto   // per call: on the CPU the NUFFT; on the GPU the faster of the two by a cost model;
         // Exact where the NUFFT cannot reach nufft.tolerance at the precision asked for
};
const char *to_string(Method);

// What Method::Auto resolves to for a problem, and why (ReconReport::method_note).
struct MethodChoice {
  Method method = Method::Exact;
  std::string note;
};
// The size of a problem as the cost model sees it: grid dimensions and voxels, samples per coil,
// coils (after compression), and the CG iterations that apply the normal operator directly
// (normal = Direct; 0 for Toeplitz, whose iterations cost the same with either method).
struct ReconSize {
  int dims = 2;
  double voxels = 0;
  double samples = 0;
  int coils = 1;
  int direct_iterations = 0;
};
// Method::Auto's rule on `backend` (Cpu or Cuda) at `precision` and nufft.tolerance: the NUFFT
// when it reaches the tolerance at that precision (on the GPU: float32 only) and, on the GPU,
// when the cost model estimates it faster than the exact sums for this size; else Exact. Pure
// host arithmetic (no device is asked); reconstruct() calls it with the resolved backend.
MethodChoice choose_method(const ReconSize &size, Backend backend, Precision precision, double nufft_tolerance);

// What the Toeplitz kernel cache did (ReconOptions::q_cache_dir).
enum class QCacheStatus {
  Off,     // no cache directory, or normal = Direct
  Hit,     // the spectrum was loaded from the cache
  Miss,    // no entry: Q was computed and its spectrum stored (q_cache_message says if storing failed)
  Rejected // an entry existed but was rejected (q_cache_message says why): Q was computed and the
           // entry replaced
};
const char *to_string(QCacheStatus);

// What reconstruct does with multi-coil data when ReconOptions::coils.sensitivities is empty.
enum class CoilMaps {
  Estimate, // estimate them from the data (estimate_sensitivities with ReconOptions::coils.estimation)
  Require   // throw InvalidArgument: the caller must give maps
};
const char *to_string(CoilMaps);

// A phase of reconstruct starting (fraction 0) or ending (fraction 1), for progress displays (the
// command line's line): "coil maps" (estimating them, compressing coils), "F^H D", "Q" (computed,
// not when the Q cache had it) and "CG". expected_seconds, at a start: an estimate of the phase's
// duration, NaN where there is none. Q on the CPU has one: it runs the same sums (exact, or the
// NUFFT's gridding) as the F^H D just measured, over grid.doubled() for one coil instead of the
// grid for each coil, so its time is about F^H D's times voxels(doubled) / (voxels x coils).
struct ReconPhase {
  std::string_view name;
  double fraction = 0;
  double expected_seconds = 0;
};

// How reconstruct scales the data before a sparse reconstruction (the l2 problem is linear and
// needs none). The image comes back in the data's units either way.
enum class DataScaling {
  Bart, // as `bart pics`: y times the factor bart_data_scale gives from the adjoint image
        // E^H W y (docs/sparse.md), so BART's lambda values carry over
  None  // lambda applies to the data as given
};
const char *to_string(DataScaling);

// The factor DataScaling::Bart multiplies the data by, from the adjoint image's values (N of
// them): sqrt(N) / r, r the 90th percentile of their magnitudes, or the maximum where it stands
// out (max - p90 >= 2 (p90 - median)); 1 for an empty or all-zero image.
double bart_data_scale(std::span<const cfloat> adjoint_image);

// The iterative solver. Without sparse terms: conjugate gradient on the normal equations
// (F^H W F + lambda R^H R) x = F^H W D (SENSE: summed over coils). With terms: the proximal
// solver (mri/proximal_solvers.hpp) on
//   min_x 0.5 ||W^(1/2) (E x - s y)||^2 + 0.5 lambda ||R x||^2 + sum_terms lambda_i R_i(T_i x),
// s the data scale (scaling), on the same normal operator.
struct SolverOptions {
  int iterations = 20;
  // CG: the relative residual at which it stops early. Proximal: the relative change of the
  // iterate, ||x+ - x|| / ||x+||, at which it stops early.
  double tolerance = 1e-6;
  double lambda = 0.0;
  Regularizer regularizer = Regularizer::None;
  Normal normal = Normal::Toeplitz;
  std::vector<SparseTerm> terms; // l1-wavelet, TV, l1 (mri/sparse.hpp; parse_bart_term for `-R`)
  ProximalSettings proximal;     // the proximal solver and its parameters (with terms)
  DataScaling scaling = DataScaling::Bart; // with terms
};

// The NUFFT (method = Nufft, or Auto choosing it): the target relative error of its F^H D, Q and
// F (NufftOptions::tolerance, [1e-6, 1e-1]; below 1e-5 method = Nufft needs precision = Float64,
// which runs on the CPU, and Auto runs the exact sums) and how its adjoint grids (Auto: the
// deterministic gather; ScatterFixed, deterministic too and faster for one coil from kernel width
// 5, needs 16 B more device memory an oversampled grid point).
struct NufftSettings {
  double tolerance = 1e-3;
  Gridding gridding = Gridding::Auto;
};

// The CUDA backend (backend = Cuda, or Auto choosing it).
struct GpuOptions {
  KernelPolicy policy = KernelPolicy::Auto; // the F^H D stage of the exact sums, F^H D and Q (mri/options.hpp)
  // The CUDA devices (ordinals) a reconstruction is split over (docs/scaling.md): the exact
  // F^H D and Q by voxel slabs, one slab per entry, each device its own plan and stream, the
  // slabs gathered onto the first device; with SENSE (Toeplitz normal, either method) the CG's
  // normal operator by coils, each entry a contiguous block of coils, the iterate and the partial
  // sums exchanged once per iteration through NCCL (distinct devices) or peer copies; with SENSE
  // and method = Nufft also F^H D by the same coils (each entry uploads and grids its own coils,
  // the partial sums added on the first device). Everything else runs on the first device (CG
  // itself, the NUFFT's Q and one coil's F^H D, solver.normal = Direct: ReconReport::device_note says
  // what did not split).
  // Empty: the current device alone. The first must be the calling thread's current device (0
  // unless the program chose another). Repeats are allowed: {0, 0} is two slabs on device 0, run
  // in turn (how one GPU tests the split). Needs the CUDA backend: with backend = cpu
  // InvalidArgument, with auto on a machine without a usable GPU Unsupported (its reason); an
  // ordinal this process does not see: InvalidArgument naming it and the device count.
  std::vector<int> devices;
  // Device memory the reconstruction may use, in bytes; 0: what the device has free. The need is
  // estimated before anything is allocated; a problem that does not fit throws Unsupported
  // naming the bytes needed and available.
  std::size_t memory_limit = 0;
};

// Multi-coil data (SENSE).
struct CoilOptions {
  // Coil sensitivities on `grid`, one per coil of the data (before compression). Given for
  // single-coil data, they make a one-coil SENSE (e.g. an intensity correction).
  std::shared_ptr<const CoilSensitivities> sensitivities;
  CoilMaps maps = CoilMaps::Estimate; // what to do with multi-coil data without sensitivities
  SensitivityOptions estimation;      // how maps are estimated (maps = Estimate)
  // > 0: compress the coils to this many virtual coils (CoilCompression, applied to the data and
  // the maps) before the reconstruction; must not exceed the data's coils. 0: all coils.
  int virtual_coils = 0;
};

// Off-resonance (B0) correction (mri/offresonance.hpp, docs/offresonance.md): with a field map the
// reconstruction uses the model y(t_m) = sum_x S(x) rho(x) exp(-2 pi i (k_m . x / n + f(x) t_m)) and
// needs the data's sample times (KSpaceData::sample_times). method = Exact: the exact field-corrected
// sums (the normal applied directly: it has no Toeplitz form); Nufft or Auto: time segmentation
// (segmentation: interpolator, L or its automatic choice), the normal by its Toeplitz kernels
// (solver.normal = Toeplitz) or by the segmented NUFFTs (Direct). Both backends (on one device;
// the GPU's kernels and fallbacks: docs/offresonance.md). A map on another
// grid is resampled (FieldMap::resampled; ReconReport::offresonance_note says so); a map that is
// zero everywhere runs the uncorrected model, which it equals. The Q cache is not used.
struct OffResonanceOptions {
  std::shared_ptr<const FieldMap> field_map; // null: no correction
  SegmentationOptions segmentation;
};

struct ReconOptions {
  Backend backend = Backend::Auto;
  Method method = Method::Auto;
  Precision precision = Precision::Float32; // of F^H D and Q (the CG itself is float32 + double reductions)
  SolverOptions solver;
  NufftSettings nufft;
  GpuOptions gpu;
  CoilOptions coils;
  OffResonanceOptions offresonance;
  // Directory of the Toeplitz kernel cache (mri/toeplitz_cache.hpp); empty: no cache. Entries
  // are keyed by a hash of trajectory, weights, grid, precision and how Q was computed (exact, or
  // NUFFT at its tolerance).
  std::filesystem::path q_cache_dir;
  // Called after each CG iteration with (iteration, iterate, relative residual). On the GPU this
  // costs one download of the iterate per iteration.
  std::function<void(int, const Image &, double)> on_iteration;
  // Called when each phase starts and ends (ReconPhase), on the thread that called reconstruct.
  std::function<void(const ReconPhase &)> on_phase;
};

// What one device of ReconOptions::gpu.devices did (ReconReport::device_seconds): the seconds its
// share of each phase took on it (wall time of its host thread: uploads to it, its kernels, the
// copy of its slab to the first device). A phase that did not split counts on the first device.
struct DevicePhaseSeconds {
  int device = 0;         // CUDA ordinal
  double fhd_seconds = 0; // its share of F^H D
  double q_seconds = 0;   // its share of Q (0 on the others when Q ran on the first device only)
  // SENSE split by coils (the CG's normal operator, docs/scaling.md): its coils' share of every
  // CG iteration, device time (CUDA events around its coils' normal), summed over iterations;
  // 0 when the coils were not split.
  double cg_seconds = 0;
};

struct ReconReport {
  Backend backend = Backend::Cpu; // the backend that ran
  std::string backend_note;       // why: with backend = Auto, e.g. "auto: cpu (no CUDA driver ...)"
  std::size_t wrapped_samples = 0; // samples outside [-n/2, n/2) used as their periodic images
                                  // (k - n round(k/n): the same DFT samples; Trajectory::check_range)
  Normal normal = Normal::Toeplitz;
  Method method = Method::Exact; // the method that ran (never Auto)
  std::string method_note;       // with method = Auto, which and why: "auto: nufft (cpu: ...)"
  int acquired_coils = 1;        // the data's coils
  int coils = 1;                 // the coils the SENSE operator used (virtual coils when compressed)
  double coil_energy_kept = 1;   // with coils.virtual_coils: the data's energy the virtual coils keep
  std::string maps;              // "none" (single coil, no maps), "given", or "estimated (...)"
  // Phases (seconds, wall clock; on the GPU each phase ends with a stream synchronisation).
  double setup_seconds = 0;     // validation, plans and device buffers, cache key hashing
  double coil_seconds = 0;      // estimating maps and compressing coils (host)
  double transfer_seconds = 0;  // host <-> device copies: samples, trajectory, weights, the result
  double fhd_seconds = 0;       // F^H (w .* D) (SENSE: sum_c S_c^H F^H (w .* D_c))
  double q_seconds = 0;         // Q on the 2x grid, or reading its spectrum from the cache
  double fft_setup_seconds = 0; // FFT plans and FFT(Q) -> the Toeplitz spectrum (or its upload)
  double cg_seconds = 0;        // all solver iterations (CG, or the proximal solver with its power iteration)
  double total_seconds = 0;     // from entering reconstruct() to the image on the host (both backends)
  int iterations = 0;
  CgStatus status = CgStatus::NotRun; // NonFinite: the data or operator produced NaN/Inf and the
                                      // solver stopped there (the image is its last finite iterate)
  // CG: the relative residual before the first and after each iteration. Proximal: the relative
  // change of the iterate after each iteration.
  std::vector<double> residuals;
  // "cg", or with sparse terms the proximal algorithm that ran ("fista", "admm", "primal-dual").
  std::string solver = "cg";
  std::vector<double> objective; // proximal: the objective before the first and after each iteration
  double step = 0;               // proximal: 1/L (fista, primal-dual's tau) or ADMM's rho L
  double lipschitz = 0;          // proximal: L, the normal operator's largest eigenvalue (power iteration)
  bool lipschitz_cached = false; // proximal: L read from the entry beside Q's (q_cache_dir): no power iteration
  int rejected_steps = 0;        // fista: iterations its monotone safeguard rejected
  int step_raises = 0;           // fista: steps whose curvature raised L (its step check)
  double data_scale = 1;         // proximal: the factor the data were scaled by (DataScaling)
  QCacheStatus q_cache = QCacheStatus::Off;
  std::string q_cache_message;     // why an entry was rejected, or why storing failed
  std::filesystem::path q_cache_file;
  std::size_t device_bytes = 0;    // GPU: the estimated peak device memory of this problem
  std::string toeplitz_fft;        // GPU Toeplitz: how pad/multiply/crop run ("cufft-callbacks",
                                   // "unfused", with the reason for a fallback)
  std::string q_method;            // GPU: how Q's spectrum was made: "dirichlet-tensor-cores" (3D,
                                   // policy Auto), "q-sum/<policy> + fft", "device q + fft"
                                   // (method = Nufft), "spectrum upload" (cache hit); empty on
                                   // the CPU and for normal = Direct
  // GPU: one entry per device used (ReconOptions::gpu.devices, or the current device), in order;
  // empty on the CPU. device_note: how F^H D and Q were split over them, and what ran on the
  // first device only and why (e.g. "Q: dirichlet-tensor-cores, not split: on device 0").
  std::vector<DevicePhaseSeconds> device_seconds;
  std::string device_note;
  // SENSE split by coils: the image exchange of every CG iteration (the iterate out to each
  // device, the coils' partial sums back to the first), summed over iterations; per iteration
  // the fastest device's time for its two collectives (the others' include waiting for the
  // slowest device's coils). 0 when the coils were not split.
  double exchange_seconds = 0;
  // Off-resonance: "none", "exact" or "time-segmented"; with segments, the interpolator, the
  // stated error bound (TimeSegmentation::error) and its worst pair; offresonance_note: the map's
  // resampling, a zero map, or where it ran.
  std::string offresonance = "none";
  int segments = 0;
  std::string segment_interpolator;
  double segment_error = 0;
  double segment_max_error = 0;
  std::string offresonance_note;
};

struct ReconResult {
  Image image;
  ReconReport report;
};

// Throws InvalidArgument for bad data/grid/options (sizes, dims, k beyond 3n/2,
// solver.lambda < 0, solver.iterations < 0, nufft.tolerance outside its range, maps on another
// grid or of another coil count, multi-coil data without maps under CoilMaps::Require,
// coils.virtual_coils outside [0, coils]); Unsupported when backend == Cuda cannot run here or the problem
// does not fit in the device memory (the message names the bytes needed and free).
ReconResult reconstruct(const KSpaceData &data, const Grid &grid, const ReconOptions &options = {});

} // namespace mri
