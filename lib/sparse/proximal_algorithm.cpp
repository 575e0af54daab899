// The proximal solvers' algorithm choice (mri/proximal_solvers.hpp).
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "mri/error.hpp"
#include "mri/proximal_solvers.hpp"

namespace mri {

const char *to_string(ProximalAlgorithm a) {
  switch (a) {
  case ProximalAlgorithm::Auto: return "auto";
  case ProximalAlgorithm::Fista: return "fista";
  case ProximalAlgorithm::Admm: return "admm";
  case ProximalAlgorithm::PrimalDual: return "primal-dual";
  }
  return "?";
}

namespace {

std::string describe(const std::vector<SparseTerm> &terms) {
  std::string s;
  for (const SparseTerm &t : terms) s += (s.empty() ? "" : " ") + to_string(t);
  return s;
}

// FISTA's proximal step is one term's proximal map on the image: a sum of terms has no such map
// (ADMM or the primal-dual split handle sums); TV's is solved by inner iterations over the image
// axes, and TV along the frames has none (mri/frame_terms.hpp).
bool fista_applies(const std::vector<SparseTerm> &terms) { return terms.size() == 1 && !is_temporal(terms[0]); }

} // namespace

ProximalAlgorithm resolve_proximal_algorithm(ProximalAlgorithm requested, const std::vector<SparseTerm> &terms) {
  if (terms.empty()) detail::invalid_argument("terms", "none", "a proximal solver needs at least one sparse term");
  switch (requested) {
  case ProximalAlgorithm::Auto: return fista_applies(terms) ? ProximalAlgorithm::Fista : ProximalAlgorithm::Admm;
  case ProximalAlgorithm::Fista:
    if (!fista_applies(terms))
      detail::invalid_argument("algorithm", "fista",
                               "takes one term with a proximal map on the image (terms: " + describe(terms) +
                                   "); use admm or primal-dual");
    return requested;
  case ProximalAlgorithm::Admm:
  case ProximalAlgorithm::PrimalDual: return requested;
  }
  detail::invalid_argument("algorithm", static_cast<int>(requested), "is not a ProximalAlgorithm");
}

void validate(const ProximalSettings &s, const std::string &name) {
  if (!(s.admm_rho > 0) || !std::isfinite(s.admm_rho)) detail::invalid_argument(name + ".admm_rho", s.admm_rho, "must be finite and > 0");
  if (!(s.admm_cg_tolerance >= 0) || !std::isfinite(s.admm_cg_tolerance))
    detail::invalid_argument(name + ".admm_cg_tolerance", s.admm_cg_tolerance, "must be finite and >= 0");
  const std::pair<const char *, int> counts[] = {{"admm_cg_iterations", s.admm_cg_iterations},
                                                 {"tv_prox_iterations", s.tv_prox_iterations},
                                                 {"power_iterations", s.power_iterations},
                                                 {"fista_power_iterations", s.fista_power_iterations}};
  for (const auto &[field, value] : counts)
    if (value < 1) detail::invalid_argument(name + "." + field, value, "must be >= 1");
}

} // namespace mri
