#pragma once
// reconstruct's coil step, before any backend runs: the maps checked against the data, the coils
// compressed (ReconOptions::coils.virtual_coils), the maps estimated when none are given; and the host
// side of SENSE (HostCoils: the Coils of mri_backend/sense.hpp on host images).
#include <memory>
#include <optional>

#include "mri/coils.hpp"
#include "mri/reconstruct.hpp"
#include "mri/regularizer.hpp"

namespace mri::detail {

struct ReconCoils {
  std::optional<KSpaceData> compressed;  // the data after compression; empty: the data as given
  std::optional<CoilCompression> compression; // how, for more data of the same coils (frames)
  // Null: single-coil data without maps (no SENSE). Given maps are shared, not copied (at
  // RECON-3D-MC size a copy is 134 MB and tens of milliseconds).
  std::shared_ptr<const CoilSensitivities> maps;
};

// Fills report.acquired_coils, coils, coil_energy_kept, maps and coil_seconds; estimated maps
// take their calibration images on `backend` (the reconstruction's). Throws
// InvalidArgument for maps of another grid or coil count, multi-coil data without maps under
// CoilMaps::Require, virtual_coils outside [0, data.coils()].
ReconCoils prepare_coils(const KSpaceData &data, const Grid &grid, const ReconOptions &options, Backend backend,
                         ReconReport &report);

class HostCoils {
public:
  HostCoils(const CoilSensitivities &maps, Regularizer regularizer, double lambda)
      : maps_(&maps), regularizer_(regularizer), lambda_(lambda) {}
  int count() const { return maps_->coils(); }
  void expand(int c, const Image &x, Image &out) const;
  void combine(int c, const Image &y, Image &out, bool first) const;
  void combine(int c, const cfloat *y, Image &out, bool first) const; // y: out.size() values
  void regularize(const Image &x, Image &out) const;

private:
  const CoilSensitivities *maps_;
  Regularizer regularizer_;
  double lambda_;
};

} // namespace mri::detail
