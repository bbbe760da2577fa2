// InputBatch (SEMANTICS §2.8, §6.3): a step's token rows and their padding to a descriptor.

#include "attnrt/runner/input_batch.h"

#include <algorithm>
#include <limits>

#include "attnrt/runner/replay_check.h"
#include "core/fail.h"

namespace attnrt {

InputBatch::InputBatch(int max_num_reqs, int max_num_tokens, int num_bonus_tokens)
    : max_num_reqs_(max_num_reqs),
      max_num_tokens_(max_num_tokens),
      num_bonus_tokens_(num_bonus_tokens) {
  if (max_num_reqs <= 0 || max_num_tokens <= 0 || num_bonus_tokens <= 0) {
    fail(
        "InputBatch: max_num_reqs ({}), max_num_tokens ({}) and num_bonus_tokens ({}) must be "
        "positive",
        max_num_reqs, max_num_tokens, num_bonus_tokens);
  }
  const auto reqs = static_cast<std::size_t>(max_num_reqs);
  const auto tokens = static_cast<std::size_t>(max_num_tokens);
  idx_mapping_.assign(reqs, 0);
  query_start_loc_.assign(reqs + 1, 0);
  seq_lens_.assign(reqs, 0);
  positions_.assign(tokens, 0);
  is_padding_.assign(tokens, 0);
  logits_indices_.assign(tokens, 0);
  cu_num_logits_.assign(reqs + 1, 0);
}

void InputBatch::check_requests(std::span<const ScheduledRequest> requests) const {
  if (requests.size() > static_cast<std::size_t>(max_num_reqs_)) {
    fail("InputBatch: {} requests scheduled, but the batch holds at most {} (max_num_seqs)",
         requests.size(), max_num_reqs_);
  }
  std::int64_t num_tokens = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ScheduledRequest& r = requests[i];
    if (r.req_index < 0 || r.req_index >= max_num_reqs_) {
      fail("InputBatch: request {} uses slot {}; slots are 0..{}", i, r.req_index,
           max_num_reqs_ - 1);
    }
    if (r.num_scheduled_tokens <= 0 || r.num_computed_tokens < 0 || r.num_draft_tokens < 0) {
      fail(
          "InputBatch: request {} (slot {}) schedules {} tokens after {} computed with {} drafts; "
          "a scheduled request needs at least one token and no negative counts",
          i, r.req_index, r.num_scheduled_tokens, r.num_computed_tokens, r.num_draft_tokens);
    }
    if (static_cast<std::int64_t>(r.num_draft_tokens) + num_bonus_tokens_ >
        r.num_scheduled_tokens) {
      fail(
          "InputBatch: request {} (slot {}) verifies {} drafts + {} bonus tokens but schedules "
          "only {} tokens; schedule every draft token",
          i, r.req_index, r.num_draft_tokens, num_bonus_tokens_, r.num_scheduled_tokens);
    }
    if (static_cast<std::int64_t>(r.num_computed_tokens) + r.num_scheduled_tokens >
        std::numeric_limits<std::int32_t>::max()) {
      fail("InputBatch: request {} (slot {}) is longer than an int32 sequence length", i,
           r.req_index);
    }
    num_tokens += r.num_scheduled_tokens;
  }
  if (num_tokens > max_num_tokens_) {
    fail("InputBatch: {} tokens scheduled, but the batch holds at most {} (max_num_batched_tokens)",
         num_tokens, max_num_tokens_);
  }
}

void InputBatch::prepare(std::span<const ScheduledRequest> requests) {
  check_requests(requests);
  num_reqs_ = static_cast<int>(requests.size());
  int token = 0;
  int num_logits = 0;
  max_query_len_ = 0;
  max_seq_len_ = 0;
  has_prefill_ = false;
  query_start_loc_[0] = 0;
  cu_num_logits_[0] = 0;
  for (int i = 0; i < num_reqs_; ++i) {
    const ScheduledRequest& r = requests[i];
    idx_mapping_[i] = r.req_index;
    for (int j = 0; j < r.num_scheduled_tokens; ++j) {
      positions_[token + j] = r.num_computed_tokens + j;
    }
    token += r.num_scheduled_tokens;
    query_start_loc_[i + 1] = token;
    seq_lens_[i] = r.num_computed_tokens + r.num_scheduled_tokens;
    // Logits of the drafts and the bonus token: the last rows of the query (SEMANTICS §6.3).
    const int request_logits = r.num_draft_tokens + num_bonus_tokens_;
    for (int j = 0; j < request_logits; ++j)
      logits_indices_[num_logits + j] = token - request_logits + j;
    num_logits += request_logits;
    cu_num_logits_[i + 1] = num_logits;
    max_query_len_ = std::max(max_query_len_, r.num_scheduled_tokens);
    max_seq_len_ = std::max(max_seq_len_, seq_lens_[i]);
    has_prefill_ = has_prefill_ || r.num_computed_tokens < r.num_prompt_tokens;
  }
  num_tokens_ = token;
  num_logits_ = num_logits;
  num_reqs_padded_ = num_reqs_;
  num_tokens_padded_ = num_tokens_;
  std::fill_n(is_padding_.begin(), num_tokens_, 0);
}

void InputBatch::pad_to(const BatchExecutionDescriptor& descriptor, int num_active_loras,
                        int num_ubatches) {
  check_batch_fits(descriptor, runtime_batch(num_active_loras, num_ubatches));
  const int num_reqs_padded = descriptor.num_reqs.value_or(num_reqs_);
  const int num_tokens_padded = descriptor.num_tokens;
  if (num_reqs_padded > max_num_reqs_ || num_tokens_padded > max_num_tokens_) {
    fail(
        "InputBatch: {} pads to {} requests and {} tokens, but the batch holds {} and {}; size "
        "max_num_seqs and max_num_batched_tokens for the largest captured graph",
        descriptor.describe(), num_reqs_padded, num_tokens_padded, max_num_reqs_, max_num_tokens_);
  }
  std::fill(query_start_loc_.begin() + num_reqs_ + 1,
            query_start_loc_.begin() + num_reqs_padded + 1, num_tokens_);
  std::fill(seq_lens_.begin() + num_reqs_, seq_lens_.begin() + num_reqs_padded, 0);
  std::fill(positions_.begin() + num_tokens_, positions_.begin() + num_tokens_padded, 0);
  std::fill(is_padding_.begin() + num_tokens_, is_padding_.begin() + num_tokens_padded, 1);
  num_reqs_padded_ = num_reqs_padded;
  num_tokens_padded_ = num_tokens_padded;
}

RuntimeBatch InputBatch::runtime_batch(int num_active_loras, int num_ubatches) const {
  return RuntimeBatch{num_reqs_,        num_tokens_,    uniform_decode_token_count(),
                      num_active_loras, max_query_len_, num_ubatches};
}

std::optional<int> InputBatch::uniform_decode_token_count() const {
  return get_uniform_decode_token_count(num_reqs_, num_tokens_, max_query_len_, has_prefill_);
}

}  // namespace attnrt
