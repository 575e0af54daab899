// reconstruct_motion_corrected's states on the device (mcir_cuda.hpp, DeviceMcir): each state's
// b_s and Toeplitz operator made once by device_products_cuda, kept for every solve of
//   (sum_s W_s^H N_s W_s + lambda R^H R) x = sum_s W_s^H b_s
// with W_s the device warp (DeviceImageWarp, the deterministic gather adjoint), N_s state s's SENSE
// normal on its own Toeplitz operator (the coil-batched SenseToeplitz where sense_coil_batch
// applies, else the maps around the one-coil operator, as GpuSteps::with_normal chooses), R^H R
// once outside the state sum, and the one ConjugateGradient on DeviceImage, or with sparse terms
// the one ProximalSolver with the device's sparse operators; and for the chain's rounds the
// refinement of a warped image on one state's normal equations and MCIR's data fit. Every kernel
// runs on the calling thread's reconstruction stream; the solvers' reductions synchronise.
#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "host_clock.hpp"
#include "mcir/image_warp_cuda.hpp"
#include "mcir/mcir_cuda.hpp"
#include "mri/conjugate_gradient.hpp"
#include "mri/error.hpp"
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

using Ops = VectorOps<DeviceImage>;

void synchronize(StreamHandle stream) { MRI_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }

// One state's device products. Held by pointer: the batched SENSE operator keeps the address of
// the Toeplitz operator.
struct DeviceState {
  DeviceImage rhs; // b_s
  QOperator toeplitz;
  std::optional<SenseToeplitz> batched;
};

// out = N_s in: sum_c conj(S_c) Q_s (S_c in) (coil_in, coil_out: scratch), or Q_s in without maps.
void state_normal(const DeviceState &state, const DeviceCoils *coils, const DeviceImage &in, DeviceImage &out,
                  DeviceImage &coil_in, DeviceImage &coil_out) {
  if (state.batched) return state.batched->apply(in, out);
  if (!coils) return state.toeplitz.apply(in, out);
  for (int c = 0; c < coils->count(); ++c) {
    coils->expand(c, in, coil_in);
    state.toeplitz.apply(coil_in, coil_out);
    coils->combine(c, coil_out, out, c == 0);
  }
}

// N_s as an operator with its own scratch: the refinement's CG operator.
class StateNormal {
public:
  StateNormal(const DeviceState &state, const DeviceCoils *coils, const Grid &grid, StreamHandle stream)
      : state_(&state), coils_(coils), coil_in_(grid, stream), coil_out_(grid, stream) {}
  StateNormal(const StateNormal &other)
      : StateNormal(*other.state_, other.coils_, other.coil_in_.grid(), other.coil_in_.stream()) {}

  void operator()(const DeviceImage &in, DeviceImage &out) const {
    state_normal(*state_, coils_, in, out, coil_in_, coil_out_);
  }

private:
  const DeviceState *state_;
  const DeviceCoils *coils_;
  mutable DeviceImage coil_in_, coil_out_;
};

// sum_s W_s^H N_s W_s x + lambda R^H R x: the solvers' operator.
class DeviceMcirNormal {
public:
  DeviceMcirNormal(const std::vector<std::unique_ptr<DeviceState>> &states, const std::vector<DeviceImageWarp> &warps,
                   const DeviceCoils *coils, const DeviceCoils *regularizer, const Grid &grid, StreamHandle stream)
      : states_(&states), warps_(&warps), coils_(coils), regularizer_(regularizer), warped_(grid, stream),
        normal_(grid, stream), term_(grid, stream), coil_in_(grid, stream), coil_out_(grid, stream) {}
  DeviceMcirNormal(const DeviceMcirNormal &other)
      : DeviceMcirNormal(*other.states_, *other.warps_, other.coils_, other.regularizer_, other.warped_.grid(),
                         other.warped_.stream()) {}

