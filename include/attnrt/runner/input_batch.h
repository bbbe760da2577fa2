#pragma once
// InputBatch: one step's per-token and per-request inputs — request slots, query_start_loc,
// seq_lens, positions, logits indices — and their padding to the BatchExecutionDescriptor the
// graph manager chose (SEMANTICS §2.8, §6.3). Buffers are sized at construction; a step
// overwrites them and hands out spans, so steady-state steps allocate nothing.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "attnrt/core/export.h"
#include "attnrt/runner/batch_descriptor.h"

namespace attnrt {

// One request scheduled this step, as the scheduler describes it.
struct ScheduledRequest {
  int req_index = 0;             // persistent request slot: its block-table rows
  int num_computed_tokens = 0;   // tokens already in the KV cache
  int num_scheduled_tokens = 0;  // this step's query length, drafts included
  int num_prompt_tokens = 0;     // the request prefills while fewer tokens are computed
  int num_draft_tokens = 0;      // speculative tokens verified this step
};

class ATTNRT_API InputBatch {
 public:
  // `num_bonus_tokens`: tokens sampled per request and step besides the drafts' (normally 1).
  InputBatch(int max_num_reqs, int max_num_tokens, int num_bonus_tokens = 1);

  // Lays out `requests` in order: token rows, positions, seq_lens and logits indices (the last
  // drafts + bonus rows of each query). Unpadded until pad_to. Throws Error naming the request
  // when counts do not add up or exceed the buffers; the previous step's state is then kept.
  void prepare(std::span<const ScheduledRequest> requests);
  // Pads the prepared batch to `descriptor` after checking that it fits (check_batch_fits with
  // the batch's LoRA count and micro-batches): tokens to descriptor.num_tokens, requests to
  // descriptor.num_reqs when set. Padded query_start_loc entries equal the real token total,
  // padded seq_lens and positions are 0, and is_padding marks the padded token rows.
  void pad_to(const BatchExecutionDescriptor& descriptor, int num_active_loras = 0,
              int num_ubatches = 1);

  // The batch as dispatch and the replay check see it.
  RuntimeBatch runtime_batch(int num_active_loras = 0, int num_ubatches = 1) const;

  int num_reqs() const { return num_reqs_; }
  int num_tokens() const { return num_tokens_; }
  int num_reqs_padded() const { return num_reqs_padded_; }
  int num_tokens_padded() const { return num_tokens_padded_; }
  int max_query_len() const { return max_query_len_; }
  int max_seq_len() const { return max_seq_len_; }
  bool has_prefill() const { return has_prefill_; }
  // Every request decodes the same number of tokens (SEMANTICS §2.8), or none.
  std::optional<int> uniform_decode_token_count() const;

  std::span<const std::int32_t> idx_mapping() const { return first(idx_mapping_, num_reqs_); }
  std::span<const std::int32_t> query_start_loc() const {
    return first(query_start_loc_, num_reqs_padded_ + 1);
  }
  std::span<const std::int32_t> seq_lens() const { return first(seq_lens_, num_reqs_padded_); }
  std::span<const std::int64_t> positions() const { return first(positions_, num_tokens_padded_); }
  std::span<const std::uint8_t> is_padding() const {
    return first(is_padding_, num_tokens_padded_);
  }
  std::span<const std::int32_t> logits_indices() const {
    return first(logits_indices_, num_logits_);
  }
  std::span<const std::int32_t> cu_num_logits() const {
    return first(cu_num_logits_, num_reqs_ + 1);
  }

 private:
  template <typename T>
  static std::span<const T> first(const std::vector<T>& buffer, int n) {
    return {buffer.data(), static_cast<std::size_t>(n)};
  }
  void check_requests(std::span<const ScheduledRequest> requests) const;

  int max_num_reqs_;
  int max_num_tokens_;
  int num_bonus_tokens_;
  std::vector<std::int32_t> idx_mapping_;      // [max_num_reqs]
  std::vector<std::int32_t> query_start_loc_;  // [max_num_reqs + 1]
  std::vector<std::int32_t> seq_lens_;         // [max_num_reqs]
  std::vector<std::int64_t> positions_;        // [max_num_tokens]
  std::vector<std::uint8_t> is_padding_;       // [max_num_tokens]
  std::vector<std::int32_t> logits_indices_;   // [max_num_tokens]
  std::vector<std::int32_t> cu_num_logits_;    // [max_num_reqs + 1]
  int num_reqs_ = 0;
  int num_tokens_ = 0;
  int num_reqs_padded_ = 0;
  int num_tokens_padded_ = 0;
  int num_logits_ = 0;
  int max_query_len_ = 0;
  int max_seq_len_ = 0;
  bool has_prefill_ = false;
};

}  // namespace attnrt
