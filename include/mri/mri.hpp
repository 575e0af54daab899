#pragma once
// The mri SDK: iterative reconstruction of non-Cartesian MRI.
// Read top-down: grids and images, trajectories and k-space data, the phantom, the exact
// Fourier operators (F, F^H D, Q/Toeplitz), the gridding NUFFT, density compensation and the
// gridding baseline, the CG solver, reconstruct() and reconstruct_batch() over many items; then
// motion estimation of 3D sequences.
// The ISMRMRD and NIfTI readers and writers are in libmri_io (target mri::io): mri/io.hpp.
//
// Thread safety: every public header states the contract of its types and functions;
// tests/concurrency tests them with 16 threads, and scripts/sanitize.sh runs that test under
// ThreadSanitizer.
#include "mri/error.hpp"
#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/trajectory.hpp"
#include "mri/kspace.hpp"
#include "mri/phantom.hpp"
#include "mri/options.hpp"
#include "mri/fourier.hpp"
#include "mri/toeplitz.hpp"
#include "mri/toeplitz_cache.hpp"
#include "mri/nufft.hpp"
#include "mri/offresonance.hpp"
#include "mri/density.hpp"
#include "mri/gridding.hpp"
#include "mri/vector_ops.hpp"
#include "mri/linear_operator.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/coils.hpp"
#include "mri/conjugate_gradient.hpp"
#include "mri/regularizer.hpp"
#include "mri/sparse.hpp"
#include "mri/proximal.hpp"
#include "mri/proximal_solvers.hpp"
#include "mri/frame_stack.hpp"
#include "mri/frame_terms.hpp"
#include "mri/reconstruct.hpp"
#include "mri/dynamic.hpp"
#include "mri/frames.hpp"
#include "mri/breathing.hpp"
#include "mri/mcir.hpp"
#include "mri/batch.hpp"
#include "mri/sense.hpp"
#include "mri/metrics.hpp"
#include "mri/bart.hpp"
#include "mri/png.hpp"
#include "mri/motion.hpp"
