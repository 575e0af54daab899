// ESPIRiT coil maps (Uecker et al., MRM 2014; BART's `ecalib`), made for non-Cartesian data: the
// Cartesian calibration region is taken from the data by gridding its centre.
//
// 1. Calibration k-space: the density-compensated adjoint NUFFT of the samples with |k_a| <
//    calibration / 2 gives low-resolution coil images; their forward NUFFT at the integer k of the
//    calibration^d Cartesian grid gives y_c[kappa] (the centre of each coil's k-space).
// 2. Calibration matrix A: one row per position r where a kernel^d window fits, the values
//    y_c[r + p] for every coil c and window offset p. With A = U S V^H, the conjugates of its
//    right singular vectors with singular value >= threshold * the largest span the patches that
//    are consistent with some maps.
// 3. A patch of a point source at x is s(x) (x) phi(x), phi_p(x) = exp(-i 2 pi p.x / n); it lies
//    in that span exactly when G(x) s(x) = s(x) with
//       G(x) = (1/k^d) sum_j a_j(x) a_j(x)^H,  a_jc(x) = sum_p conj(v_j[c, p]) exp(+i 2 pi p.x / n),
//    so G_cc'(x) = sum_q g_cc'[q] exp(+i 2 pi q.x / n), g_cc'[q] = (1/k^d) sum_j sum_{p - p' = q}
//    conj(v_j[c, p]) v_j[c', p']: a trigonometric polynomial of (2k - 1)^d terms per coil pair,
//    evaluated on the whole grid by one inverse FFT each.
// 4. Per voxel, G's top eigenvector is the maps' value there (unit norm over coils), its
//    eigenvalue near 1 where the data support it; below `crop` the maps are zero. An eigenvector
//    has no phase of its own: it is fixed per voxel by making the maps' inner product with the
//    low-resolution coil images of step 1 real and positive, so that SENSE returns the object's
//    own phase (as with the direct estimate: a real object gives a real image).
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fftw3.h>
#include <string>

#include "fft/grid_fft.hpp"
#include "calibration.hpp"
#include "espirit.hpp"
#include "mri/coils.hpp"
#include "mri/error.hpp"
#include "mri/nufft.hpp"
#include "mri_backend/nufft_access.hpp"

