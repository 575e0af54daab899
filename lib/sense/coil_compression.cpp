// Coil compression by the principal components of the coil dimension (BART's `cc -S`).
#include <Eigen/Dense>
#include <string>

#include "mri/coils.hpp"
#include "mri/error.hpp"

namespace mri {

namespace {
// A^H A of the M x C sample matrix (coil c's samples at c * M), in double.
Eigen::MatrixXcd coil_covariance(const KSpaceData &data) {
  const int c_count = data.coils();
  const std::size_t m = data.samples_per_coil();
  const auto &y = data.samples();
  Eigen::MatrixXcd cov = Eigen::MatrixXcd::Zero(c_count, c_count);
  for (int i = 0; i < c_count; ++i)
    for (int j = i; j < c_count; ++j) {
      cdouble s = 0;
      const cfloat *yi = y.data() + static_cast<std::size_t>(i) * m;
      const cfloat *yj = y.data() + static_cast<std::size_t>(j) * m;
      for (std::size_t k = 0; k < m; ++k) s += std::conj(cdouble(yi[k])) * cdouble(yj[k]);
      cov(i, j) = s;
      cov(j, i) = std::conj(s);
    }
  return cov;
}
} // namespace

CoilCompression::CoilCompression(const KSpaceData &data, int virtual_coils)
    : coils_(data.coils()), virtual_coils_(virtual_coils) {
  if (virtual_coils < 1 || virtual_coils > coils_)
    detail::invalid_argument("virtual_coils", virtual_coils,
                             "must be in [1, data.coils() = " + std::to_string(coils_) + "]");
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> eig(coil_covariance(data));
  // Eigenvalues ascend: the principal components are the last columns.
  const Eigen::VectorXd s2 = eig.eigenvalues().cwiseMax(0.0);
  const double total = s2.sum();
  double kept = 0;
  matrix_.resize(static_cast<std::size_t>(coils_) * static_cast<std::size_t>(virtual_coils_));
  for (int v = 0; v < virtual_coils_; ++v) {
    const int col = coils_ - 1 - v;
    kept += s2(col);
    for (int c = 0; c < coils_; ++c)
      matrix_[static_cast<std::size_t>(v) * static_cast<std::size_t>(coils_) + static_cast<std::size_t>(c)] =
          cfloat(eig.eigenvectors()(c, col));
  }
  energy_kept_ = total > 0 ? kept / total : 1.0;
}

// out[v * n + i] = sum_c V_cv in[c * n + i].
void CoilCompression::combine(std::span<const cfloat> in, std::size_t n, std::vector<cfloat> &out) const {
  out.assign(static_cast<std::size_t>(virtual_coils_) * n, cfloat(0));
  for (int v = 0; v < virtual_coils_; ++v)
    for (int c = 0; c < coils_; ++c) {
      const cfloat w = matrix_[static_cast<std::size_t>(v) * static_cast<std::size_t>(coils_) + static_cast<std::size_t>(c)];
      const cfloat *src = in.data() + static_cast<std::size_t>(c) * n;
      cfloat *dst = out.data() + static_cast<std::size_t>(v) * n;
      for (std::size_t i = 0; i < n; ++i) dst[i] += w * src[i];
    }
}

KSpaceData CoilCompression::apply(const KSpaceData &data) const {
  if (data.coils() != coils_)
    detail::invalid_argument("data.coils()", data.coils(), "must equal the compression's coils " + std::to_string(coils_));
  std::vector<cfloat> out;
  combine(data.samples(), data.samples_per_coil(), out);
  return KSpaceData(data.trajectory(), std::move(out), data.weights(), virtual_coils_);
}

CoilSensitivities CoilCompression::apply(const CoilSensitivities &maps) const {
  if (maps.coils() != coils_)
    detail::invalid_argument("maps.coils()", maps.coils(), "must equal the compression's coils " + std::to_string(coils_));
  std::vector<cfloat> out;
  combine(maps.values(), maps.voxels(), out);
  return CoilSensitivities(maps.grid(), virtual_coils_, std::move(out));
}

} // namespace mri
