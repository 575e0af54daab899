#pragma once
// How reconstruct() resolves its backend and Method::Auto (lib/recon/reconstruct.cpp), shared with
// the batch's Q cache key (reconstruct_q_key), which must name the method that will run.
#include "mri/reconstruct.hpp"

namespace mri::detail {

// The backend reconstruct() runs on: Auto resolved, method = Nufft with Float64 on the CPU,
// options.gpu.devices on the GPU. Throws Unsupported as reconstruct() does.
Backend recon_backend(const ReconOptions &options);
// options.method made concrete for this data on `backend` (Exact and Nufft pass through with an
// empty note; Auto by choose_method, whose note says why).
MethodChoice resolve_method(const KSpaceData &data, const Grid &grid, const ReconOptions &options, Backend backend);

} // namespace mri::detail
