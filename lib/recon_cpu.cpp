// mri::reconstruct on the CPU (recon_cpu.hpp): host images through the one driver
// (mri_backend/recon_driver.hpp): exact sums or the CPU NUFFT, QOperator for the Toeplitz form.
#include "recon_cpu.hpp"

#include <algorithm>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "coils/recon_coils.hpp"
#include "mri/fourier.hpp"
#include "mri/nufft.hpp"
#include "mri/toeplitz.hpp"
#include "mri_backend/recon_driver.hpp"
#include "mri_backend/sense.hpp"

namespace mri::detail {
namespace {

// F^H W F by F then F^H (normal = Direct) on the CPU: the exact sums, or the NUFFT pair.
class DirectNormal {
public:
  DirectNormal(const KSpaceData &data, const Grid &grid, Precision precision, const NufftOperator *nufft)
      : trajectory_(data.trajectory()), weights_(data.weights()), grid_(grid), precision_(precision),
        nufft_(nufft), samples_(data.trajectory().size()) {}

  void apply(const Image &in, Image &out) const {
    if (nufft_) {
      nufft_->apply(in.data(), samples_.data());
      weigh();
      nufft_->adjoint(samples_.data(), out.data());
      return;
    }
    if (precision_ == Precision::Float64)
      forward_sum_f64(trajectory_, in, samples_.data());
    else
      forward_sum_f32(trajectory_, in, samples_.data());
    weigh();
    if (precision_ == Precision::Float64)
      adjoint_sum_f64(trajectory_, samples_, grid_, grid_, out.data());
    else
      adjoint_sum_f32(trajectory_, samples_, grid_, grid_, out.data());
  }

private:
  void weigh() const {
    for (std::size_t m = 0; m < weights_.size(); ++m) samples_[m] *= weights_[m];
  }
  const Trajectory &trajectory_;
  const std::vector<float> &weights_;
  Grid grid_;
  Precision precision_;
  const NufftOperator *nufft_;
  mutable std::vector<cfloat> samples_;
};

// (F^H W F + lambda R^H R) as one callable for ConjugateGradient.
struct CpuNormal {
  const QOperator *q;
  const DirectNormal *direct;
  Regularizer regularizer;
  double lambda;
  void operator()(const Image &in, Image &out) const {
    if (q)
      q->apply(in.data(), out.data());
    else
      direct->apply(in, out);
    add_regularizer_normal(regularizer, lambda, in.grid(), in.data(), out.data());
  }
};

class CpuSteps {
public:
  using Vec = Image;

  CpuSteps(const KSpaceData &data, const Grid &grid, const ReconOptions &options, const CoilSensitivities *maps)
      : data_(data), grid_(grid), options_(options), maps_(maps), op_{Backend::Cpu, options.precision, options.policy},
        nufft_(options.method == Method::Nufft), nufft_options_(recon_nufft_options(options, Backend::Cpu)) {}

  void prepare(bool) {
    if (maps_) coils_.emplace(*maps_, options_.regularizer, options_.lambda);
  }

  // sum_c conj(S_c) F^H (w .* D_c) (or F^H (w .* D) of one coil without maps): by the exact sum
  // per coil, or by adjoint NUFFTs of blocks of coils (whose plan the direct normal reuses; with
  // Toeplitz it goes before Q's plan on the doubled grid is made, so the two are never held at
  // once: the process's peak memory).
  Image rhs() {
    const std::vector<cfloat> weighted = data_.weighted_samples();
    Image rhs(grid_);
    if (nufft_)
      rhs_by_nufft(weighted, rhs);
    else
      rhs_by_exact_sum(weighted, rhs);
    if (options_.normal == Normal::Toeplitz) nufft_op_.reset();
    return rhs;
  }

  void make_direct() { direct_.emplace(data_, grid_, options_.precision, nufft_op_ ? &*nufft_op_ : nullptr); }

