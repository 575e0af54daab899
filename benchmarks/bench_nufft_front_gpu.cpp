// The NUFFT time-accuracy front (docs/performance.md): our CUDA NUFFT and cuFINUFFT 2.5.1
// (float32, `cufinufftf_*`) in one process, on the same points and the same input values, each
// error measured against the same float64 direct sums. Built only with -DMRI_CUFINUFFT_DIR=<dir>
// (benchmarks/CMakeLists.txt); run on the GPU machine by tools/dev/nufft-front.sh, plotted by
// tools/docs/plot_nufft_front.py (docs/nufft_front_h200.png).
//
//   geometries  uniform3d  128^3, M = 2^21 uniform random in [-n/2, n/2)^3
//               koosh3d    128^3, traj::koosh 8192 spokes x 256 = 2^21 samples
//               uniform2d  256^2, M = 2^20 uniform random
//               radial2d   256^2, traj::radial 4096 spokes x 256 = 2^20 samples (uniform angles)
//   types       1 = adjoint F^H (ours: RGA gather, SM shared scatter, GA global scatter),
//               2 = forward F (ours: the one interpolation path); cuFINUFFT methods 1, 2, 3
//               (a method cuFINUFFT refuses for a dim/type is reported and skipped)
//   tolerances  3e-2 1e-2 1e-3 1e-4 1e-5 (the tolerance each library is asked for; 3e-2 is the
//               coarsest where our guarantee allows W = 3 in 3D, the width cuFINUFFT takes at 1e-2)
//
// Why measured error: ours guarantees error <= tolerance and lands well below it, cuFINUFFT's
// tolerance is nominal; a front compares time at equal MEASURED accuracy.
//
// Conventions (docs/conventions.md): ours takes k in cycles/FOV and computes
//   type 1  f(x) = sum_m c_m exp(+i 2 pi k_m . x / n),   type 2  c_m = sum_x f(x) exp(-i 2 pi k_m . x / n),
// x the voxel coordinates {-n/2 .. n/2-1}, x fastest. cuFINUFFT with points x_j = 2 pi k_j / n
// (radians), iflag +1 for type 1 and -1 for type 2, modeord 0 (modes -N/2 .. N/2-1, first axis
// fastest) computes the same sums into the same layout. The benchmark checks this itself: every
// cuFINUFFT output is compared, over all its values, with ours (diff_vs_ours), and a distance
// above kAgreement x tolerance is printed as DISAGREE and makes the exit status 3.
//
// Errors: ||out - ref|| / ||ref|| over kChecked random modes (type 1) or samples (type 2),
// against float64 direct sums (tests/gpu/sampled_reference.hpp) at the trajectory's float k:
// one reference for both libraries (rel_err). cuFINUFFT is given float radians, rounded once from
// k (relative 6e-8: a phase error of up to |mode| x that, a floor of a few 1e-6), so its rows also
// carry rel_err_own_points: the error against the direct sums at the radians it was given,
// FINUFFT's own definition (for our rows the two are one number).
//
// Times: exec_ms, CUDA events around one execute on device-resident data (input already on the
// device, output left there), median of kExecReps after warm-up. plan_ms, host wall clock from
// host points until the plan is ready, median of kPlanReps after one warm-up plan: ours, the
// NufftOperator constructor (trajectory moved in) until its stream is synchronised; cuFINUFFT,
// the upload of its float radians (pageable cudaMemcpy into buffers allocated beforehand) +
// makeplan + setpts + cudaDeviceSynchronize (the host conversion k -> radians is not counted).
// Ours makes one plan per (geometry, tolerance) for both types; cuFINUFFT one per type and method.
//
// Output: one line per case on stdout and a CSV (--out, default nufft_front.csv) with columns
//   geometry,dims,M,type,library,method,tol,width,exec_ms,plan_ms,rel_err,rel_err_own_points,diff_vs_ours
// width: our kernel width (cuFINUFFT's is not exposed by its API: empty). diff_vs_ours: full-output
// relative distance to our RGA adjoint (type 1) / forward (type 2) at the same tolerance.
//
// Usage: bench_nufft_front_gpu [--out FILE] [--geometries uniform3d,koosh3d,uniform2d,radial2d]
//                              [--tolerances 3e-2,1e-2,1e-3,1e-4,1e-5] [--peer 1,2,3 | none]
// --peer: the cuFINUFFT methods run (default all three); `none` times ours alone, for A/B runs of
// our own builds (tools/dev/device-ab.sh), where the peer's rows would only cost device time.
// Exit status: 0; 1 on an error (message on stderr); 2 without a usable CUDA device; 3 when a
// cuFINUFFT output disagrees with ours.
#include <cuda_runtime.h>
#include <cufinufft.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <numbers>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../tests/gpu/sampled_reference.hpp"
#include "bench_support.hpp"
#include "nufft/gridding_cuda.hpp"
#include "mri/error.hpp"
#include "mri/nufft.hpp"
#include "mri/options.hpp"
#include "mri/trajectory.hpp"

