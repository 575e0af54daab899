// mri::reconstruct on the CPU (recon_cpu.hpp): host images through the one driver
// (mri_backend/recon_driver.hpp): exact sums or the CPU NUFFT, QOperator for the Toeplitz form.
#include "recon_cpu.hpp"

#include <algorithm>
#include <deque>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "sense/recon_coils.hpp"
#include "toeplitz/sense_toeplitz_2d.hpp"
#include "mri/fourier.hpp"
#include "mri/linear_operator.hpp"
#include "mri/nufft.hpp"
#include "mri/toeplitz.hpp"
#include "mri_backend/frames_driver.hpp"
#include "mri_backend/normal_assembly.hpp"
#include "mri_backend/recon_driver.hpp"
#include "mri_backend/sense.hpp"
#include "mri_backend/tuning.hpp"

namespace mri::detail {
namespace {

class CpuSteps {
public:
  using Vec = Image;

  CpuSteps(const KSpaceData &data, const Grid &grid, const ReconOptions &options, const CoilSensitivities *maps)
      : data_(data), grid_(grid), options_(options), maps_(maps),
        op_{Backend::Cpu, options.precision, options.gpu.policy},
        nufft_(options.method == Method::Nufft), nufft_options_(recon_nufft_options(options, Backend::Cpu)) {}

  void prepare(bool) {
    if (maps_) coils_.emplace(*maps_, options_.solver.regularizer, options_.solver.lambda);
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
    if (options_.solver.normal == Normal::Toeplitz) nufft_op_.reset();
    return rhs;
  }

  // F for the direct normal: the NUFFT plan kept from rhs(), or the exact sums.
  void make_direct() {
    if (!nufft_op_) exact_.emplace(data_.trajectory(), grid_, op_);
  }

  // Q on the doubled grid: the exact sum, or one adjoint NUFFT there. It does not depend on the
  // coil: one Q for all.
  void compute_q() {
    q_.emplace(nufft_ ? QOperator::from_q(grid_, nufft_q(data_.trajectory(), data_.weights(), grid_, nufft_options_))
                      : QOperator(data_.trajectory(), data_.weights(), grid_, op_));
  }
  void load_spectrum(std::span<const float> spectrum) { q_.emplace(QOperator::from_spectrum(grid_, spectrum)); }
  std::vector<float> spectrum() const { return q_->spectrum(); }

  // The CG's operator (mri_backend/normal_assembly.hpp): the Toeplitz form, or F^H W F directly.
  template <class F> ReconResult with_normal(const Image &like, F &&f) {
    if (q_ && coils_ && SenseToeplitz2d::applies_to(grid_)) return with_fused_sense_normal(f);
    if (q_) return with_data_normal(like, ref(*q_), f);
    if (nufft_op_) return with_data_normal(like, direct_normal(ref(*nufft_op_), data_.weights()), f);
    return with_data_normal(like, direct_normal(ref(*exact_), data_.weights()), f);
  }

  void synchronize() const {}

  const Image &to_host(const Image &x) const { return x; }
  Image to_host(Image &&x) const { return std::move(x); }
  const CoilSensitivities *maps() const { return maps_; }

private:
  template <class N, class F> ReconResult with_data_normal(const Image &like, N data_normal, F &f) {
    return with_reconstruction_normal(coils_, std::move(data_normal), options_.solver.regularizer,
                                      options_.solver.lambda, grid_, like, f);
  }

  // With maps on a 2D grid: SENSE's Toeplitz normal fused over the coils (sense_toeplitz_2d.hpp:
  // SenseNormal over QOperator to float rounding, in about half its time), the regulariser
  // once outside it as SenseNormal adds it.
  template <class F> ReconResult with_fused_sense_normal(F &f) {
    const SenseToeplitz2d fused(*q_, *maps_);
    const HostCoils &coils = *coils_;
    return f([&fused, &coils](const Image &x, Image &out) {
      fused.apply(x, out);
      coils.regularize(x, out);
    });
  }

  // Coil images per NufftOperator::adjoint_coils call. 4, not its 8: the plan is fresh in every
  // reconstruct, and first touching 8 coils' grids, staged samples and images (28 MB at 256^2,
  // 2^17 samples) costs more than the shared weights save where page faults are slow (the F^H D
  // phase of RECON-2D-MC, bench_nufft_cpu RECON2DMC_fhd; docs/sense.md, "Performance").
  static constexpr int kRhsCoilBlock = tuning::Cpu::rhs_coil_block;

  void rhs_by_nufft(const std::vector<cfloat> &weighted, Image &rhs) {
    nufft_op_.emplace(data_.trajectory(), grid_, nufft_options_);
    if (!coils_) return nufft_op_->adjoint(weighted, rhs);
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
      exact.fourier().adjoint(coil(0), rhs);
      return;
    }
    Image scratch(grid_);
    sense_rhs(*coils_, 1, [&](int c, int) { exact.fourier().adjoint(coil(c), scratch); },
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
  std::optional<FourierOperator> exact_; // the direct normal's F when not by NUFFT
};

} // namespace

ReconResult reconstruct_cpu(const KSpaceData &data, const Grid &grid, const ReconOptions &options,
                            const CoilSensitivities *maps, ReconReport report, ReconClock::time_point t_start) {
  report.backend = Backend::Cpu;
  if (options.backend == Backend::Auto && report.backend_note.empty()) // reconstruct() may have said why
    report.backend_note = "auto: cpu (" + cuda_unavailable_reason() + ")";
  CpuSteps steps(data, grid, options, maps);
  return drive_reconstruction(steps, data, grid, options, report, t_start);
}

FramesResult reconstruct_frames_cpu(const std::vector<KSpaceData> &frames, const Grid &grid,
                                    const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                    ReconClock::time_point t_start) {
  report.backend = Backend::Cpu;
  std::deque<CpuSteps> steps;
  for (const KSpaceData &frame : frames) steps.emplace_back(frame, grid, options, maps);
  return drive_frames(steps, frames, grid, options, report, t_start);
}

} // namespace mri::detail
