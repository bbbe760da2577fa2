#pragma once
// Communicator: what tensor-parallel ranks exchange, without naming a transport. The engine and
// its model call it; a launcher provides it (tools/attnrt's MPI one, a test's threads, a host
// engine's own collectives). Every rank must call the same collectives in the same order with
// the same sizes; an implementation that cannot complete one (a rank died, timed out) throws
// Error, so a rank never waits forever.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attnrt/core/export.h"

namespace attnrt {

class ATTNRT_API Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world() const = 0;
  // data = the element-wise sum of every rank's data (the same bytes on every rank).
  virtual void all_reduce_sum(std::span<float> data) = 0;
  // Every rank's data becomes root's; the sizes must agree.
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // Seconds this rank spent inside collectives, for the run report.
  virtual double seconds_in_collectives() const = 0;
};

// The world of one rank: every collective is the identity.
class ATTNRT_API SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  void all_reduce_sum(std::span<float>) override {}
  void broadcast(std::span<std::byte>, int) override {}
  double seconds_in_collectives() const override { return 0; }
};

// Root's values on every rank (the length travels first).
ATTNRT_API void broadcast_values(Communicator& communicator, std::vector<std::int64_t>& values,
                                 int root);
ATTNRT_API void broadcast_string(Communicator& communicator, std::string& text, int root);
// Every rank's text, by rank.
ATTNRT_API std::vector<std::string> all_gather_strings(Communicator& communicator,
                                                       const std::string& text);
ATTNRT_API std::vector<double> all_gather_values(Communicator& communicator, double value);

// A start-up gate: each rank passes what went wrong on it (empty: nothing). When any rank
// failed, every rank throws Error with one line: a failed rank its own message, the others
// "rank R failed <stage>: <its message>" for the first rank that failed.
ATTNRT_API void check_every_rank(Communicator& communicator, const std::string& failure,
                                 const std::string& stage);

}  // namespace attnrt
