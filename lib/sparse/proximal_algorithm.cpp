// The proximal solvers' algorithm choice (mri/proximal_solvers.hpp).
#include <string>
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
// in closed form, and TV's is a problem of its own (ADMM or the primal-dual split handle both).
bool fista_applies(const std::vector<SparseTerm> &terms) {
  return terms.size() == 1 && terms.front().penalty != SparsePenalty::TotalVariation;
}

} // namespace

ProximalAlgorithm resolve_proximal_algorithm(ProximalAlgorithm requested, const std::vector<SparseTerm> &terms) {
  if (terms.empty()) detail::invalid_argument("terms", "none", "a proximal solver needs at least one sparse term");
  switch (requested) {
  case ProximalAlgorithm::Auto: return fista_applies(terms) ? ProximalAlgorithm::Fista : ProximalAlgorithm::Admm;
  case ProximalAlgorithm::Fista:
    if (!fista_applies(terms))
      detail::invalid_argument("algorithm", "fista",
                               "takes one wavelet or l1 term (terms: " + describe(terms) + "); use admm or primal-dual");
    return requested;
  case ProximalAlgorithm::Admm:
  case ProximalAlgorithm::PrimalDual: return requested;
  }
  detail::invalid_argument("algorithm", static_cast<int>(requested), "is not a ProximalAlgorithm");
}

} // namespace mri
