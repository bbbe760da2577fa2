#pragma once
// CommonAttentionMetadata: the per-step, per-KV-cache-group inputs every backend builds from
// (SEMANTICS §5.3, in-scope fields). Non-owning: the arrays live in the runner's persistent
// buffers ("device" arrays are host memory on the CPU), so building one allocates nothing and a
// captured graph that keeps the spans sees the values a replay writes in place.

#include <cstdint>
#include <optional>
#include <span>

#include "attnrt/core/device.h"

namespace attnrt {

inline constexpr std::int64_t PAD_SLOT_ID = -1;

// Rows of kernel-block ids, one per request of the batch.
struct BlockTableView {
  const std::int32_t* data = nullptr;
  int num_rows = 0;
  int num_cols = 0;
  std::int64_t row_stride = 0;  // elements between rows

  std::span<const std::int32_t> row(int r) const {
    return {data + static_cast<std::int64_t>(r) * row_stride, static_cast<std::size_t>(num_cols)};
  }
};

struct CommonAttentionMetadata {
  Device device;
  std::span<const std::int32_t> query_start_loc;      // [num_reqs + 1] on device
  std::span<const std::int32_t> query_start_loc_cpu;  // host copy
  std::span<const std::int32_t> seq_lens;      // [num_reqs] on device: tokens incl. this step
  std::span<const std::int32_t> seq_lens_cpu;  // host copy (exact or an upper bound)
  int num_reqs = 0;
  int num_actual_tokens = 0;  // may include padding
  int max_query_len = 0;
  int max_seq_len = 0;                         // may be an upper bound
  BlockTableView block_table;                  // kernel-block ids
  std::span<const std::int64_t> slot_mapping;  // [num_actual_tokens] kernel slots, PAD_SLOT_ID pads
  bool causal = true;
  std::span<const std::int64_t> positions;         // [num_actual_tokens], optional
  std::span<const std::int32_t> encoder_seq_lens;  // cross attention: encoder tokens per request

  // KV-sharing fast prefill (SEMANTICS §6): the logits rows the trailing layers run on.
  std::span<const std::int32_t> logits_indices_padded;
  std::optional<int> num_logits_indices;
  std::optional<int> max_logits_per_req;

  int batch_size() const { return num_reqs; }
  int query_len(int r) const { return query_start_loc_cpu[r + 1] - query_start_loc_cpu[r]; }
  // Tokens already in the cache before this step's query of request r (host values).
  int num_computed_tokens(int r) const { return seq_lens_cpu[r] - query_len(r); }
};

}  // namespace attnrt
