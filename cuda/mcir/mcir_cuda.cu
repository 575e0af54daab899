// reconstruct_motion_corrected's solve on the device (mcir_cuda.hpp): the normal equations
//   (sum_s W_s^H N_s W_s + lambda R^H R) x = sum_s W_s^H b_s
// with W_s the device warp (DeviceImageWarp, the deterministic gather adjoint), N_s state s's SENSE
// normal on its own device Toeplitz operator (the coil-batched SenseToeplitz where
// sense_coil_batch applies, else the maps around the one-coil operator, as GpuSteps::with_normal
// chooses), R^H R once outside the state sum, and the one ConjugateGradient on DeviceImage, or with
// sparse terms the one ProximalSolver with the device's sparse operators. Every kernel runs on the
// calling thread's reconstruction stream; the solvers' reductions synchronise.
#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "exact/fhd_backend.hpp"
#include "host_clock.hpp"
#include "mcir/image_warp_cuda.hpp"
#include "mcir/mcir_cuda.hpp"
#include "mri/conjugate_gradient.hpp"
#include "mri/proximal_solvers.hpp"
#include "mri_backend/recon_driver.hpp"
#include "recon/device_image.hpp"
#include "recon/device_products.hpp"
#include "sense/sense_cuda.hpp"
#include "sense/sense_toeplitz.hpp"
#include "sparse/sparse_ops_cuda.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

namespace mri::cuda::detail {
namespace {

void synchronize(StreamHandle stream) { MRI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }

// One state's device operators. Held by pointer: the batched SENSE operator keeps the address of
// the Toeplitz operator.
struct DeviceState {
  DeviceImageWarp warp;
  QOperator toeplitz;
  std::optional<SenseToeplitz> batched;
};

// Q_s's device Toeplitz operator: from the host's Q (the NUFFT's), or by the device's exact sum
// with the policy GpuSteps uses (float32: as asked, Auto the tensor-core Dirichlet spectrum in 3D;
// float64: the resolved policy, SeparableGemm's sums in double).
QOperator state_toeplitz(const mri::detail::DeviceMcirState &s, const Grid &grid, const ReconOptions &options,
                         StreamHandle stream) {
  if (s.q) return QOperator(grid, DeviceImage(*s.q, stream), ToeplitzFft::Auto, stream);
  const KernelPolicy policy = options.precision == Precision::Float32
                                  ? options.gpu.policy
                                  : resolve_policy(options.gpu.policy, options.precision);
  return QOperator(s.data->trajectory(), s.data->weights(), grid, policy, ToeplitzFft::Auto, stream);
}

// State s's Toeplitz operator: with on_device, made with b_s (into `rhs`) on the device as
// mri::reconstruct's device path makes them (their seconds in the report's F^H D and Q phases);
// else from the host's Q or the exact sum (its seconds in the Q phase).
QOperator state_products(const mri::detail::DeviceMcirState &s, const Grid &grid, const ReconOptions &options,
                         const CoilSensitivities *maps, ReconReport &report, std::optional<DeviceImage> &rhs,
                         StreamHandle stream) {
  if (s.on_device) {
    DeviceProducts products = device_products_cuda(*s.data, grid, options, maps, report);
    rhs.emplace(std::move(products.rhs));
    return std::move(products.toeplitz);
  }
  const auto t = Clock::now();
  QOperator q = state_toeplitz(s, grid, options, stream);
  synchronize(stream);
  report.q_seconds += seconds_since(t);
  return q;
}

// sum_s W_s^H N_s W_s x + lambda R^H R x: ConjugateGradient's operator.
class DeviceMcirNormal {
public:
  DeviceMcirNormal(const std::vector<std::unique_ptr<DeviceState>> &states, const DeviceCoils *coils,
                   const DeviceCoils *regularizer, const Grid &grid, StreamHandle stream)
      : states_(&states), coils_(coils), regularizer_(regularizer), warped_(grid, stream), normal_(grid, stream),
        term_(grid, stream), coil_in_(grid, stream), coil_out_(grid, stream) {}
  DeviceMcirNormal(const DeviceMcirNormal &other)
      : DeviceMcirNormal(*other.states_, other.coils_, other.regularizer_, other.warped_.grid(),
                         other.warped_.stream()) {}

