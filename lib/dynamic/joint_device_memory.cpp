// The joint solves' device memory (mri/detail/joint_device_memory.hpp): the counts of what
// cuda/recon/recon_cuda.cu (per frame) with mri_backend/frames_driver.hpp (the stack), and
// cuda/mcir/mcir_cuda.cu, allocate. The per-buffer rules (the Toeplitz operator, the NUFFT plan,
// the coil-batched SENSE grids) are mri_backend/device_operator_bytes.hpp's, which the single
// reconstruction's estimate and the operators themselves use.
#include "mri/detail/joint_device_memory.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "mri/error.hpp"
#include "mri/proximal_solvers.hpp"
#include "mri/sparse.hpp"
#include "mri/trajectory.hpp"
#include "mri_backend/device_operator_bytes.hpp"
#include "mri_backend/low_rank_device_bytes.hpp"
#include "mri_backend/tuning.hpp"

namespace mri::detail {
namespace {

constexpr std::size_t kComplex = kDeviceComplexBytes;

std::size_t voxels(const Grid &g) { return static_cast<std::size_t>(g.voxels()); }

// The largest one-frame phase: F^H D (the NUFFT plan, a coil's samples uploaded and sorted twice,
// with coils a block of coils' oversampled grids and images; the exact sum: every coil's samples
// and weights) or Q (the NUFFT's plan on the doubled grid and Q's upload; the exact sum: samples,
// weights and the doubled grid's spectrum).
std::size_t transient_bytes(const JointDeviceSizes &s) {
  const std::size_t n = voxels(s.grid), l = voxels(s.grid.doubled());
  const auto coils = static_cast<std::size_t>(std::max(1, s.coils));
  const std::size_t block = std::min<std::size_t>(coils, static_cast<std::size_t>(tuning::Gpu::coil_block));
  std::size_t most = 0;
  for (const std::size_t m : s.samples) {
    const std::size_t fhd =
        s.nufft ? nufft_plan_bytes(s.grid, m, false) + block * (2 * m * kComplex + (std::size_t{1} << s.grid.dims()) * n * kComplex)
                : coils * m * kComplex + m * 4;
    const std::size_t q = s.nufft ? nufft_plan_bytes(s.grid.doubled(), m, false) + m * kComplex + l * kComplex
                                  : m * (sizeof(KPoint) + 4) + l * kComplex;
    most = std::max({most, fhd, q});
  }
  return most;
}

// Images of one transform's range (the term's T x): a wavelet's, l1's and locally low rank's one,
// TV's one per axis differenced (the frames' axis: one).
std::size_t range_images(const SparseTerm &t, const Grid &grid) {
  if (t.penalty != SparsePenalty::TotalVariation || is_temporal(t)) return 1;
  return static_cast<std::size_t>(axis_count(resolve_axes(grid, t.axes)));
}

// The solver's vectors, in images of the solved vector (mri/conjugate_gradient.hpp,
// mri/proximal_solvers.hpp): CG x, r, p, Ap; FISTA x, v, z, d and their normals, the scale's zero
// and the power iteration's two, and its term's range; ADMM x and its update's rhs, image,
// previous, normal, the inner CG's r, p, Ap, the zero and the power iteration's two, and per term
// z, u, z_previous and the range; primal-dual x, its normal, gradient, previous, image, the zero,
// the power iteration's two, and per term the dual p and the range.
std::size_t solver_images(const SolverOptions &o, const Grid &grid) {
  if (o.terms.empty()) return 4;
  std::size_t ranges = 0;
  for (const SparseTerm &t : o.terms) ranges += range_images(t, grid);
  switch (resolve_proximal_algorithm(o.proximal.algorithm, o.terms)) {
  case ProximalAlgorithm::Fista: return 11 + ranges;
  case ProximalAlgorithm::Admm: return 11 + 4 * ranges;
  default: return 8 + 2 * ranges;
  }
}

std::string gib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / double(1 << 30));
  return text;
}

std::string extents(const Grid &g) {
  return std::to_string(g.nx()) + "x" + std::to_string(g.ny()) + "x" + std::to_string(g.nz());
}

} // namespace

std::string JointDeviceBytes::describe() const {
  return "maps " + gib(maps) + ", operators " + gib(operators) + ", warps " + gib(warps) + ", images " + gib(images) +
         ", solver " + gib(solver) + ", largest one-frame phase " + gib(transient);
}

