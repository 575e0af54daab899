#pragma once
// Internal to cuda/: the Toeplitz spectrum of the exact Q computed directly, without Q, as a sum
// of separable Dirichlet kernels on the tensor cores (cuda/exact/dirichlet_spectrum.cu).
#include <cuda_runtime.h>

#include <cstddef>

#include "mri/grid.hpp"
#include "mri/trajectory.hpp"

namespace mri::cuda::detail {

// True when dirichlet_spectrum computes the spectrum of `grid` (3D grids: every extent > 1).
bool dirichlet_spectrum_applies(const Grid &grid);

// Device bytes dirichlet_spectrum allocates for `grid` (its tables for two chunks of samples).
std::size_t dirichlet_spectrum_bytes(const Grid &grid);

// The spectrum K = Re(FFT(Q)) / L of the Toeplitz embedding on grid.doubled() (L voxels, FFT
// order, x fastest), with Q(d) = sum_m w_m exp(+i 2 pi k_m . d / n) on the offsets
// |d_a| <= n_a - 1 (d_a = -n_a zeroed, as the Toeplitz operator's exact Q):
//   K(f) = (1/L) sum_m w_m prod_a D_a(k_ma / n_a - f_a / L_a),
//   D_a(t) = sum_{|d| <= n_a - 1} exp(i 2 pi d t) = sin(pi (2 n_a - 1) t) / sin(pi t),
// real because the offsets are symmetric. k: m device points; w: m device weights (nullptr:
// all ones) whose largest is w_max (> 0). Writes `kernel` (L floats on the device), ordered on
// `stream`; returns when it is done (the tables it allocates are freed on return).
void dirichlet_spectrum(const KPoint *k, const float *w, std::size_t m, double w_max, const Grid &grid,
                        float *kernel, cudaStream_t stream);
// The same for the fz planes [first, first + count) of K only (the voxel slabs of several
// devices, device_slabs.hpp): `kernel` holds those count planes. first must be a multiple of
// dirichlet_spectrum_plane_block() (the kernel's fz tile), the planes within K's
// (InvalidArgument otherwise). Each plane's sum is the whole spectrum's up to float rounding (the
// blocks' sample splits depend on how many frequency blocks there are).
void dirichlet_spectrum_planes(const KPoint *k, const float *w, std::size_t m, double w_max, const Grid &grid,
                               int first, int count, float *kernel, cudaStream_t stream);
int dirichlet_spectrum_plane_block();

} // namespace mri::cuda::detail
