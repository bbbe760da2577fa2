// The ranks of MPI_COMM_WORLD (built with ATTNRT_MPI). Errors return instead of aborting
// (MPI_ERRORS_RETURN) and every collective is non-blocking, polled against a deadline, so a
// failed or stalled rank surfaces as an Error naming the collective. A rank that hits an error
// aborts the job; the ranks mpirun then stops print one line saying so.

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include "core/fail.h"
#include "run/rank_group.h"

namespace attnrt::cli {
namespace {

using Clock = std::chrono::steady_clock;

char g_stopped_line[160];  // written by the signal handler: async-signal-safe

extern "C" void on_stop_signal(int) {
  const ssize_t ignored = write(STDERR_FILENO, g_stopped_line, std::strlen(g_stopped_line));
  (void)ignored;
  _exit(2);
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(int rank, int world, double timeout_s)
      : rank_(rank), world_(world), timeout_s_(timeout_s) {}

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  double seconds_in_collectives() const override { return seconds_; }

  void all_reduce_sum(std::span<float> data) override {
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT,
                         MPI_SUM, MPI_COMM_WORLD, &request),
          "all_reduce");
    wait(request, "all_reduce");
  }
  void broadcast(std::span<std::byte> data, int root) override {
    MPI_Request request;
    check(MPI_Ibcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, root, MPI_COMM_WORLD,
                     &request),
          "broadcast");
    wait(request, "broadcast");
  }

 private:
  void check(int code, const char* what) const {
    if (code != MPI_SUCCESS) {
      fail("MPI {} failed: {}", what, mpi_error_text(code));
    }
  }
  // Polls until the collective completes; yields the core to a rank that shares it.
  void wait(MPI_Request& request, const char* what) {
    const Clock::time_point start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(timeout_s_);
    int done = 0;
    for (long polls = 0;; ++polls) {
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
      if (done) break;
      if (Clock::now() > deadline) {
        fail(
            "an MPI {} waited {} s for the other ranks (--collective-timeout); one of them "
            "failed or stalled",
            what, timeout_s_);
      }
      if (polls > 1000) std::this_thread::yield();
    }
    seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
  }

  int rank_;
  int world_;
  double timeout_s_;
  double seconds_ = 0;
};

class MpiGroup final : public RankGroup {
 public:
  explicit MpiGroup(double timeout_s) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0;
    int world = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    std::snprintf(g_stopped_line, sizeof g_stopped_line,
                  "attnrt: error: rank %d stopped: another rank failed or exited (see its line or "
                  "mpirun's)\n",
                  rank);
    std::signal(SIGTERM, on_stop_signal);
    communicator_.emplace(rank, world, timeout_s);
  }
  ~MpiGroup() override { MPI_Finalize(); }

  Communicator& communicator() override { return *communicator_; }
  std::string transport() const override { return "MPI"; }
  void abort_all(const std::string& line) override {
    std::cerr << line + "\n" << std::flush;
    std::signal(SIGTERM, SIG_DFL);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

 private:
  std::optional<MpiCommunicator> communicator_;
};

}  // namespace

std::unique_ptr<RankGroup> join_mpi_group(double collective_timeout_s) {
  return std::make_unique<MpiGroup>(collective_timeout_s);
}

}  // namespace attnrt::cli