JointDeviceBytes frames_device_bytes(const JointDeviceSizes &s, const SolverOptions &solver) {
  const std::size_t n = voxels(s.grid), frames = s.samples.size();
  const int batch = sense_coil_batch(s.grid, s.coils);
  JointDeviceBytes b;
  b.maps = s.coils > 0 ? frames * static_cast<std::size_t>(s.coils) * n * kComplex : 0;
  b.operators = frames * (toeplitz_operator_bytes(s.grid) + (batch > 0 ? sense_batch_bytes(s.grid, batch) : 0));
  b.images = frames * n * kComplex * (s.coils > 0 ? 3 : 1); // rhs; with maps the SENSE normal's two scratch images
  b.solver = frames * n * kComplex * solver_images(solver, s.grid);
  for (const SparseTerm &t : solver.terms) // locally low rank's plan: one for the stack
    if (t.penalty == SparsePenalty::LocallyLowRank)
      b.solver += low_rank_device_bytes(s.grid, resolve_axes(s.grid, t.axes), t.block, static_cast<int>(frames));
  b.transient = transient_bytes(s);
  return b;
}

JointDeviceBytes mcir_device_bytes(const JointDeviceSizes &s, int moving, bool jacobian_weighting) {
  const std::size_t n = voxels(s.grid), states = s.samples.size();
  const int batch = sense_coil_batch(s.grid, s.coils);
  JointDeviceBytes b;
  b.maps = static_cast<std::size_t>(s.coils) * n * kComplex +
           (s.regularizer ? static_cast<std::size_t>(std::max(1, s.coils)) * n * kComplex : 0);
  b.operators = states * (toeplitz_operator_bytes(s.grid) + (batch > 0 ? sense_batch_bytes(s.grid, batch) : 0));
  const std::size_t corners = std::size_t{1} << s.grid.dims();
  const std::size_t per_warp = 12 * n + (jacobian_weighting ? 4 * n : 0) + 4 * (n + 1) + 4 * corners * n;
  b.warps = static_cast<std::size_t>(std::max(0, moving)) * per_warp;
  b.images = (states + 2 + 2 * 5) * n * kComplex; // every b_s (kept for the chain's rounds), b and a warped
                                                  // b_s; the normal's scratch, twice
  b.solver = 4 * n * kComplex;           // CG's x, r, p, Ap
  b.transient = transient_bytes(s);
  return b;
}

std::size_t joint_available_bytes(std::size_t device_free, std::size_t memory_limit) {
  if (device_free > 0 && memory_limit > 0) return std::min(device_free, memory_limit);
  return device_free > 0 ? device_free : memory_limit;
}

void check_joint_device_bytes(const JointDeviceBytes &need, const JointDeviceSizes &s, std::size_t available,
                              std::size_t device_free, std::size_t memory_limit, const std::string &who) {
  if (available == 0 || need.total() <= available) return;
  std::size_t samples = 0;
  for (const std::size_t m : s.samples) samples += m;
  std::string source;
  if (device_free > 0) source = "free " + gib(device_free);
  if (memory_limit > 0) source += (source.empty() ? "" : ", ") + std::string("gpu.memory_limit ") + gib(memory_limit);
  throw Unsupported(who + " on the GPU: grid " + extents(s.grid) + ", " + std::to_string(s.samples.size()) +
                    " frames of " + std::to_string(samples) + " samples in all" +
                    (s.coils > 0 ? ", " + std::to_string(s.coils) + " coils" : std::string()) +
                    ", all on the device at once, needs about " + gib(need.total()) + " (" + std::to_string(need.total()) +
                    " bytes: " + need.describe() + "); available: " + gib(available) + " (" +
                    std::to_string(available) + " bytes; " + source + ")");
}

void check_frames_device_memory(const std::vector<KSpaceData> &frames, int data_coils, const Grid &grid,
                                const ReconOptions &o) {
  JointDeviceSizes sizes;
  sizes.grid = grid;
  for (const KSpaceData &d : frames) sizes.samples.push_back(d.samples_per_coil());
  const bool maps = o.coils.sensitivities || data_coils > 1;
  sizes.coils = maps ? (o.coils.virtual_coils > 0 ? o.coils.virtual_coils : data_coils) : 0;
  sizes.nufft = o.method == Method::Nufft;
  sizes.regularizer = o.solver.regularizer != Regularizer::None && o.solver.lambda > 0;
  const std::size_t free = require_cuda("reconstruct_frames").device_free_bytes();
  check_joint_device_bytes(frames_device_bytes(sizes, o.solver), sizes,
                           joint_available_bytes(free, o.gpu.memory_limit), free, o.gpu.memory_limit,
                           "reconstruct_frames");
}

} // namespace mri::detail
