// A build without MPI (MRI_ENABLE_MPI off, or no MPI found): one process, every item in it.
#include "batch_mpi.hpp"

namespace mri::cli {

std::string mpi_description() { return "MPI: not built (MRI_ENABLE_MPI, or no MPI found at configure time)"; }

Ranks::Ranks() = default;
Ranks::~Ranks() = default;

int Ranks::all_or_none(const std::function<void()> &step) const {
  step();
  return kOk;
}

std::optional<std::vector<ItemOutcome>> Ranks::reconstruct(ReconInputs &in, const ReconOptions &options,
                                                           const BatchOptions &batch, Progress &progress) const {
  return reconstruct_batch(in, options, batch, progress);
}

} // namespace mri::cli
