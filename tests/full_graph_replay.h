#pragma once
// An emulated FULL-graph replay of a PagedBatch (paged_attention_batch.h): metadata built once at
// capture sizes, then replayed with the step's arrays refreshed in place, as the runner does.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "attnrt/attention/attention_metadata_builder.h"
#include "paged_attention_batch.h"

namespace attnrt::testing {

// SEMANTICS §0: a FULL graph captured at padded sizes (frozen num_reqs, num_actual_tokens,
// max_query_len, max_seq_len) and replayed with refreshed arrays gives the eager results.
class FullGraphReplay {
 public:
  FullGraphReplay(AttentionMetadataBuilder& builder, int num_reqs, int num_tokens, int cols)
      : num_tokens_(num_tokens),
        cols_(cols),
        query_start_loc_(num_reqs + 1),
        seq_lens_(num_reqs, 1),
        block_table_(static_cast<std::size_t>(num_reqs) * cols, 0),
        slot_mapping_(num_tokens, -1) {
    std::iota(query_start_loc_.begin(), query_start_loc_.end(), 0);  // capture: dummy decodes
    // Host copies keep their capture values: a replay refreshes only the device arrays.
    stale_query_start_loc_ = query_start_loc_;
    stale_seq_lens_ = seq_lens_;
    CommonAttentionMetadata captured;
    captured.query_start_loc = query_start_loc_;
    captured.query_start_loc_cpu = stale_query_start_loc_;
    captured.seq_lens = seq_lens_;
    captured.seq_lens_cpu = stale_seq_lens_;
    captured.num_reqs = num_reqs;
    captured.num_actual_tokens = num_tokens;
    captured.max_query_len = 1;
    captured.max_seq_len = 1;
    captured.block_table = {block_table_.data(), num_reqs, cols, cols};
    captured.slot_mapping = slot_mapping_;
    graph_ = builder.build_for_cudagraph_capture(captured).clone();
  }

  // Refreshes the arrays in place as the runner pads them, writes K/V and runs the graph.
  std::vector<float> replay(PagedBatch& batch) {
    const int total = batch.num_tokens();
    std::fill(query_start_loc_.begin(), query_start_loc_.end(), total);
    std::copy(batch.query_start_loc.begin(), batch.query_start_loc.end(), query_start_loc_.begin());
    std::fill(seq_lens_.begin(), seq_lens_.end(), 0);
    std::copy(batch.seq_lens.begin(), batch.seq_lens.end(), seq_lens_.begin());
    std::fill(block_table_.begin(), block_table_.end(), 0);
    for (int r = 0; r < batch.num_reqs(); ++r) {
      std::copy_n(batch.block_table.begin() + r * batch.block_table_cols(),
                  batch.block_table_cols(), block_table_.begin() + r * cols_);
    }
    std::fill(slot_mapping_.begin(), slot_mapping_.end(), PAD_SLOT_ID);
    std::copy(batch.slot_mapping.begin(), batch.slot_mapping.end(), slot_mapping_.begin());

    // Padded token rows carry garbage that must go nowhere.
    const AttentionShape& s = batch.shape();
    const int pad = num_tokens_ - total;
    std::vector<float> keys = batch.step_keys, values = batch.step_values, query = batch.query;
    keys.resize(keys.size() + static_cast<std::size_t>(pad) * s.num_kv_heads * s.head_size, 9.f);
    values.resize(values.size() + static_cast<std::size_t>(pad) * s.num_kv_heads * s.head_size_v,
                  9.f);
    query.resize(query.size() + static_cast<std::size_t>(pad) * s.num_heads * s.head_size, 9.f);
    batch.write(batch.cache(), keys, values, slot_mapping_);
    return batch.forward(*graph_, query, num_tokens_, /*fill=*/7.f);
  }

 private:
  int num_tokens_, cols_;
  std::vector<std::int32_t> query_start_loc_, seq_lens_, block_table_;
  std::vector<std::int32_t> stale_query_start_loc_, stale_seq_lens_;
  std::vector<std::int64_t> slot_mapping_;
  std::unique_ptr<AttentionMetadata> graph_;
};

}  // namespace attnrt::testing
