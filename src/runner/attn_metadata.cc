// build_attn_metadata (SEMANTICS §7.9): per-group CommonAttentionMetadata and each attention
// group's backend metadata, shared by all layers of the group.

#include "attnrt/runner/attn_metadata.h"

#include <algorithm>

#include "core/fail.h"

namespace attnrt {
namespace {

void check_inputs(const AttentionMetadataInputs& in, std::size_t num_groups) {
  const auto reqs = static_cast<std::size_t>(in.num_reqs);
  const auto tokens = static_cast<std::size_t>(in.num_tokens);
  if (in.num_reqs < 0 || in.query_start_loc.size() < reqs + 1 ||
      in.query_start_loc_cpu.size() < reqs + 1 || in.seq_lens.size() < reqs ||
      in.seq_lens_cpu.size() < reqs) {
    fail(
        "build_attn_metadata: {} requests need query_start_loc of {} entries and seq_lens of {}; "
        "got {} and {} (host copies {} and {})",
        in.num_reqs, reqs + 1, reqs, in.query_start_loc.size(), in.seq_lens.size(),
        in.query_start_loc_cpu.size(), in.seq_lens_cpu.size());
  }
  if (in.block_tables.size() < num_groups || in.slot_mappings.size() < num_groups) {
    fail("build_attn_metadata: {} KV cache groups but {} block tables and {} slot mappings",
         num_groups, in.block_tables.size(), in.slot_mappings.size());
  }
  if (in.num_tokens < 0 || (!in.positions.empty() && in.positions.size() < tokens)) {
    fail("build_attn_metadata: {} tokens but {} positions", in.num_tokens, in.positions.size());
  }
}

CommonAttentionMetadata common_for_group(const AttentionMetadataInputs& in, std::size_t g) {
  const auto reqs = static_cast<std::size_t>(in.num_reqs);
  const auto tokens = static_cast<std::size_t>(in.num_tokens);
  if (in.slot_mappings[g].size() < tokens || in.block_tables[g].num_rows < in.num_reqs) {
    fail(
        "build_attn_metadata: KV cache group {} has {} slots for {} tokens and {} block-table "
        "rows for {} requests",
        g, in.slot_mappings[g].size(), tokens, in.block_tables[g].num_rows, in.num_reqs);
  }
  CommonAttentionMetadata common;
  common.device = in.device;
  common.query_start_loc = in.query_start_loc.first(reqs + 1);
  common.query_start_loc_cpu = in.query_start_loc_cpu.first(reqs + 1);
  common.seq_lens = in.seq_lens.first(reqs);
  common.seq_lens_cpu = in.seq_lens_cpu.first(reqs);
  common.num_reqs = in.num_reqs;
  common.num_actual_tokens = in.num_tokens;
  common.max_query_len = in.max_query_len;
  common.max_seq_len = in.max_seq_len;
  common.block_table = in.block_tables[g];
  common.block_table.num_rows = in.num_reqs;
  common.slot_mapping = in.slot_mappings[g].first(tokens);
  common.causal = g < in.causal_by_group.size() ? in.causal_by_group[g] : in.causal;
  if (!in.positions.empty()) common.positions = in.positions.first(tokens);
  if (!in.encoder_seq_lens.empty()) {
    common.encoder_seq_lens = in.encoder_seq_lens.first(std::min(reqs, in.encoder_seq_lens.size()));
  }
  if (in.fast_prefill != nullptr) {
    common.logits_indices_padded = in.fast_prefill->logits_indices_padded;
    common.num_logits_indices = in.fast_prefill->num_logits_indices;
    common.max_logits_per_req = in.fast_prefill->max_logits_per_req;
  }
  return common;
}

}  // namespace

AttentionMetadataInputs make_attention_metadata_inputs(const InputBatch& batch,
                                                       const BlockTables& block_tables,
                                                       Device device) {
  AttentionMetadataInputs in;
  in.device = device;
  in.num_reqs = batch.num_reqs_padded();
  in.num_tokens = batch.num_tokens_padded();
  in.query_start_loc = batch.query_start_loc();
  in.query_start_loc_cpu = batch.query_start_loc();
  in.seq_lens = batch.seq_lens();
  in.seq_lens_cpu = batch.seq_lens();
  in.max_query_len = batch.max_query_len();
  in.max_seq_len = batch.max_seq_len();
  in.block_tables = block_tables.block_tables();
  in.slot_mappings = block_tables.slot_mappings();
  in.positions = batch.positions();
  return in;
}

AttentionMetadataByLayer::AttentionMetadataByLayer(
    std::span<const std::vector<AttentionGroup>> attn_groups) {
  common_.resize(attn_groups.size());
  for (const std::vector<AttentionGroup>& groups : attn_groups) {
    first_attention_group_.push_back(static_cast<int>(by_attention_group_.size()));
    for (const AttentionGroup& group : groups) {
      for (const std::string& layer : group.layer_names) {
        attention_group_of_layer_.emplace(layer, static_cast<int>(by_attention_group_.size()));
      }
      by_attention_group_.push_back(nullptr);
    }
  }
  first_attention_group_.push_back(static_cast<int>(by_attention_group_.size()));
}

const AttentionMetadata* AttentionMetadataByLayer::find(std::string_view layer) const {
  const auto it = attention_group_of_layer_.find(layer);
  return it == attention_group_of_layer_.end() ? nullptr : by_attention_group_[it->second];
}

const AttentionMetadata& AttentionMetadataByLayer::at(std::string_view layer) const {
  const AttentionMetadata* metadata = find(layer);
  if (metadata == nullptr) {
    fail("no attention metadata for layer {}: {}", layer,
         attention_group_of_layer_.contains(layer)
             ? "build_attn_metadata has not run yet"
             : "it belongs to no attention group of this runner");
  }
  return *metadata;
}

void build_attn_metadata(std::span<std::vector<AttentionGroup>> attn_groups,
                         const AttentionMetadataInputs& inputs, AttentionMetadataByLayer& out) {
  if (attn_groups.size() != out.common_.size()) {
    fail("build_attn_metadata: the output was made for {} KV cache groups, not {}",
         out.common_.size(), attn_groups.size());
  }
  check_inputs(inputs, attn_groups.size());
  for (std::size_t g = 0; g < attn_groups.size(); ++g) {
    std::vector<AttentionGroup>& groups = attn_groups[g];
    const int first = out.first_attention_group_[g];
    if (static_cast<int>(groups.size()) != out.first_attention_group_[g + 1] - first) {
      fail(
          "build_attn_metadata: KV cache group {} has {} attention groups; the output was made "
          "for {}",
          g, groups.size(), out.first_attention_group_[g + 1] - first);
    }
    if (groups.empty()) continue;  // no layer reads this group's metadata
    out.common_[g] = common_for_group(inputs, g);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      AttentionMetadataBuilder& builder = groups[i].get_metadata_builder(inputs.ubatch_idx);
      out.by_attention_group_[first + i] =
          inputs.for_cudagraph_capture ? &builder.build_for_cudagraph_capture(out.common_[g])
                                       : &builder.build(0, out.common_[g]);
    }
  }
}

}  // namespace attnrt