namespace {

using namespace mri;
using cdouble = std::complex<double>;
using Clock = std::chrono::steady_clock;
using cuda::detail::ScatterMethod;

constexpr int kExecReps = 20;           // timed executes per case (median), after warm-up
constexpr int kPeerWarmups = 3;         // cuFINUFFT's untimed executes (ours: time_*_ms's one)
constexpr int kPlanReps = 5;            // timed plans per case (median), after one warm-up plan
constexpr std::size_t kChecked = 256;   // outputs compared with the float64 direct sums
constexpr double kAgreement = 3;        // both err <= tol nominally: outputs within 2 tol, with slack
constexpr int kPeerMethods[] = {1, 2, 3};

// ---------------------------------------------------------------------------------------------
// Small helpers: CUDA errors as exceptions, medians, wall-clock milliseconds.

void cuda_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A device array of n T (cudaMalloc'd here: cuFINUFFT's buffers).
template <class T> class DeviceArray {
public:
  explicit DeviceArray(std::size_t n) : n_(n) { cuda_check(cudaMalloc(&d_, n * sizeof(T)), "cudaMalloc"); }
  ~DeviceArray() { cudaFree(d_); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
  T *get() const { return d_; }
  template <class U> void upload(const std::vector<U> &h) {
    static_assert(sizeof(U) == sizeof(T));
    cuda_check(cudaMemcpy(d_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  template <class U> std::vector<U> download() const {
    static_assert(sizeof(U) == sizeof(T));
    std::vector<U> h(n_);
    cuda_check(cudaMemcpy(h.data(), d_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return h;
  }

private:
  T *d_ = nullptr;
  std::size_t n_;
};

// ---------------------------------------------------------------------------------------------
// The problems: points, inputs, cuFINUFFT's form of the points, the float64 references.

// One problem of the front: a grid, its points, and the inputs both libraries get.
struct Geometry {
  std::string name;
  Grid grid;
  Trajectory traj;
  std::vector<cfloat> strengths; // type 1 input, one per sample
  std::vector<cfloat> image;     // type 2 input, one per voxel (= mode)
};

constexpr const char *kGeometries[] = {"uniform3d", "koosh3d", "uniform2d", "radial2d"};

Trajectory trajectory_of(const std::string &name, const Grid &g) {
  if (name == "uniform3d") return traj::uniform_random(g, std::size_t{1} << 21, 1501);
  if (name == "koosh3d") return traj::koosh(g, 8192, 256);
  if (name == "uniform2d") return traj::uniform_random(g, std::size_t{1} << 20, 1502);
  if (name == "radial2d") return traj::radial(g, 4096, 256);
  throw std::logic_error("no trajectory for geometry " + name);
}

void check_geometry_name(const std::string &name) {
  if (std::find(std::begin(kGeometries), std::end(kGeometries), name) == std::end(kGeometries))
    throw std::invalid_argument("unknown geometry " + name + " (uniform3d, koosh3d, uniform2d, radial2d)");
}

Geometry make_geometry(const std::string &name) {
  Geometry p{name, name.ends_with("3d") ? Grid(128, 128, 128) : Grid(256, 256), {}, {}, {}};
  p.traj = trajectory_of(name, p.grid);
  p.strengths = bench::random_complex(p.traj.size(), 11);
  p.image = bench::random_complex(static_cast<std::size_t>(p.grid.voxels()), 12);
  return p;
}

// cuFINUFFT's points: x = 2 pi k / n radians per axis, float (rounded once, from double).
struct PeerPoints {
  std::vector<float> axis[3];
};

PeerPoints peer_points(const Geometry &p) {
  PeerPoints r;
  for (int a = 0; a < p.grid.dims(); ++a) {
    const double scale = 2 * std::numbers::pi / static_cast<double>(p.grid.extent(a));
    auto &x = r.axis[a];
    x.resize(p.traj.size());
    for (std::size_t m = 0; m < p.traj.size(); ++m) {
      const KPoint &k = p.traj[m];
      x[m] = static_cast<float>(scale * (a == 0 ? k.kx : a == 1 ? k.ky : k.kz));
    }
  }
  return r;
}

// The float64 direct sums at kChecked random modes (type 1) and samples (type 2): at the
// trajectory's float k (the reference of both libraries) and at cuFINUFFT's float radians.
struct Reference {
  std::vector<std::int64_t> modes, samples;
  std::vector<cdouble> type1, type2;
  std::vector<cdouble> type1_peer, type2_peer;
};

Reference make_reference(const Geometry &p, const PeerPoints &x) {
  Reference r;
  r.modes = gpu_test::random_indices(p.grid.voxels(), kChecked, 21);
  r.samples = gpu_test::random_indices(static_cast<std::int64_t>(p.traj.size()), kChecked, 22);
  const std::span<const cfloat> c(p.strengths), f(p.image);
  r.type1 = gpu_test::adjoint_at<double>(p.traj, c, p.grid, p.grid, r.modes);
  r.type2 = gpu_test::forward_at<double>(p.traj, f, p.grid, r.samples);
  // The radians back in cycles/FOV, in double: the sums' phase 2 pi k x / n is then x_rad . mode.
  const auto peer_k = [&](std::size_t m) {
    std::array<double, 3> k{};
    for (int a = 0; a < p.grid.dims(); ++a)
      k[a] = static_cast<double>(x.axis[a][m]) * static_cast<double>(p.grid.extent(a)) / (2 * std::numbers::pi);
    return k;
  };
  r.type1_peer = gpu_test::adjoint_at_points<double>(p.traj.size(), peer_k, c, p.grid, p.grid, r.modes);
  r.type2_peer = gpu_test::forward_at_points<double>(peer_k, f, p.grid, r.samples);
  return r;
}

// The error of a type-`type` output against a reference pair (common, own points).
double checked_error(int type, const std::vector<cfloat> &out, const Reference &r, bool own_points) {
  const auto &ref = type == 1 ? (own_points ? r.type1_peer : r.type1) : (own_points ? r.type2_peer : r.type2);
  return gpu_test::sampled_rel_l2(std::span<const cfloat>(out), type == 1 ? r.modes : r.samples, ref);
}

// ---------------------------------------------------------------------------------------------
// Results.

struct Row {
  std::string geometry;
  int dims = 0;
  std::size_t m = 0;
  int type = 0;
  std::string library, method;
  double tol = 0;
  int width = 0; // 0: unknown
  double exec_ms = 0, plan_ms = 0, rel_err = 0, rel_err_own = 0, diff_vs_ours = 0;
};

const char *kCsvHeader =
    "geometry,dims,M,type,library,method,tol,width,exec_ms,plan_ms,rel_err,rel_err_own_points,diff_vs_ours";

std::string csv_line(const Row &r) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s,%d,%zu,%d,%s,%s,%.0e,%s,%.5f,%.4f,%.4e,%.4e,%.4e", r.geometry.c_str(), r.dims, r.m,
                r.type, r.library.c_str(), r.method.c_str(), r.tol,
                r.width > 0 ? std::to_string(r.width).c_str() : "", r.exec_ms, r.plan_ms, r.rel_err, r.rel_err_own,
                r.diff_vs_ours);
  return buf;
}

void print_row(const Row &r) {
  const std::string width = r.width > 0 ? std::to_string(r.width) : "-";
  std::printf("%-9s type %d %-9s %-18s tol %.0e  W %2s  exec %8.4f ms  plan %8.3f ms  err %.3e (own pts %.3e)"
              "  diff vs ours %.3e\n",
              r.geometry.c_str(), r.type, r.library.c_str(), r.method.c_str(), r.tol, width.c_str(), r.exec_ms,
              r.plan_ms, r.rel_err, r.rel_err_own, r.diff_vs_ours);
  std::fflush(stdout);
}

Row row_of(const Geometry &p, int type, const char *library, std::string method, double tol) {
  Row r;
  r.geometry = p.name;
  r.dims = p.grid.dims();
  r.m = p.traj.size();
  r.type = type;
  r.library = library;
  r.method = std::move(method);
  r.tol = tol;
  return r;
}

// What cuFINUFFT's outputs are compared with: our RGA adjoint and our forward at one tolerance.
struct OurOutputs {
  std::vector<cfloat> type1, type2;
};

// ---------------------------------------------------------------------------------------------
// Ours.

// Our plan from host points until ready, median of kPlanReps after a warm-up; `op` keeps the last.
double time_our_plan(const Geometry &p, double tol, std::optional<NufftOperator> &op) {
  std::vector<double> ms;
  for (int r = 0; r <= kPlanReps; ++r) {
    op.reset();
    Trajectory t = p.traj; // copied outside the clock: the constructor takes it by value, moved in
    const auto t0 = Clock::now();
    op.emplace(std::move(t), p.grid, gpu_test::cuda_nufft(tol, Gridding::Gather));
    cuda::detail::device_plan_of(*op).synchronize();
    if (r > 0) ms.push_back(ms_since(t0));
  }
  return median(ms);
}

struct OurAdjointMethod {
  const char *name;
  Gridding gridding;
  ScatterMethod scatter;
};
constexpr OurAdjointMethod kOurAdjointMethods[] = {
    {"RGA-gather", Gridding::Gather, ScatterMethod::Auto},
    {"SM-shared-scatter", Gridding::Scatter, ScatterMethod::Shared},
    {"GA-global-scatter", Gridding::Scatter, ScatterMethod::Global},
    {"SMF-fixed-point-scatter", Gridding::ScatterFixed, ScatterMethod::Auto}};
constexpr std::size_t kOurAdjoints = std::size(kOurAdjointMethods);
static_assert(kOurAdjoints == 4); // RGA first, the atomic ones (SM, GA) next: note_gather_ratio, run_ours

// Issue 15's determinism target: a deterministic method (RGA; SM in fixed point) within 1.5x of
// the fastest atomic one (ms: kOurAdjointMethods' times).
void note_gather_ratio(const Geometry &p, double tol, const double (&ms)[kOurAdjoints]) {
  const double atomic = std::min(ms[1], ms[2]);
  std::printf("# %s tol %.0e: RGA / fastest atomic = %.2f, SM fixed point / fastest atomic = %.2f (target <= 1.5 in "
              "3D)\n",
              p.name.c_str(), tol, ms[0] / atomic, ms[3] / atomic);
}

// Every adjoint method and the forward on one plan; fills `kept` with the RGA / forward outputs.
void run_ours(const Geometry &p, const Reference &ref, double tol, std::vector<Row> &rows, OurOutputs &kept) {
  std::optional<NufftOperator> op;
  const double plan_ms = time_our_plan(p, tol, op);
  auto &plan = cuda::detail::device_plan_of(*op);
  const auto finish = [&](Row r, double exec_ms, const std::vector<cfloat> &out, const std::vector<cfloat> &ours) {
    r.width = op->kernel().width;
    r.exec_ms = exec_ms;
    r.plan_ms = plan_ms;
    r.rel_err = r.rel_err_own = checked_error(r.type, out, ref, false);
    r.diff_vs_ours = gpu_test::rel_l2(out, ours);
    print_row(r);
    rows.push_back(std::move(r));
  };
  plan.upload_samples(p.strengths.data());
  std::vector<cfloat> image(static_cast<std::size_t>(p.grid.voxels()));
  double adjoint_ms[kOurAdjoints] = {};
  for (std::size_t i = 0; i < kOurAdjoints; ++i) {
    const OurAdjointMethod &m = kOurAdjointMethods[i];
    plan.set_scatter_method(m.scatter);
    adjoint_ms[i] = plan.time_adjoint_ms(m.gridding, kExecReps);
    plan.download_image(image.data());
    if (m.gridding == Gridding::Gather) kept.type1 = image; // the first: what the others are compared with
    finish(row_of(p, 1, "ours", m.name, tol), adjoint_ms[i], image, kept.type1);
  }
  note_gather_ratio(p, tol, adjoint_ms);
  plan.upload_image(p.image.data());
  const double ms = plan.time_forward_ms(kExecReps);
  kept.type2.resize(p.traj.size());
  plan.download_samples(kept.type2.data());
  finish(row_of(p, 2, "ours", "forward", tol), ms, kept.type2, kept.type2);
}

// ---------------------------------------------------------------------------------------------
// cuFINUFFT.

// cuFINUFFT's device arrays for one geometry: its points, each type's input and output.
struct PeerDevice {
  explicit PeerDevice(const Geometry &p)
      : x(p.traj.size()), y(p.traj.size()), z(p.traj.size()), c_in(p.traj.size()), c_out(p.traj.size()),
        f_in(static_cast<std::size_t>(p.grid.voxels())), f_out(static_cast<std::size_t>(p.grid.voxels())) {
    c_in.upload(p.strengths);
    f_in.upload(p.image);
  }
  DeviceArray<float> x, y, z;
  DeviceArray<cuFloatComplex> c_in, c_out, f_in, f_out;
};

struct PeerPlan {
  cufinufftf_plan plan = nullptr;
  PeerPlan() = default;
  PeerPlan(const PeerPlan &) = delete;
  PeerPlan &operator=(const PeerPlan &) = delete;
  ~PeerPlan() { reset(); }
  void reset() {
    if (plan) cufinufftf_destroy(plan);
    plan = nullptr;
  }
};

// Upload of the radians + makeplan + setpts, synchronised; cuFINUFFT's error code (0: ready).
// `out` must be empty (its destroy, a cudaFree, is not part of a plan's time).
int make_peer_plan(const Geometry &p, const PeerPoints &x, PeerDevice &d, int type, int method, double tol,
                   PeerPlan &out) {
  const int dims = p.grid.dims();
  d.x.upload(x.axis[0]);
  d.y.upload(x.axis[1]);
  if (dims == 3) d.z.upload(x.axis[2]);
  cufinufft_opts opts;
  cufinufft_default_opts(&opts);
  opts.gpu_method = method;
  opts.modeord = 0; // modes -N/2 .. N/2-1: our voxel order
  const std::int64_t modes[3] = {p.grid.nx(), p.grid.ny(), p.grid.nz()};
  // iflag: type 1 is our adjoint (+i), type 2 our forward (-i).
  if (int ier = cufinufftf_makeplan(type, dims, modes, type == 1 ? +1 : -1, 1, static_cast<float>(tol), &out.plan,
                                    &opts)) {
    out.plan = nullptr; // a refused plan is cuFINUFFT's to free
    return ier;
  }
  const int ier = cufinufftf_setpts(out.plan, static_cast<std::int64_t>(p.traj.size()), d.x.get(), d.y.get(),
                                    dims == 3 ? d.z.get() : nullptr, 0, nullptr, nullptr, nullptr);
  cuda_check(cudaDeviceSynchronize(), "cuFINUFFT plan");
  return ier;
}

// The plan time (median of kPlanReps after a warm-up; `plan` keeps the last) or cuFINUFFT's code.
std::pair<double, int> time_peer_plan(const Geometry &p, const PeerPoints &x, PeerDevice &d, int type, int method,
                                      double tol, PeerPlan &plan) {
  std::vector<double> ms;
  for (int r = 0; r <= kPlanReps; ++r) {
    plan.reset();
    cuda_check(cudaDeviceSynchronize(), "before plan");
    const auto t0 = Clock::now();
    if (int ier = make_peer_plan(p, x, d, type, method, tol, plan)) return {0, ier};
    if (r > 0) ms.push_back(ms_since(t0));
  }
  return {median(ms), 0};
}

// cuFINUFFT's execute on the default stream (its opts.gpu_stream), event-timed: median of
// kExecReps after kPeerWarmups. Returns 0 ms and its code on failure.
std::pair<double, int> time_peer_execute(PeerPlan &plan, PeerDevice &d, int type) {
  cudaEvent_t e0, e1;
  cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
  cuda_check(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<double> ms;
  int ier = 0;
  for (int r = 0; r < kPeerWarmups + kExecReps && ier == 0; ++r) {
    cuda_check(cudaEventRecord(e0, nullptr), "cudaEventRecord");
    ier = type == 1 ? cufinufftf_execute(plan.plan, d.c_in.get(), d.f_out.get())
                    : cufinufftf_execute(plan.plan, d.c_out.get(), d.f_in.get());
    cuda_check(cudaEventRecord(e1, nullptr), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(e1), "cuFINUFFT execute");
    float t = 0;
    cuda_check(cudaEventElapsedTime(&t, e0, e1), "cudaEventElapsedTime");
    if (r >= kPeerWarmups) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return {ier ? 0 : median(ms), ier};
}

// One cuFINUFFT case; false (with a note) when cuFINUFFT refuses it.
bool run_peer_case(const Geometry &p, const PeerPoints &x, const Reference &ref, PeerDevice &d, int type, int method,
                   double tol, const OurOutputs &ours, std::vector<Row> &rows) {
  PeerPlan plan;
  const auto [plan_ms, plan_ier] = time_peer_plan(p, x, d, type, method, tol, plan);
  const auto [exec_ms, exec_ier] = plan_ier ? std::pair<double, int>{0, 0} : time_peer_execute(plan, d, type);
  if (plan_ier || exec_ier) {
    std::printf("# %s type %d cufinufft method %d tol %.0e: not run (%s returned %d)\n", p.name.c_str(), type, method,
                tol, plan_ier ? "makeplan/setpts" : "execute", plan_ier ? plan_ier : exec_ier);
    cudaGetLastError(); // a refused method leaves no sticky error; clear the last one
    return false;
  }
  const std::vector<cfloat> out = type == 1 ? d.f_out.download<cfloat>() : d.c_out.download<cfloat>();
  Row r = row_of(p, type, "cufinufft", "method" + std::to_string(method), tol);
  r.exec_ms = exec_ms;
  r.plan_ms = plan_ms;
  r.rel_err = checked_error(type, out, ref, false);
  r.rel_err_own = checked_error(type, out, ref, true);
  r.diff_vs_ours = gpu_test::rel_l2(out, type == 1 ? ours.type1 : ours.type2);
  print_row(r);
  rows.push_back(std::move(r));
  return true;
}

// ---------------------------------------------------------------------------------------------
// The sweep.

struct Options {
  std::string out = "nufft_front.csv";
  std::vector<std::string> geometries{std::begin(kGeometries), std::end(kGeometries)};
  std::vector<double> tolerances = {3e-2, 1e-2, 1e-3, 1e-4, 1e-5};
  std::vector<int> peer_methods{std::begin(kPeerMethods), std::end(kPeerMethods)};
};

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) v.push_back(item);
  return v;
}

// --peer's value: a list of cuFINUFFT methods among kPeerMethods, or `none`.
std::vector<int> peer_methods_of(const std::string &v) {
  if (v == "none") return {};
  std::vector<int> methods;
  for (const std::string &m : split(v)) {
    const auto known = std::find_if(std::begin(kPeerMethods), std::end(kPeerMethods),
                                    [&](int method) { return m == std::to_string(method); });
    if (known == std::end(kPeerMethods))
      throw std::invalid_argument("--peer: unknown cuFINUFFT method " + m + " (1, 2, 3 or none)");
    methods.push_back(*known);
  }
  if (methods.empty()) throw std::invalid_argument("--peer: no method given (1, 2, 3 or none)");
  return methods;
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("usage: bench_nufft_front_gpu [--out FILE] [--geometries a,b] "
                                                   "[--tolerances 1e-2,...] [--peer 1,2,3|none] (" + a +
                                                   " needs a value)");
    const std::string v = argv[++i];
    if (a == "--out") o.out = v;
    else if (a == "--geometries") {
      o.geometries = split(v);
      for (const std::string &g : o.geometries) check_geometry_name(g);
    }
    else if (a == "--tolerances") {
      o.tolerances.clear();
      for (const std::string &t : split(v)) o.tolerances.push_back(std::stod(t));
    } else if (a == "--peer")
      o.peer_methods = peer_methods_of(v);
    else throw std::invalid_argument("unknown option " + a);
  }
  return o;
}

// Whether a cuFINUFFT output is within kAgreement x tol of ours (the convention check).
bool agrees(const Row &r) { return r.library == "ours" || r.diff_vs_ours <= kAgreement * r.tol; }

// Every tolerance and type of one geometry, ours then cuFINUFFT's at each tolerance.
void run_geometry(const std::string &name, const Options &o, std::vector<Row> &rows) {
  const auto t0 = Clock::now();
  const Geometry p = make_geometry(name);
  const PeerPoints x = peer_points(p);
  const Reference ref = make_reference(p, x);
  std::printf("# %s: %d-D, M = %zu, inputs and float64 references in %.1f s\n", name.c_str(), p.grid.dims(),
              p.traj.size(), ms_since(t0) / 1e3);
  std::optional<PeerDevice> d;
  if (!o.peer_methods.empty()) d.emplace(p);
  for (double tol : o.tolerances) {
    OurOutputs ours;
    run_ours(p, ref, tol, rows, ours);
    for (int type : {1, 2})
      for (int method : o.peer_methods) run_peer_case(p, x, ref, *d, type, method, tol, ours, rows);
  }
}

void write_csv(const std::string &path, const std::vector<Row> &rows) {
  std::ofstream f(path);
  f << kCsvHeader << '\n';
  for (const Row &r : rows) f << csv_line(r) << '\n';
  if (!f) throw std::runtime_error("cannot write " + path);
}

// The convention check's verdict: every cuFINUFFT row that disagrees, and how many agree.
int report_agreement(const std::vector<Row> &rows) {
  int peer = 0, bad = 0;
  for (const Row &r : rows) {
    if (r.library == "ours") continue;
    ++peer;
    if (!agrees(r)) {
      ++bad;
      std::printf("DISAGREE: %s type %d %s tol %.0e: ||cufinufft - ours|| / ||ours|| = %.3e > %.0f tol\n",
                  r.geometry.c_str(), r.type, r.method.c_str(), r.tol, r.diff_vs_ours, kAgreement);
    }
  }
  std::printf("# agreement (same sums, same layout): %d of %d cuFINUFFT outputs within %.0f x tol of ours\n",
              peer - bad, peer, kAgreement);
  return bad;
}

void print_header() {
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::printf("# bench_nufft_front_gpu: %s (sm_%d%d), CUDA runtime %d, driver %d; exec median of %d, plan median "
              "of %d, rel_err over %zu outputs vs float64 direct sums\n",
              prop.name, prop.major, prop.minor, runtime, driver, kExecReps, kPlanReps, kChecked);
}

} // namespace

int main(int argc, char **argv) {
  try {
    const Options o = parse(argc, argv);
    int devices = 0;
    if (!mri::cuda_available() || cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      std::fprintf(stderr, "bench_nufft_front_gpu: no usable CUDA device\n");
      return 2;
    }
    print_header();
    std::vector<Row> rows;
    for (const std::string &g : o.geometries) {
      run_geometry(g, o, rows);
      write_csv(o.out, rows); // after each geometry: a later failure keeps what was measured
    }
    std::printf("# %zu rows written to %s\n", rows.size(), o.out.c_str());
    return report_agreement(rows) ? 3 : 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench_nufft_front_gpu: %s\n", e.what());
    return 1;
  }
}
