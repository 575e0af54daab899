#pragma once
// What reconstruct_motion_corrected computes per state that does not depend on the fields (each
// state's b_s = sum_c S_c^H F_s^H W D_{s,c} and its Toeplitz Q_s; on the host, or on the device
// as a DeviceMcir), kept by the chain (reconstruct_motion_chain) across its rounds of MCIR on the
// same states, and the refinement of a warped image on one state's data and the data residual
// that those rounds use (mri/mcir.hpp, MotionChainOptions).
#include <memory>
#include <vector>

#include "mri/mcir.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "mri/toeplitz.hpp"

namespace mri::detail {

struct McirCache {
  // The host's (backend = cpu):
  std::vector<Image> rhs;                      // b_s per state (unwarped)
  std::vector<std::shared_ptr<QOperator>> q;   // Q_s per state
  const CoilSensitivities *maps = nullptr;     // the maps of b_s and N_s (the caller keeps them alive)
  // The device's (backend = cuda): b_s, Q_s and the last solve's warps.
  std::unique_ptr<DeviceMcir> device;
  double data_energy = 0;                      // ||W^(1/2) y||^2 over every state's (compressed) samples

  bool empty() const { return rhs.empty() && !device; }
};

// ||W^(1/2) (E x - y)|| / ||W^(1/2) y|| of MCIR's model E = [P_s F S_c W_s] with `fields` (the
// reference's absent): sum_s (W_s x)^H N_s (W_s x) - 2 Re (W_s x)^H b_s + ||W^(1/2) y||^2, one
// normal application per state. The data fit of an MCIR image, comparable between fields. On the
// device the fields are those of the cache's last solve (the chain asks right after it).
double mcir_data_residual(const McirCache &cache, const std::vector<DisplacementField> &fields,
                          const ImageWarpOptions &warp, const Image &x);

// reconstruct_motion_corrected with the per-state b_s and Q_s (the host's or the device's, by the
// backend) taken from `cache` when it holds them (made for the same states, maps and options),
// else made and stored there. cache = nullptr: reconstruct_motion_corrected.
MotionCorrectedResult reconstruct_motion_corrected_cached(const std::vector<KSpaceData> &states, const Grid &grid,
                                                          const std::vector<DisplacementField> &fields,
                                                          const ReconOptions &options,
                                                          const MotionCorrectionOptions &motion, McirCache *cache);

// reconstruct_motion_corrected's checks of the fields (InvalidArgument naming "fields.size()",
// "fields[s].grid()", "fields[s].u[i]").
void validate_motion_fields(const std::vector<KSpaceData> &states, const Grid &grid,
                            const std::vector<DisplacementField> &fields);

// start + d, d after `iterations` CG iterations on N_s d = b_s - N_s start (state s's SENSE normal
// equations from start; N_s = sum_c S_c^H Q_s S_c), where the cache's products are (host or
// device). residual: CG's last relative residual.
Image refine_state(const McirCache &cache, std::size_t s, const Image &start, int iterations, double &residual);

} // namespace mri::detail
