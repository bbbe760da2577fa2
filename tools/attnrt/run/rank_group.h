#pragma once
// RankGroup: the ranks `attnrt run` runs on. Launched by mpirun (OpenMPI sets
// OMPI_COMM_WORLD_SIZE) in a build with MPI (ATTNRT_MPI), the processes of MPI_COMM_WORLD;
// otherwise this process alone. Collectives give up after `collective_timeout_s` seconds, so a
// rank that died or stalled stops the others with one line instead of a hang.

#include <memory>
#include <string>

#include "attnrt/engine/communicator.h"

namespace attnrt::cli {

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual Communicator& communicator() = 0;
  virtual std::string transport() const = 0;  // "MPI" or "one process"
  // After an error on this rank: print `line` once and stop every rank. MPI: MPI_Abort (the
  // other ranks print that they were stopped); one process: nothing to stop.
  virtual void abort_all(const std::string& line) = 0;
};

// Throws Error for mpirun without MPI support in this build.
std::unique_ptr<RankGroup> join_rank_group(double collective_timeout_s);

#ifdef ATTNRT_HAS_MPI
std::unique_ptr<RankGroup> join_mpi_group(double collective_timeout_s);
#endif

}  // namespace attnrt::cli
