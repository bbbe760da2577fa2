#pragma once
// SchedulerOutput: what one step computes (vLLM v1's SchedulerOutput, simplified): the requests
// scheduled with their token counts and the manager blocks appended to their block lists, and
// the requests whose block-table rows were released. The engine applies `finished` and
// `preempted` first (BlockTables::remove_request), then each scheduled request's new blocks
// (BlockTables::append_block_ids(slot, new_block_ids(i), overwrite)).

#include <span>
#include <vector>

#include "attnrt/core/export.h"
#include "attnrt/engine/block_pool.h"
#include "attnrt/engine/request.h"

namespace attnrt {

struct SchedulerEntry {
  const Request* request = nullptr;  // valid until the next Scheduler::schedule()
  int slot = -1;                     // block-table row
  int num_computed_tokens = 0;       // KV already written: the position of the first token
  int num_scheduled_tokens = 0;      // a prefill chunk, or 1 decode token
  bool is_prefill = false;           // computes tokens known at admission (prompt or replay)
  bool samples = false;              // reaches the last known token: its logits give a token
  bool overwrite = false;            // (re)admitted: its block-table rows restart at column 0
};

struct ReleasedRequest {
  RequestId request_id = 0;
  int slot = -1;  // the block-table row it held
};

class ATTNRT_API SchedulerOutput {
 public:
  SchedulerOutput() = default;
  SchedulerOutput(const SchedulerOutput&) = delete;  // its spans point into its own storage
  SchedulerOutput& operator=(const SchedulerOutput&) = delete;
  SchedulerOutput(SchedulerOutput&&) = default;
  SchedulerOutput& operator=(SchedulerOutput&&) = default;

  // Running requests in admission order, then requests admitted this step (FCFS).
  std::vector<SchedulerEntry> scheduled;
  std::vector<ReleasedRequest> finished;   // finished by the previous update_from_output
  std::vector<ReleasedRequest> preempted;  // preempted by this step; they resume with overwrite
  int total_num_scheduled_tokens = 0;
  bool has_prefill = false;

  int num_groups() const { return num_groups_; }
  // The manager block ids appended to scheduled[index]'s block lists this step, one span per KV
  // cache group (all of its blocks when overwrite is set).
  std::span<const std::span<const BlockId>> new_block_ids(int index) const;

  // Building (the Scheduler): capacities are reserved once so that steps do not allocate.
  void reserve(int num_groups, int max_num_seqs, int max_new_block_ids);
  void clear();
  // Appends `entry` with the blocks of `request` from column first_new_column[g] of each group.
  void add(const SchedulerEntry& entry, std::span<const int> first_new_column);
  void finalize();  // builds the spans of new_block_ids

 private:
  int num_groups_ = 0;
  std::vector<BlockId> block_ids_;               // every scheduled request's new ids, in order
  std::vector<int> offsets_;                     // [scheduled × groups + 1] into block_ids_
  std::vector<std::span<const BlockId>> spans_;  // [scheduled × groups]
};

}  // namespace attnrt
