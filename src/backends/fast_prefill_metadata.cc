// make_kv_sharing_fast_prefill_common_attn_metadata (SEMANTICS §6.2): a prefill step seen by the
// fast-prefill layers, whose queries are only the rows whose logits are sampled.

#include <algorithm>

#include "attnrt/backends/fast_prefill_backend.h"
#include "core/fail.h"

namespace attnrt {
namespace {

void check_logits_fields(const CommonAttentionMetadata& common,
                         std::span<std::int32_t> query_start_loc_out) {
  if (!common.num_logits_indices || !common.max_logits_per_req) {
    fail(
        "fast prefill needs the logits rows of the step, but the attention metadata has no {}; "
        "pass the FastPrefillHelper's logits indices to build_attn_metadata",
        !common.num_logits_indices ? "num_logits_indices" : "max_logits_per_req");
  }
  const int num_logits = *common.num_logits_indices;
  if (num_logits < 0 ||
      static_cast<std::size_t>(num_logits) > common.logits_indices_padded.size()) {
    fail("fast prefill: num_logits_indices {} exceeds the {} padded logits indices", num_logits,
         common.logits_indices_padded.size());
  }
  if (common.num_reqs < 0 ||
      query_start_loc_out.size() < static_cast<std::size_t>(common.num_reqs) + 1 ||
      common.query_start_loc_cpu.size() < static_cast<std::size_t>(common.num_reqs) + 1) {
    fail(
        "fast prefill: query_start_loc of {} requests needs {} entries, got {} (input) and {} "
        "(output)",
        common.num_reqs, common.num_reqs + 1, common.query_start_loc_cpu.size(),
        query_start_loc_out.size());
  }
}

// The request whose query holds token `index`: vLLM's bucketize(index, qsl[1:], right=True).
int request_of_token(std::span<const std::int32_t> request_ends, std::int32_t index) {
  return static_cast<int>(std::upper_bound(request_ends.begin(), request_ends.end(), index) -
                          request_ends.begin());
}

}  // namespace

CommonAttentionMetadata make_kv_sharing_fast_prefill_common_attn_metadata(
    const CommonAttentionMetadata& common, std::span<std::int32_t> query_start_loc_out) {
  if (common.max_query_len == 1) return common;  // pure decode: every row is a logits row
  check_logits_fields(common, query_start_loc_out);
  const int num_reqs = common.num_reqs;
  const std::span<const std::int32_t> request_ends =
      common.query_start_loc_cpu.subspan(1, static_cast<std::size_t>(num_reqs));
  const std::span<const std::int32_t> logits =
      common.logits_indices_padded.first(static_cast<std::size_t>(*common.num_logits_indices));

  // Count the logits rows per request, then prefix-sum them into the new query_start_loc.
  std::fill_n(query_start_loc_out.begin(), num_reqs + 1, 0);
  for (const std::int32_t index : logits) {
    const int request = request_of_token(request_ends, index);
    if (index < 0 || request >= num_reqs) {
      fail("fast prefill: logits index {} lies outside the step's {} query tokens", index,
           num_reqs == 0 ? 0 : request_ends.back());
    }
    ++query_start_loc_out[request + 1];
  }
  for (int r = 0; r < num_reqs; ++r) query_start_loc_out[r + 1] += query_start_loc_out[r];

  CommonAttentionMetadata fast = common;
  const auto new_query_start_loc =
      std::span<const std::int32_t>(query_start_loc_out.first(num_reqs + 1));
  fast.query_start_loc = new_query_start_loc;
  fast.query_start_loc_cpu = new_query_start_loc;
  fast.num_actual_tokens = *common.num_logits_indices;
  fast.max_query_len = *common.max_logits_per_req;
  fast.causal = true;
  fast.positions = {};
  fast.encoder_seq_lens = {};
  return fast;
}

}  // namespace attnrt
