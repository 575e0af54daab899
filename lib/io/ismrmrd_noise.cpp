// The coils' noise statistics from ISMRMRD noise scans, and prewhitening with them.
#include <Eigen/Dense>

#include "mri/error.hpp"
#include "mri/io/ismrmrd.hpp"

namespace mri {

std::vector<cdouble> noise_covariance(const std::vector<std::vector<cfloat>> &noise, int coils) {
  if (noise.empty()) return {};
  if (coils < 1) detail::invalid_argument("noise_covariance: coils", coils, "must be at least 1");
  const auto c = static_cast<std::size_t>(coils);
  std::vector<cdouble> cov(c * c);
  std::size_t total = 0;
  for (std::size_t s = 0; s < noise.size(); ++s) {
    if (noise[s].size() % c != 0)
      detail::invalid_argument("noise_covariance: noise[" + std::to_string(s) + "].size()", noise[s].size(),
                               "not a multiple of coils = " + std::to_string(coils));
    const std::size_t n = noise[s].size() / c;
    for (std::size_t i = 0; i < c; ++i)
      for (std::size_t j = 0; j < c; ++j)
        for (std::size_t k = 0; k < n; ++k)
          cov[i * c + j] += cdouble(noise[s][i * n + k]) * std::conj(cdouble(noise[s][j * n + k]));
    total += n;
  }
  if (total < 2) return {};
  for (auto &v : cov) v /= static_cast<double>(total - 1);
  return cov;
}

KSpaceData prewhiten(const KSpaceData &data, const std::vector<cdouble> &covariance) {
  const auto c = static_cast<Eigen::Index>(data.coils());
  if (covariance.size() != static_cast<std::size_t>(c * c))
    detail::invalid_argument("prewhiten: covariance.size()", covariance.size(),
                             "must be coils^2 = " + std::to_string(c * c));
  Eigen::MatrixXcd cov(c, c);
  for (Eigen::Index i = 0; i < c; ++i)
    for (Eigen::Index j = 0; j < c; ++j) cov(i, j) = covariance[static_cast<std::size_t>(i * c + j)];
  const Eigen::LLT<Eigen::MatrixXcd> llt(cov);
  if (llt.info() != Eigen::Success)
    detail::invalid_argument("prewhiten: covariance", "the noise scans' matrix", "not positive definite");
  // Whitening W = L^{-1}, cov = L L^H: the noise W n has identity covariance.
  const Eigen::MatrixXcd w = llt.matrixL().solve(Eigen::MatrixXcd::Identity(c, c));
  const std::size_t m = data.samples_per_coil();
  std::vector<cfloat> out(data.samples().size());
  const auto &in = data.samples();
  for (std::size_t s = 0; s < m; ++s)
    for (Eigen::Index i = 0; i <= c - 1; ++i) {
      cdouble sum = 0;
      for (Eigen::Index j = 0; j <= i; ++j) sum += w(i, j) * cdouble(in[static_cast<std::size_t>(j) * m + s]);
      out[static_cast<std::size_t>(i) * m + s] = cfloat(sum);
    }
  return KSpaceData(data.trajectory(), std::move(out), data.weights(), data.coils(),
                    std::vector<float>(data.sample_times().begin(), data.sample_times().end()));
}

} // namespace mri
