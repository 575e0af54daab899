// reconstruct's coil step (recon_coils.hpp) and SENSE's map products on host images.
#include "recon_coils.hpp"

#include <chrono>
#include <string>

#include "calibration.hpp"
#include "mri/error.hpp"

namespace mri {

const char *to_string(CoilMaps m) { return m == CoilMaps::Estimate ? "estimate" : "require"; }

namespace detail {

namespace {
void check_maps(const CoilSensitivities &maps, const KSpaceData &data, const Grid &grid) {
  if (maps.grid() != grid)
    invalid_argument("options.coils.sensitivities->grid().voxels()", maps.grid().voxels(),
                     "the maps must be on the reconstruction grid (" + std::to_string(grid.voxels()) + " voxels, " +
                         std::to_string(grid.nx()) + "x" + std::to_string(grid.ny()) + "x" + std::to_string(grid.nz()) +
                         ")");
  if (maps.coils() != data.coils())
    invalid_argument("options.coils.sensitivities->coils()", maps.coils(),
                     "must equal data.coils() = " + std::to_string(data.coils()));
}
} // namespace

ReconCoils prepare_coils(const KSpaceData &data, const Grid &grid, const ReconOptions &options, Backend backend,
                         ReconReport &report) {
  const auto t0 = std::chrono::steady_clock::now();
  const CoilOptions &o = options.coils;
  report.acquired_coils = report.coils = data.coils();
  if (o.sensitivities) check_maps(*o.sensitivities, data, grid);
  if (o.virtual_coils < 0 || o.virtual_coils > data.coils())
    invalid_argument("options.coils.virtual_coils", o.virtual_coils,
                     "must be in [0, data.coils() = " + std::to_string(data.coils()) + "] (0: no compression)");
  if (data.coils() > 1 && !o.sensitivities && o.maps == CoilMaps::Require)
    invalid_argument("options.coils.sensitivities", "none",
                     "data has " + std::to_string(data.coils()) +
                         " coils and coils.maps = require: give maps, or set coils.maps = estimate");
  ReconCoils out;
  if (o.virtual_coils > 0 && o.virtual_coils < data.coils()) {
    const CoilCompression &cc = out.compression.emplace(data, o.virtual_coils);
    out.compressed.emplace(cc.apply(data));
    if (o.sensitivities) out.maps = std::make_shared<const CoilSensitivities>(cc.apply(*o.sensitivities));
    report.coils = cc.virtual_coils();
    report.coil_energy_kept = cc.energy_kept();
  } else if (o.sensitivities) {
    out.maps = o.sensitivities;
  }
  const KSpaceData &used = out.compressed ? *out.compressed : data;
  if (o.sensitivities) {
    report.maps = "given";
  } else if (used.coils() > 1) {
    out.maps = std::make_shared<const CoilSensitivities>(estimate_sensitivities_on(used, grid, o.estimation, backend));
    const SensitivityOptions &so = o.estimation;
    report.maps = "estimated, " + std::string(to_string(so.method)) + " (k-space centre |k| < " +
                  std::to_string(calibration_width(so, grid) / 2) + ", " +
                  (used.has_weights() ? "data weights" : "Pipe-Menon weights") + ", " +
                  (so.method == MapEstimate::Direct
                       ? "Hann taper, RSS-normalised, masked below " + std::to_string(so.mask_threshold) + " of the peak"
                       : "kernel " + (so.espirit_kernel ? std::to_string(so.espirit_kernel) : std::string("auto")) + ", threshold " +
                             std::to_string(so.espirit_threshold) + ", crop " + std::to_string(so.espirit_crop)) +
                  ", calibration images on " + to_string(backend) + ")";
  } else {
    report.maps = "none";
  }
  report.coil_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void HostCoils::expand(int c, const Image &x, Image &out) const {
  const cfloat *s = maps_->map(c).data();
  const auto n = static_cast<std::int64_t>(x.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = s[i] * x[static_cast<std::size_t>(i)];
}

void HostCoils::combine(int c, const Image &y, Image &out, bool first) const { combine(c, y.data(), out, first); }

void HostCoils::combine(int c, const cfloat *y, Image &out, bool first) const {
  const cfloat *s = maps_->map(c).data();
  const auto n = static_cast<std::int64_t>(out.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const cfloat v = std::conj(s[i]) * y[i];
    out[static_cast<std::size_t>(i)] = first ? v : out[static_cast<std::size_t>(i)] + v;
  }
}

void HostCoils::regularize(const Image &x, Image &out) const {
  add_regularizer_normal(regularizer_, lambda_, x.grid(), x.data(), out.data());
}

} // namespace detail
} // namespace mri