  void operator()(const DeviceImage &x, DeviceImage &out) const {
    for (std::size_t s = 0; s < states_->size(); ++s) {
      const DeviceImageWarp &warp = (*warps_)[s];
      warp.forward(x, warped_);
      state_normal(*(*states_)[s], coils_, warped_, normal_, coil_in_, coil_out_);
      warp.adjoint(normal_, s == 0 ? out : term_);
      if (s > 0) Ops::axpy(1.0, term_, out);
    }
    if (regularizer_) regularizer_->regularize(x, out);
  }

private:
  const std::vector<std::unique_ptr<DeviceState>> *states_;
  const std::vector<DeviceImageWarp> *warps_;
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

// CG on the normal equations; the image back to the host.
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
// 0.5 s^2 ||W^(1/2) y||^2 over every state's samples (energy: 0.5 ||W^(1/2) y||^2), the one proximal
// solver with the device's sparse operators, the image scaled back.
Image solve_sparse(const DeviceMcirNormal &normal, const DeviceImage &rhs, double energy, const Grid &grid,
                   const ReconOptions &options, ReconReport &report) {
  const double scale =
      options.solver.scaling == DataScaling::Bart ? bart_data_scale(rhs.to_host().values()) : 1.0;
  report.data_scale = scale;
  DeviceImage b = Ops::like(rhs), zero = Ops::like(rhs);
  Ops::copy(rhs, b);
  Ops::zero(zero);
  Ops::xpay(zero, scale, b); // b = scale rhs, as 0 + scale rhs (the solver's rule)
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

class DeviceMcirCuda final : public mri::detail::DeviceMcir {
public:
  DeviceMcirCuda(const std::vector<const KSpaceData *> &states, const Grid &grid, const ReconOptions &options,
                 const CoilSensitivities *maps, ReconReport &report)
      : grid_(grid), options_(options), stream_(default_stream()) {
    if (states.empty()) mri::detail::invalid_argument("states.size()", 0, "needs at least one state");
    // The maps (without regulariser: it is added once, outside the state sum) and the regulariser.
    const auto t = Clock::now();
    if (maps) coils_.emplace(*maps, Regularizer::None, 0.0, stream_);
    regularizer_ = device_regularizer(maps, grid, options, stream_);
    synchronize(stream_);
    report.transfer_seconds += seconds_since(t);
    batch_ = coils_ ? sense_coil_batch(grid, coils_->count()) : 0;
    for (const KSpaceData *data : states) {
      DeviceProducts products = device_products_cuda(*data, grid, options, maps, report);
      auto state = std::make_unique<DeviceState>(
          DeviceState{std::move(products.rhs), std::move(products.toeplitz), std::nullopt});
      if (batch_ > 0) state->batched.emplace(*coils_, state->toeplitz, batch_);
      states_.push_back(std::move(state));
    }
    report.backend = Backend::Cuda;
    report.q_method = states_.front()->toeplitz.q_path();
    report.toeplitz_fft = batch_ > 0 ? "unfused, " + std::to_string(batch_) + " coils per batched transform"
                                     : states_.front()->toeplitz.fft_note();
  }

  std::size_t states() const override { return states_.size(); }

  Image solve(const std::vector<const ImageWarp *> &warps, double data_energy, ReconReport &report,
              MotionCorrectionReport &motion) override {
    if (warps.size() != states_.size())
      mri::detail::invalid_argument("warps.size()", warps.size(),
                                    "needs one warp per state (" + std::to_string(states_.size()) + ")");
    // The warps (their adjoint's lists) and b = sum_s W_s^H b_s.
    auto t = Clock::now();
    warps_.clear();
    for (const ImageWarp *w : warps) warps_.emplace_back(*w);
    DeviceImage rhs(grid_, stream_), warped(grid_, stream_);
    for (std::size_t s = 0; s < states_.size(); ++s) {
      warps_[s].adjoint(states_[s]->rhs, s == 0 ? rhs : warped);
      if (s > 0) Ops::axpy(1.0, warped, rhs);
    }
    synchronize(stream_);
    motion.rhs_seconds += seconds_since(t);

    t = Clock::now();
    const DeviceMcirNormal normal(states_, warps_, coils_ ? &*coils_ : nullptr, regularizer_.get(), grid_, stream_);
    const bool sparse = !options_.solver.terms.empty();
    Image image = sparse ? solve_sparse(normal, rhs, 0.5 * data_energy, grid_, options_, report)
                         : solve_cg(normal, rhs, options_, report);
    report.cg_seconds += seconds_since(t);
    motion.cg_warp_seconds = 0;
    report.device_note = "mcir: warps (gather adjoint), " + std::to_string(states_.size()) + " Toeplitz normals" +
                         (batch_ > 0 ? " (coil-batched)" : "") + " and " + report.solver + " on the device";
    return image;
  }

  Image refine(std::size_t s, const Image &start, int iterations, double &residual) const override {
    if (s >= states_.size()) mri::detail::invalid_argument("s", s, "is not a state (" + std::to_string(states_.size()) + ")");
    const DeviceState &state = *states_[s];
    const StateNormal normal(state, coils_ ? &*coils_ : nullptr, grid_, stream_);
    const DeviceImage x0(start, stream_);
    DeviceImage r(grid_, stream_);
    normal(x0, r);
    Ops::xpay(state.rhs, -1.0, r); // r = b_s - N_s start
    ConjugateGradient<StateNormal, DeviceImage> cg(normal);
    cg.set_max_iterations(iterations).set_tolerance(0);
    DeviceImage x = cg.solve(r);
    residual = cg.error();
    Ops::axpy(1.0, x0, x);
    return x.to_host();
  }

  double data_fit(const Image &x) const override {
    if (warps_.size() != states_.size())
      mri::detail::invalid_argument("warps", "none", "data_fit needs a solve first (its warps)");
    const DeviceImage image(x, stream_);
    DeviceImage state_image(grid_, stream_), normal_image(grid_, stream_), coil_in(grid_, stream_),
        coil_out(grid_, stream_);
    double fit = 0;
    for (std::size_t s = 0; s < states_.size(); ++s) {
      warps_[s].forward(image, state_image);
      state_normal(*states_[s], coils_ ? &*coils_ : nullptr, state_image, normal_image, coil_in, coil_out);
      fit += Ops::dot(state_image, normal_image).real() - 2 * Ops::dot(state_image, states_[s]->rhs).real();
    }
    return fit;
  }

private:
  Grid grid_;
  ReconOptions options_;
  StreamHandle stream_;
  std::optional<DeviceCoils> coils_;
  std::unique_ptr<DeviceCoils> regularizer_;
  int batch_ = 0;
  std::vector<std::unique_ptr<DeviceState>> states_;
  std::vector<DeviceImageWarp> warps_; // the last solve's
};

} // namespace

std::unique_ptr<mri::detail::DeviceMcir> motion_corrected_cuda(const std::vector<const KSpaceData *> &states,
                                                               const Grid &grid, const ReconOptions &options,
                                                               const CoilSensitivities *maps, ReconReport &report) {
  return std::make_unique<DeviceMcirCuda>(states, grid, options, maps, report);
}

} // namespace mri::cuda::detail
