#pragma once
// The operations fuzz_step_inputs decodes from its bytes, each checked against a plain model of
// what BlockTables and InputBatch should hold (their headers' contracts).

#include <cstdint>
#include <vector>

#include "attnrt/runner/input_batch.h"
#include "fuzz_support.h"
#include "step_rig.h"

namespace attnrt::fuzz {

// What one request slot should hold: per KV cache group the manager block ids appended since it
// was last overwritten or removed, and how far the request has run.
struct SlotModel {
  std::vector<std::vector<std::int32_t>> ids;  // per group
  int computed = 0;                            // tokens with mapped slots
  int prompt = 0;                              // prefill while computed < prompt
};

// An InputBatch's observable state, to show that a call that threw changed nothing.
struct BatchSnapshot {
  int num_reqs = 0, num_tokens = 0, num_reqs_padded = 0, num_tokens_padded = 0;
  int max_query_len = 0, max_seq_len = 0;
  bool has_prefill = false;
  std::vector<std::int32_t> idx_mapping, query_start_loc, seq_lens, logits_indices;
  std::vector<std::int64_t> positions;
  std::vector<std::uint8_t> is_padding;

  static BatchSnapshot of(const InputBatch& batch);
  friend bool operator==(const BatchSnapshot&, const BatchSnapshot&) = default;
};

class StepOps {
 public:
  StepOps(StepRig& rig, ByteReader& in);

  // append_block_ids on a (possibly invalid) slot with valid and invalid ids.
  void append(bool overwrite);
  void remove();
  // prepare → dispatch (or a fuzzed descriptor) → pad_to → gather → slot mappings → translate
  // → fast prefill → metadata, with counts from the model or raw.
  void step();
  // The same calls with raw arguments.
  void gather_raw();
  void slot_mappings_raw();
  void graph_manager_raw();
  // Every row equals the model's.
  void check_tables() const;

 private:
  int pick_slot();
  std::int32_t block_id();
  ScheduledRequest scheduled_request();
  bool prepare_should_succeed(const std::vector<ScheduledRequest>& requests) const;
  void check_prepared(const std::vector<ScheduledRequest>& requests) const;
  void pad(int num_active_loras);
  void pad_raw();
  bool map_slots();
  bool slots_should_map() const;
  void check_slots() const;
  void check_gathered(const std::vector<std::int32_t>& idx_mapping, int num_reqs_padded) const;
  bool has_drafts() const;
  bool runner_batch() const;
  void finish_step();

  StepRig& rig_;
  ByteReader& in_;
  int num_groups_;
  int max_reqs_;
  int max_tokens_;
  std::int64_t num_blocks_;
  std::vector<SlotModel> slots_;
  std::vector<ScheduledRequest> prepared_;  // the batch of the last successful prepare
  BatchExecutionDescriptor descriptor_;     // what the prepared batch was padded to
  int num_active_loras_ = 0;
  bool dispatched_ = false;  // padded to dispatch's answer, as the engine does
};

}  // namespace attnrt::fuzz