namespace mri {

namespace {

using i64 = std::int64_t;
constexpr double kCalibrationTolerance = 1e-4; // the NUFFTs that make the calibration data

// The calibration^d Cartesian k-space of every coil: kappa_a in [-cal/2, cal/2) on the grid's
// axes of extent > 1 (0 on the others), coil-major, kappa_x fastest, by a forward NUFFT of the
// low-resolution coil images (`low_res`, untapered) at those integer k.
std::vector<cfloat> calibration_kspace(const std::vector<cfloat> &low_res, int coils, const Grid &grid, int cal,
                                       std::array<i64, 3> &shape) {
  std::vector<KPoint> cart;
  for (int a = 0; a < 3; ++a) shape[static_cast<std::size_t>(a)] = grid.extent(a) > 1 ? cal : 1;
  for (i64 z = 0; z < shape[2]; ++z)
    for (i64 y = 0; y < shape[1]; ++y)
      for (i64 x = 0; x < shape[0]; ++x) {
        const auto coord = [&](i64 i, int a) { return shape[static_cast<std::size_t>(a)] > 1 ? float(i - cal / 2) : 0.0f; };
        cart.push_back({coord(x, 0), coord(y, 1), coord(z, 2)});
      }
  NufftOptions o;
  o.tolerance = kCalibrationTolerance;
  const std::size_t points = cart.size(), n = static_cast<std::size_t>(grid.voxels());
  const NufftOperator op(Trajectory(grid.dims(), std::move(cart)), grid, o);
  std::vector<cfloat> out(points * static_cast<std::size_t>(coils));
  for (int c = 0; c < coils; ++c)
    detail::NufftAccess::forward(op, low_res.data() + static_cast<std::size_t>(c) * n,
                                 out.data() + static_cast<std::size_t>(c) * points);
  return out;
}

// The calibration matrix's signal subspace: the right singular vectors (columns, C k^d long,
// coil-major, window offset x fastest) with singular value >= threshold * the largest.
Eigen::MatrixXcd signal_subspace(const std::vector<cfloat> &y, int coils, const std::array<i64, 3> &shape,
                                 const std::array<i64, 3> &kernel, double threshold) {
  const i64 kv = kernel[0] * kernel[1] * kernel[2];
  const i64 rx = shape[0] - kernel[0] + 1, ry = shape[1] - kernel[1] + 1, rz = shape[2] - kernel[2] + 1;
  const i64 ncal = shape[0] * shape[1] * shape[2];
  Eigen::MatrixXcd a(rx * ry * rz, coils * kv);
  for (i64 z = 0; z < rz; ++z)
    for (i64 yy = 0; yy < ry; ++yy)
      for (i64 x = 0; x < rx; ++x) {
        const i64 row = x + rx * (yy + ry * z);
        for (int c = 0; c < coils; ++c)
          for (i64 pz = 0; pz < kernel[2]; ++pz)
            for (i64 py = 0; py < kernel[1]; ++py)
              for (i64 px = 0; px < kernel[0]; ++px) {
                const i64 at = (x + px) + shape[0] * ((yy + py) + shape[1] * (z + pz));
                a(row, c * kv + px + kernel[0] * (py + kernel[1] * pz)) = cdouble(y[c * ncal + at]);
              }
      }
  // A^H A's eigenvectors are A's right singular vectors, its eigenvalues the squared singular values.
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> eig(a.adjoint() * a);
  const Eigen::VectorXd s2 = eig.eigenvalues().cwiseMax(0.0);
  const double keep = threshold * threshold * s2.maxCoeff();
  int r = 0;
  for (i64 i = s2.size() - 1; i >= 0 && s2(i) >= keep; --i) ++r;
  return eig.eigenvectors().rightCols(r);
}

} // namespace

CoilSensitivities espirit_sensitivities(const KSpaceData &data, const Grid &grid, const SensitivityOptions &o,
                                        Backend backend) {
  const int coils = data.coils();
  std::array<i64, 3> shape{}, kernel{};
  const std::vector<cfloat> low_res =
      detail::low_resolution_images(data, grid, o.calibration, false, kCalibrationTolerance, backend);
  const std::vector<cfloat> y = calibration_kspace(low_res, coils, grid, o.calibration, shape);
  const int width = o.espirit_kernel != 0 ? o.espirit_kernel : grid.dims() == 3 ? 4 : 6;
  for (int a = 0; a < 3; ++a) kernel[static_cast<std::size_t>(a)] = shape[static_cast<std::size_t>(a)] > 1 ? width : 1;
  const Eigen::MatrixXcd v = signal_subspace(y, coils, shape, kernel, o.espirit_threshold);
  const i64 kv = kernel[0] * kernel[1] * kernel[2];

  // g_cc'[q] on the grid (q mod n), times (-1)^(q_x + q_y + q_z) so the inverse FFT's index i
  // is the voxel at coordinate i - n/2, then G_cc' everywhere by one inverse FFT per pair.
  const std::size_t n = static_cast<std::size_t>(grid.voxels());
  const int pairs = coils * (coils + 1) / 2;
  std::vector<cfloat> g(static_cast<std::size_t>(pairs) * n, cfloat(0));
  const double norm = 1.0 / static_cast<double>(kv);
  const auto slot = [&](i64 qx, i64 qy, i64 qz) {
    const auto wrap = [](i64 q, i64 e) { return ((q % e) + e) % e; };
    return static_cast<std::size_t>(grid.index(wrap(qx, grid.nx()), wrap(qy, grid.ny()), wrap(qz, grid.nz())));
  };
  int pair = 0;
  for (int c = 0; c < coils; ++c)
    for (int c2 = c; c2 < coils; ++c2, ++pair)
      for (i64 p = 0; p < kv; ++p)
        for (i64 p2 = 0; p2 < kv; ++p2) {
          const i64 q[3] = {p % kernel[0] - p2 % kernel[0], (p / kernel[0]) % kernel[1] - (p2 / kernel[0]) % kernel[1],
                            p / (kernel[0] * kernel[1]) - p2 / (kernel[0] * kernel[1])};
          // A = U S V^H: A's rows, the patches, are combinations of the conjugated columns of V.
          const cdouble term = std::conj((v.row(c * kv + p) * v.row(c2 * kv + p2).adjoint())(0, 0)) * norm;
          const double sign = ((q[0] + q[1] + q[2]) % 2 == 0) ? 1.0 : -1.0;
          g[static_cast<std::size_t>(pair) * n + slot(q[0], q[1], q[2])] += cfloat(term * sign);
        }
  const detail::GridFft<float> inverse(grid.extents(), FFTW_BACKWARD, 1);
  for (int k = 0; k < pairs; ++k) inverse.execute(g.data() + static_cast<std::size_t>(k) * n);

  std::vector<cfloat> maps(n * static_cast<std::size_t>(coils), cfloat(0));
#pragma omp parallel for schedule(static)
  for (i64 vox = 0; vox < static_cast<i64>(n); ++vox) {
    Eigen::MatrixXcd m(coils, coils);
    int k = 0;
    for (int c = 0; c < coils; ++c)
      for (int c2 = c; c2 < coils; ++c2, ++k) {
        m(c, c2) = cdouble(g[static_cast<std::size_t>(k) * n + static_cast<std::size_t>(vox)]);
        m(c2, c) = std::conj(m(c, c2));
      }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> eig(m);
    if (eig.eigenvalues()(coils - 1) < o.espirit_crop) continue;
    Eigen::VectorXcd s = eig.eigenvectors().col(coils - 1);
    cdouble align = 0; // <low-resolution images, s>
    for (int c = 0; c < coils; ++c)
      align += std::conj(cdouble(low_res[static_cast<std::size_t>(c) * n + static_cast<std::size_t>(vox)])) * s(c);
    if (std::abs(align) > 0) s *= std::conj(align) / std::abs(align);
    for (int c = 0; c < coils; ++c) maps[static_cast<std::size_t>(c) * n + static_cast<std::size_t>(vox)] = cfloat(s(c));
  }
  return CoilSensitivities(grid, coils, std::move(maps));
}

} // namespace mri
