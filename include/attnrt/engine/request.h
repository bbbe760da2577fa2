#pragma once
// Request: one generation request as the scheduler tracks it (vLLM v1's Request, simplified): its
// tokens, how many of them are in the KV cache, its block-table row while running and its manager
// blocks in every KV cache group. The scheduler owns and mutates requests; others read them.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "attnrt/core/export.h"
#include "attnrt/engine/block_pool.h"

namespace attnrt {

using RequestId = std::int64_t;

// waiting: not yet admitted; running: holds a slot and blocks; preempted: lost its blocks and
// waits to recompute them; finished: done, blocks and slot returned.
enum class RequestStatus { waiting, running, preempted, finished };

ATTNRT_API std::string_view request_status_name(RequestStatus status);  // "waiting", "running", ...

struct ATTNRT_API Request {
  RequestId id = 0;
  std::vector<std::int32_t> token_ids;  // the prompt, then the generated tokens
  int num_prompt_tokens = 0;
  int max_tokens = 1;  // tokens to generate at most
  // Tokens whose KV is written or scheduled to be: it advances when a step is scheduled, and
  // drops to 0 on preemption (the KV is recomputed from token_ids, generated tokens included).
  int num_computed_tokens = 0;
  // Tokens known when the request was last admitted: computing them is prefill, then decode.
  int num_prefill_tokens = 0;
  RequestStatus status = RequestStatus::waiting;
  int slot = -1;  // block-table row (0..max_num_seqs-1) while running, else -1
  int num_preemptions = 0;
  // Per KV cache group, by block-table column. NULL_BLOCK_ID marks a column whose block was
  // returned because a sliding window moved past it.
  std::vector<std::vector<BlockId>> block_ids;

  int num_tokens() const { return static_cast<int>(token_ids.size()); }
  int num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  std::span<const std::int32_t> prompt_token_ids() const {
    return std::span(token_ids).first(static_cast<std::size_t>(num_prompt_tokens));
  }
  std::span<const std::int32_t> output_token_ids() const {
    return std::span(token_ids).subspan(static_cast<std::size_t>(num_prompt_tokens));
  }
  bool is_finished() const { return status == RequestStatus::finished; }
  // Blocks the request holds in `group`, null placeholders excluded.
  int num_owned_blocks(int group) const;
};

}  // namespace attnrt
