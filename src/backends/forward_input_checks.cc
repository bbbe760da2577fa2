#include "forward_input_checks.h"

#include "attnrt/core/error.h"

namespace attnrt::backend_checks {
namespace {

void check_rows(std::string_view backend, const ActivationView& view, std::string_view what,
                int num_heads, int head_size) {
  if (view.num_heads != num_heads || view.head_size != head_size) {
    fail("{} forward: {} rows have {} heads x {} entries, but the layer needs {} x {}", backend,
         what, view.num_heads, view.head_size, num_heads, head_size);
  }
}

}  // namespace

void check_forward_shape(std::string_view backend, const AttentionForwardArgs& args, int key_size,
                         int value_size) {
  const AttentionShape& shape = args.shape;
  if (shape.num_kv_heads <= 0 || shape.num_heads % shape.num_kv_heads != 0) {
    fail("{} forward: {} query heads do not divide into groups of {} KV heads", backend,
         shape.num_heads, shape.num_kv_heads);
  }
  const bool windowed =
      shape.type == AttentionType::sliding_window || shape.type == AttentionType::chunked_local;
  if (!args.metadata.common.causal && windowed) {
    fail("{} forward: {} attention is causal by definition, but the metadata says causal = false",
         backend, attention_type_name(shape.type));
  }
  if ((shape.type == AttentionType::sliding_window && shape.sliding_window <= 0) ||
      (shape.type == AttentionType::chunked_local && shape.attention_chunk_size <= 0)) {
    fail("{} forward: {} attention needs a positive window/chunk size, got {}/{}", backend,
         attention_type_name(shape.type), shape.sliding_window, shape.attention_chunk_size);
  }
  check_rows(backend, args.query, "query", shape.num_heads, key_size);
  check_rows(backend, args.output, "output", shape.num_heads, value_size);
}

void check_step_arrays(std::string_view backend, const CommonAttentionMetadata& common,
                       bool cross) {
  const auto num_reqs = static_cast<std::size_t>(common.num_reqs);
  if (common.num_reqs < 0 || common.query_start_loc.size() < num_reqs + 1 ||
      common.seq_lens.size() < num_reqs || common.block_table.num_rows < common.num_reqs) {
    fail(
        "{} forward: num_reqs {} needs query_start_loc of {} entries, seq_lens and block-table "
        "rows of {}; got {}, {} and {}",
        backend, common.num_reqs, num_reqs + 1, num_reqs, common.query_start_loc.size(),
        common.seq_lens.size(), common.block_table.num_rows);
  }
  if (cross && !common.encoder_seq_lens.empty() && common.encoder_seq_lens.size() < num_reqs) {
    fail("{} forward: encoder_seq_lens has {} entries for {} requests", backend,
         common.encoder_seq_lens.size(), num_reqs);
  }
  if (common.query_start_loc[0] != 0) {
    fail("{} forward: query_start_loc must start at 0, got {}", backend,
         common.query_start_loc[0]);
  }
}

}  // namespace attnrt::backend_checks
