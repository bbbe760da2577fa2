#pragma once
// StepBroadcast: how tensor-parallel ranks follow rank 0's scheduler. Rank 0 sends each step's
// SchedulerOutput with the tokens it computes; the other ranks rebuild the same output around
// mirror requests that hold what the step loop reads (id, tokens, prefill length, blocks), so
// every rank lays out the same batch, pads it the same way and writes the same slots.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "attnrt/engine/communicator.h"
#include "attnrt/engine/scheduler_output.h"

namespace attnrt {

class StepBroadcast {
 public:
  StepBroadcast(Communicator& communicator, int num_groups, int max_num_seqs);

  // Rank 0.
  void send(const SchedulerOutput& output);
  void send_stop();  // no request is left: the other ranks' step() returns false
  // The other ranks: the step rank 0 sent, or nullptr after send_stop. The output and its
  // requests stay valid until the next call. Throws Error for a malformed message.
  const SchedulerOutput* receive();

 private:
  void decode();
  void decode_released(std::vector<ReleasedRequest>& released, bool forget);
  void decode_entry();
  std::int64_t next();

  Communicator& communicator_;
  std::vector<std::int64_t> message_;
  std::size_t read_ = 0;
  std::unordered_map<RequestId, Request> mirrors_;
  SchedulerOutput output_;
  std::vector<int> first_new_column_;
};

}  // namespace attnrt
