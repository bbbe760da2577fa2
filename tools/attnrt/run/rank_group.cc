// The one-process group, and the choice between it and MPI.

#include "run/rank_group.h"

#include <cstdlib>
#include <string_view>

#include "core/fail.h"

namespace attnrt::cli {
namespace {

class OneProcess final : public RankGroup {
 public:
  Communicator& communicator() override { return communicator_; }
  std::string transport() const override { return "one process"; }
  void abort_all(const std::string&) override {}

 private:
  SingleProcessCommunicator communicator_;
};

// OpenMPI's launcher tells each process the size of its world.
int launched_world_size() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size == nullptr ? 0 : std::atoi(size);
}

}  // namespace

std::unique_ptr<RankGroup> join_rank_group([[maybe_unused]] double collective_timeout_s) {
  if (launched_world_size() == 0) return std::make_unique<OneProcess>();
#ifdef ATTNRT_HAS_MPI
  return join_mpi_group(collective_timeout_s);
#else
  fail(
      "this attnrt was built without MPI, so it cannot run as one of the {} ranks mpirun "
      "started; install libopenmpi-dev and reconfigure (ATTNRT_MPI=ON)",
      launched_world_size());
#endif
}

}  // namespace attnrt::cli