  // Q on the doubled grid: the exact sum, or one adjoint NUFFT there. It does not depend on the
  // coil: one Q for all.
  void compute_q() {
    q_.emplace(nufft_ ? QOperator::from_q(grid_, nufft_q(data_.trajectory(), data_.weights(), grid_, nufft_options_))
                      : QOperator(data_.trajectory(), data_.weights(), grid_, op_));
  }
  void load_spectrum(std::span<const float> spectrum) { q_.emplace(QOperator::from_spectrum(grid_, spectrum)); }
  std::vector<float> spectrum() const { return q_->spectrum(); }

  // SENSE: the one-coil normal without its regulariser inside, the regulariser once outside.
  template <class F> ReconResult with_normal(const Image &like, F &&f) {
    const QOperator *q = q_ ? &*q_ : nullptr;
    const DirectNormal *direct = direct_ ? &*direct_ : nullptr;
    if (coils_)
      return f(SenseNormal<Image, HostCoils, CpuNormal>(*coils_, CpuNormal{q, direct, Regularizer::None, 0.0}, like));
    return f(CpuNormal{q, direct, options_.regularizer, options_.lambda});
  }

  void synchronize() const {}
  const Image &to_host(const Image &x) const { return x; }
  Image to_host(Image &&x) const { return std::move(x); }

private:
  // Coil images per NufftOperator::adjoint_coils call. 4, not its 8: the plan is fresh in every
  // reconstruct, and first touching 8 coils' grids, staged samples and images (28 MB at 256^2,
  // 2^17 samples) cost more than the shared weights save on the 2-core VM (F^H D phase of
  // RECON-2D-MC: 8 per call 85 ms, 4 per call 31-37 ms, one coil at a time 43 ms).
  static constexpr int kRhsCoilBlock = 4;

  void rhs_by_nufft(const std::vector<cfloat> &weighted, Image &rhs) {
    nufft_op_.emplace(data_.trajectory(), grid_, nufft_options_);
    if (!coils_) return nufft_op_->adjoint(weighted.data(), rhs.data());
    const std::size_t m = data_.samples_per_coil(), n = static_cast<std::size_t>(grid_.voxels());
    const int block = std::min(kRhsCoilBlock, coils_->count());
    std::vector<cfloat> images(static_cast<std::size_t>(block) * n);
    sense_rhs(
        *coils_, block,
        [&](int c0, int count) { nufft_op_->adjoint_coils(weighted.data() + c0 * m, count, images.data()); },
        [&](int i) { return images.data() + i * n; }, rhs);
  }

  void rhs_by_exact_sum(const std::vector<cfloat> &weighted, Image &rhs) const {
    const FhDOperator exact(data_.trajectory(), grid_, op_);
    const std::size_t m = data_.samples_per_coil();
    const auto coil = [&](int c) { return std::span<const cfloat>(weighted.data() + static_cast<std::size_t>(c) * m, m); };
    if (!coils_) {
      rhs = exact.fourier().adjoint(coil(0));
      return;
    }
    Image scratch(grid_);
    sense_rhs(*coils_, 1, [&](int c, int) { scratch = exact.fourier().adjoint(coil(c)); },
              [&](int) -> const Image & { return scratch; }, rhs);
  }

  const KSpaceData &data_;
  const Grid grid_;
  const ReconOptions &options_;
  const CoilSensitivities *maps_;
  const OperatorOptions op_;
  const bool nufft_;
  const NufftOptions nufft_options_;
  std::optional<HostCoils> coils_;
  std::optional<NufftOperator> nufft_op_;
  std::optional<QOperator> q_;
  std::optional<DirectNormal> direct_;
};

} // namespace

ReconResult reconstruct_cpu(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                            const CoilSensitivities *maps, ReconReport report, ReconClock::time_point t_start) {
  report.backend = Backend::Cpu;
  if (options.backend == Backend::Auto)
    report.backend_note = options.method == Method::Nufft && options.precision == Precision::Float64
                              ? "auto: cpu (the CUDA NUFFT is float32)"
                              : "auto: cpu (" + cuda_unavailable_reason() + ")";
  CpuSteps steps(data, grid, options, maps);
  return drive_reconstruction(steps, data, grid, options, report, t_start);
}

} // namespace mri::detail
