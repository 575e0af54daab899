// mri::reconstruct with a field map on the CPU (recon_offresonance.hpp): the one driver
// (mri_backend/recon_driver.hpp) over the field-corrected operators. method = Exact: the exact
// sums, normal applied directly (the field term breaks the Toeplitz structure); Nufft: time
// segmentation, normal by its Toeplitz kernels (solver.normal = Toeplitz) or by the segmented
// NUFFTs (Direct). SENSE and the regularisers as in lib/recon/recon_cpu.cpp.
#include "recon_offresonance.hpp"

#include <memory>
#include <string>
#include <optional>
#include <utility>
#include <vector>

#include "mri/linear_operator.hpp"
#include "mri/offresonance.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri_backend/normal_assembly.hpp"
#include "mri_backend/recon_driver.hpp"
#include "mri_backend/sense.hpp"
#include "segmented_sense_2d.hpp"
#include "sense/recon_coils.hpp"

namespace mri::detail {
namespace {

// The memory the segmented Toeplitz normal may take (its kernels and buffers); beyond it the
// direct normal runs, which needs only the NUFFT plan.
constexpr std::size_t kToeplitzBudget = std::size_t{2} << 30;

class FieldSteps {
public:
  using Vec = Image;

  FieldSteps(const KSpaceData &data, std::span<const float> times, const Grid &grid, const ReconOptions &options,
             const CoilSensitivities *maps, ReconReport &report)
      : data_(data), times_(times), grid_(grid), options_(options), maps_(maps), report_(report) {}

  // The operator (the segmentation's L chosen here: setup time).
  void prepare(bool) {
    if (maps_) coils_.emplace(*maps_, options_.solver.regularizer, options_.solver.lambda);
    const OffResonanceOptions &o = options_.offresonance;
    if (options_.method == Method::Exact) {
      exact_.emplace(data_.trajectory(), grid_, o.field_map, std::vector<float>(times_.begin(), times_.end()),
                     OperatorOptions{Backend::Cpu, options_.precision, options_.gpu.policy});
      report_.offresonance = "exact";
      return;
    }
    segmented_.emplace(data_.trajectory(), grid_, *o.field_map, times_, o.segmentation,
                       recon_nufft_options(options_, Backend::Cpu));
    const TimeSegmentation &s = segmented_->segmentation();
    report_.offresonance = "time-segmented";
    report_.segments = s.segments;
    report_.segment_interpolator = to_string(s.interpolator);
    report_.segment_error = s.error;
    report_.segment_max_error = s.max_error;
  }

  // sum_c conj(S_c) A^H (w .* D_c), or A^H (w .* D) of one coil without maps.
  Image rhs() {
    const std::vector<cfloat> weighted = data_.weighted_samples();
    const std::size_t m = data_.samples_per_coil();
    const auto coil = [&](int c) { return std::span<const cfloat>(weighted.data() + static_cast<std::size_t>(c) * m, m); };
    Image rhs(grid_);
    if (!coils_) {
      adjoint(coil(0), rhs);
      return rhs;
    }
    Image scratch(grid_);
    sense_rhs(*coils_, 1, [&](int c, int) { adjoint(coil(c), scratch); }, [&](int) -> const Image & { return scratch; }, rhs);
    return rhs;
  }

  void make_direct() {}
  // The segmented Toeplitz kernels, unless they would pass kToeplitzBudget: then the CG applies
  // the segmented NUFFTs (the same model, measured as fast at 128^2: docs/offresonance.md).
  // With maps on a 2D grid, the normal fused over coils and segments (segmented_sense_2d.hpp).
  void compute_q() {
    const int segments = segmented_->segmentation().segments;
    const bool fused = coils_ && SegmentedSenseToeplitz2d::applies_to(grid_);
    const std::size_t bytes =
        fused ? SegmentedSenseToeplitz2d::bytes(grid_, segments) : SegmentedToeplitz::kernel_bytes(grid_, segments);
    if (bytes > kToeplitzBudget) {
      report_.normal = Normal::Direct;
      report_.offresonance_note += std::string(report_.offresonance_note.empty() ? "" : "; ") + "normal: direct (the " +
                                   std::to_string(segments) + "-segment Toeplitz kernels would take " +
                                   std::to_string(bytes >> 20) + " MiB)";
      return;
    }
    if (fused)
      fused_.emplace(*segmented_, data_.weights(), *maps_);
    else
      toeplitz_.emplace(*segmented_, data_.weights());
  }
  // The driver asks for these only with a Q cache, which reconstruct turns off with a field map.
  void load_spectrum(std::span<const float>) { throw Error("reconstruct: no cached Toeplitz spectrum with a field map"); }
  std::vector<float> spectrum() const { return {}; }

  template <class F> ReconResult with_normal(const Image &like, F &&f) {
    if (fused_) {
      const HostCoils &coils = *coils_;
      const SegmentedSenseToeplitz2d &fused = *fused_;
      return f([&fused, &coils](const Image &x, Image &out) {
        fused.apply(x, out);
        coils.regularize(x, out);
      });
    }
    if (toeplitz_) return with_data_normal(like, ref(*toeplitz_), f);
    if (segmented_) return with_data_normal(like, direct_normal(*segmented_, data_.weights()), f);
    return with_data_normal(like, direct_normal(*exact_, data_.weights()), f);
  }

  void synchronize() const {}
  const Image &to_host(const Image &x) const { return x; }
  Image to_host(Image &&x) const { return std::move(x); }

private:
  void adjoint(std::span<const cfloat> samples, Image &out) const {
    if (exact_)
      exact_->adjoint(samples, out);
    else
      segmented_->adjoint(samples, out);
  }
  template <class N, class F> ReconResult with_data_normal(const Image &like, N data_normal, F &f) {
    return with_reconstruction_normal(coils_, std::move(data_normal), options_.solver.regularizer, options_.solver.lambda,
                                      grid_, like, f);
  }

  const KSpaceData &data_;
  std::span<const float> times_;
  const Grid grid_;
  const ReconOptions &options_;
  const CoilSensitivities *maps_;
  ReconReport &report_;
  std::optional<HostCoils> coils_;
  std::optional<FieldFourierOperator> exact_;
  std::optional<SegmentedFieldOperator> segmented_;
  std::optional<SegmentedToeplitz> toeplitz_;
  std::optional<SegmentedSenseToeplitz2d> fused_;
};

} // namespace

namespace {

ReconOptions field_options(const ReconOptions &options) {
  ReconOptions o = options;
  o.q_cache_dir.clear(); // the field-corrected kernels are not cached
  if (o.method == Method::Exact) o.solver.normal = Normal::Direct;
  return o;
}

} // namespace

ReconResult reconstruct_offresonance_cpu(const KSpaceData &data, std::span<const float> times, const Grid &grid,
                                         const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                         ReconClock::time_point t_start) {
  report.backend = Backend::Cpu;
  const ReconOptions o = field_options(options);
  FieldSteps steps(data, times, grid, o, maps, report);
  return drive_reconstruction(steps, data, grid, o, report, t_start);
}

ReconResult reconstruct_offresonance(const KSpaceData &data, std::span<const float> times, const Grid &grid,
                                     const ReconOptions &options, const CoilSensitivities *maps, ReconReport report,
                                     ReconClock::time_point t_start, Backend backend) {
  if (backend != Backend::Cuda) return reconstruct_offresonance_cpu(data, times, grid, options, maps, std::move(report), t_start);
  return require_cuda("reconstruct").reconstruct_offresonance(data, times, grid, field_options(options), maps,
                                                              std::move(report), t_start);
}

} // namespace mri::detail
