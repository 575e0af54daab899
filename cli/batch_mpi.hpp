#pragma once
// `mri recon` under mpirun (docs/scaling.md): a batch's items spread over the MPI ranks. Every
// rank reads the file's headers (so each knows the items, labels and grids); rank 0 alone reads
// the samples and hands each item out as it is read, in item order, to a free slot of
// whichever rank (a rank asks for an item whenever one of its slots is free, one per worker and
// one ahead, its next item sent while its workers are busy: dynamic, so a rank slowed down, rank 0
// by the reading, takes fewer); each rank reconstructs its items with
// reconstruct_batch (its --jobs, OpenMP teams, Q cache); rank 0 gathers the images, reports and
// errors and writes the outputs, in item order: the same files as a one-process run, whichever
// rank ran an item. One Q per distinct trajectory: rank 0 names the first item of each handed
// out (its "leader", on whichever rank runs it); the others wait until it has run, then load its
// Q from a Q cache that the ranks of a host share (--q-cache, or one directory of the run per
// host); when it failed, they compute Q themselves. A failing item is reported by rank 0 (the
// item, the rank, the error); the others go on.
//
// A build without MPI (cli/batch_mpi_off.cpp), a run without mpirun or with one rank: one
// process, exactly reconstruct_batch. MPI is called from the main thread only (FUNNELED), and
// never in a blocking call while items are reconstructed: OpenMPI's blocking calls spin, taking
// the core of a rank's reconstruction (docs/scaling.md).
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batch.hpp"

namespace mri::cli {

// "MPI: Open MPI v4.1.4, ..." (the library's own words) or "MPI: not built" (mri --version).
std::string mpi_description();

// This process's place in a run: an MPI rank when started by mpirun (MPI initialised by the
// constructor, finalised by the destructor after every rank has arrived), else rank 0 of 1.
// One per process.
class Ranks {
public:
  Ranks();
  ~Ranks();
  Ranks(const Ranks &) = delete;
  Ranks &operator=(const Ranks &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Runs `step` on every rank. One rank: exceptions propagate as without MPI. Several: when it
  // throws somewhere (a rank cannot open the file), the first rank it threw on says so in one
  // line ("mri: rank 1 of 2: ...") and every rank returns that error's exit code; kOk otherwise.
  int all_or_none(const std::function<void()> &step) const;

  // The batch over the ranks: on rank 0 every item's outcome in item order (an item that failed
  // elsewhere: its error names the rank; each report says "rank"), none on the others. Inputs and
  // options must be the same on every rank (all_or_none around load_inputs). An error outside
  // the items (the file damaged mid-way on rank 0) ends every rank (MPI_Abort) after one line.
  std::optional<std::vector<ItemOutcome>> reconstruct(ReconInputs &inputs, const ReconOptions &options,
                                                      const BatchOptions &batch, Progress &progress) const;

private:
  int rank_ = 0, size_ = 1;
};

} // namespace mri::cli
