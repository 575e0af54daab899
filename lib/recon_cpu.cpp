// mri::reconstruct on the CPU (recon_cpu.hpp): host images through the one driver
// (mri_backend/recon_driver.hpp): exact sums or the CPU NUFFT, QOperator for the Toeplitz form.
#include "recon_cpu.hpp"

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "coils/recon_coils.hpp"
#include "mri/fourier.hpp"
#include "mri/nufft.hpp"
#include "mri/toeplitz.hpp"
#include "mri/linear_operator.hpp"
#include "mri_backend/normal_assembly.hpp"
#include "mri_backend/recon_driver.hpp"
#include "mri_backend/sense.hpp"

namespace mri::detail {
namespace {

class CpuSteps {
public:
  using Vec = Image;

  CpuSteps(const KSpaceData &data, const Grid &grid, const ReconOptions &options, const CoilSensitivities *maps)
      : data_(data), grid_(grid), options_(options), maps_(maps), op_{Backend::Cpu, options.precision, options.policy},
        nufft_(options.method == Method::Nufft), nufft_options_(recon_nufft_options(options, Backend::Cpu)) {}

  void prepare(bool) {
    if (maps_) coils_.emplace(*maps_, options_.regularizer, options_.lambda);
  }

  // F^H (w .* D) per coil: the exact sum, or one adjoint NUFFT (whose plan the direct normal
  // reuses; with Toeplitz it goes before Q's plan on the doubled grid is made, so the two are
  // never held at once: the process's peak memory).
  Image rhs() {
    if (nufft_) nufft_op_.emplace(data_.trajectory(), grid_, nufft_options_);
    const std::vector<cfloat> weighted = data_.weighted_samples();
    const std::size_t m = data_.samples_per_coil();
    std::optional<FhDOperator> exact;
    if (!nufft_) exact.emplace(data_.trajectory(), grid_, op_);
    const auto coil_fhd = [&](int c, Image &out) {
      const std::span<const cfloat> y(weighted.data() + static_cast<std::size_t>(c) * m, m);
      if (nufft_)
        nufft_op_->adjoint(y.data(), out.data());
      else
        out = exact->fourier().adjoint(y);
    };
    Image rhs(grid_);
    if (!coils_) {
      coil_fhd(0, rhs);
    } else {
      Image scratch(grid_);
      sense_rhs(*coils_, 1, [&](int c, int) { coil_fhd(c, scratch); }, [&](int) -> const Image & { return scratch; },
                rhs);
    }
    if (options_.normal == Normal::Toeplitz) nufft_op_.reset();
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
    if (q_) return with_data_normal(like, ref(*q_), f);
    if (nufft_op_) return with_data_normal(like, direct_normal(ref(*nufft_op_), data_.weights()), f);
    return with_data_normal(like, direct_normal(ref(*exact_), data_.weights()), f);
  }

  void synchronize() const {}

  const Image &to_host(const Image &x) const { return x; }
  Image to_host(Image &&x) const { return std::move(x); }

private:
  // + lambda R^H R; with SENSE the data term bare inside the coil sum, the regulariser once outside.
  template <class N, class F> ReconResult with_data_normal(const Image &like, N data_normal, F &f) {
    if (!coils_)
      return f(normal_equations(regularized(std::move(data_normal), options_.regularizer, options_.lambda, grid_)));
    auto inner = normal_equations(std::move(data_normal));
    return f(SenseNormal<Image, HostCoils, decltype(inner)>(*coils_, std::move(inner), like));
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
  if (options.backend == Backend::Auto)
    report.backend_note = options.method == Method::Nufft && options.precision == Precision::Float64
                              ? "auto: cpu (the CUDA NUFFT is float32)"
                              : "auto: cpu (" + cuda_unavailable_reason() + ")";
  CpuSteps steps(data, grid, options, maps);
  return drive_reconstruction(steps, data, grid, options, report, t_start);
}

} // namespace mri::detail