  void operator()(const DeviceImage &x, DeviceImage &out) const {
    for (std::size_t s = 0; s < states_->size(); ++s) {
      const DeviceState &state = *(*states_)[s];
      state.warp.forward(x, warped_);
      sense_normal(state, warped_, normal_);
      if (s == 0) {
        state.warp.adjoint(normal_, out);
      } else {
        state.warp.adjoint(normal_, term_);
        VectorOps<DeviceImage>::axpy(1.0, term_, out);
      }
    }
    if (regularizer_) regularizer_->regularize(x, out);
  }

private:
  // N_s in: sum_c conj(S_c) Q_s (S_c in), or Q_s in without maps.
  void sense_normal(const DeviceState &state, const DeviceImage &in, DeviceImage &out) const {
    if (state.batched) return state.batched->apply(in, out);
    if (!coils_) return state.toeplitz.apply(in, out);
    for (int c = 0; c < coils_->count(); ++c) {
      coils_->expand(c, in, coil_in_);
      state.toeplitz.apply(coil_in_, coil_out_);
      coils_->combine(c, coil_out_, out, c == 0);
    }
  }

  const std::vector<std::unique_ptr<DeviceState>> *states_;
  const DeviceCoils *coils_;
  const DeviceCoils *regularizer_;
  mutable DeviceImage warped_, normal_, term_, coil_in_, coil_out_;
};

// Where R^H R comes from: DeviceCoils::regularize, on the maps when there are maps, else on one
// coil of ones (its maps are never read by regularize). Null without a regulariser.
std::unique_ptr<DeviceCoils> device_regularizer(const CoilSensitivities *maps, const Grid &grid,
                                                const ReconOptions &options, StreamHandle stream) {
  if (options.solver.regularizer == Regularizer::None || options.solver.lambda == 0) return nullptr;
  const CoilSensitivities ones(grid, 1, std::vector<cfloat>(static_cast<std::size_t>(grid.voxels()), cfloat(1, 0)));
  return std::make_unique<DeviceCoils>(maps ? *maps : ones, options.solver.regularizer, options.solver.lambda,
                                       stream);
}

// CG on the normal equations; the image back to the host (its seconds in the solver phase).
Image solve_cg(const DeviceMcirNormal &normal, const DeviceImage &rhs, const ReconOptions &options,
               ReconReport &report) {
  ConjugateGradient<DeviceMcirNormal, DeviceImage> cg(normal);
  cg.set_max_iterations(options.solver.iterations).set_tolerance(options.solver.tolerance);
  if (options.on_iteration)
    cg.set_callback(
        [&](int k, const DeviceImage &x, double residual) { options.on_iteration(k, x.to_host(), residual); });
  const DeviceImage x = cg.solve(rhs);
  report.iterations = cg.iterations();
  report.status = cg.info();
  report.residuals = cg.residual_history();
  report.solver = "cg";
  return x.to_host();
}

// With sparse terms: the host's solve_sparse (lib/mcir/mcir.cpp) on the device's vectors: the data
// scaled by solver.scaling (bart_data_scale of b = sum_s W_s^H b_s), the objective's constant
// 0.5 s^2 ||W^(1/2) y||^2 over every state's samples, the one proximal solver with the device's
// sparse operators, the image scaled back.
Image solve_sparse(const DeviceMcirNormal &normal, const DeviceImage &rhs,
                   const std::vector<mri::detail::DeviceMcirState> &states, const Grid &grid,
                   const ReconOptions &options, ReconReport &report) {
  using Ops = VectorOps<DeviceImage>;
  const double scale =
      options.solver.scaling == DataScaling::Bart ? bart_data_scale(rhs.to_host().values()) : 1.0;
  report.data_scale = scale;
  DeviceImage b = Ops::like(rhs), zero = Ops::like(rhs);
  Ops::copy(rhs, b);
  Ops::zero(zero);
  Ops::xpay(zero, scale, b); // b = scale rhs, as 0 + scale rhs (the solver's rule)
  double energy = 0;
  for (const mri::detail::DeviceMcirState &s : states) energy += mri::detail::weighted_data_energy(*s.data);
  ProximalSolver<DeviceMcirNormal, DeviceImage> solver(normal, grid, options.solver.terms, options.solver.proximal);
  solver.set_max_iterations(options.solver.iterations).set_tolerance(options.solver.tolerance);
  const auto unscaled = [&](const DeviceImage &x) {
    Image image = x.to_host();
    for (cfloat &v : image.values()) v /= static_cast<float>(scale);
    return image;
  };
  if (options.on_iteration)
    solver.set_callback([&](int k, const DeviceImage &x, double change) { options.on_iteration(k, unscaled(x), change); });
  const DeviceImage x = solver.solve(b, scale * scale * energy);
  mri::detail::record_proximal(report, solver);
  return unscaled(x);
}

} // namespace

Image solve_motion_corrected_cuda(const std::vector<mri::detail::DeviceMcirState> &states, const Grid &grid,
                                  const ReconOptions &options, const CoilSensitivities *maps, ReconReport &report,
                                  MotionCorrectionReport &motion) {
  const StreamHandle stream = default_stream();
  report.backend = Backend::Cuda;

  // The maps (without regulariser: it is added once, outside the state sum) and the regulariser.
  auto t = Clock::now();
  std::optional<DeviceCoils> coils;
  if (maps) coils.emplace(*maps, Regularizer::None, 0.0, stream);
  const std::unique_ptr<DeviceCoils> regularizer = device_regularizer(maps, grid, options, stream);
  synchronize(stream);
  report.transfer_seconds += seconds_since(t);

  // Per state: the warp (its adjoint's lists), the Toeplitz operator (with b_s where the state asks
  // for both on the device), the batched SENSE normal.
  std::vector<std::unique_ptr<DeviceState>> device_states;
  std::vector<std::optional<DeviceImage>> device_rhs(states.size());
  const int batch = coils ? sense_coil_batch(grid, coils->count()) : 0;
  for (std::size_t s = 0; s < states.size(); ++s) {
    auto state = std::make_unique<DeviceState>(
        DeviceState{DeviceImageWarp(*states[s].warp), state_products(states[s], grid, options, maps, report,
                                                                     device_rhs[s], stream),
                    std::nullopt});
    if (batch > 0) state->batched.emplace(*coils, state->toeplitz, batch);
    device_states.push_back(std::move(state));
  }
  const QOperator &first = device_states.front()->toeplitz;
  report.q_method = first.q_path();
  report.toeplitz_fft = batch > 0 ? "unfused, " + std::to_string(batch) + " coils per batched transform"
                                  : first.fft_note();

  // b = sum_s W_s^H b_s.
  t = Clock::now();
  DeviceImage rhs(grid, stream), warped(grid, stream);
  for (std::size_t s = 0; s < states.size(); ++s) {
    const DeviceImage b = device_rhs[s] ? std::move(*device_rhs[s]) : DeviceImage(states[s].rhs, stream);
    device_states[s]->warp.adjoint(b, s == 0 ? rhs : warped);
    if (s > 0) VectorOps<DeviceImage>::axpy(1.0, warped, rhs);
    synchronize(stream); // b is freed at the end of the iteration
  }
  motion.rhs_seconds += seconds_since(t);

  t = Clock::now();
  const DeviceMcirNormal normal(device_states, coils ? &*coils : nullptr, regularizer.get(), grid, stream);
  const bool sparse = !options.solver.terms.empty();
  Image image = sparse ? solve_sparse(normal, rhs, states, grid, options, report) : solve_cg(normal, rhs, options, report);
  report.cg_seconds += seconds_since(t);
  motion.cg_warp_seconds = 0;
  report.device_note = "mcir: warps (gather adjoint), " + std::to_string(states.size()) + " Toeplitz normals" +
                       (batch > 0 ? " (coil-batched)" : "") + " and " + report.solver + " on the device";
  return image;
}

} // namespace mri::cuda::detail
