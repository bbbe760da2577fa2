#pragma once
// build_attn_metadata (SEMANTICS §7.9): one CommonAttentionMetadata per KV cache group, one
// backend metadata per attention group, the same metadata for every layer of the group. The
// result lives in a persistent AttentionMetadataByLayer, so steady-state steps allocate nothing.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/attention/common_attention_metadata.h"
#include "attnrt/core/export.h"
#include "attnrt/runner/attention_group.h"
#include "attnrt/runner/block_tables.h"
#include "attnrt/runner/fast_prefill_helper.h"
#include "attnrt/runner/input_batch.h"

namespace attnrt {

// One step's batch, shared by every KV cache group except for block tables and slot mappings.
struct AttentionMetadataInputs {
  Device device;
  int num_reqs = 0;                               // padded for FULL graphs
  int num_tokens = 0;                             // padded
  std::span<const std::int32_t> query_start_loc;  // at least num_reqs + 1 entries
  std::span<const std::int32_t> query_start_loc_cpu;
  std::span<const std::int32_t> seq_lens;  // at least num_reqs entries
  std::span<const std::int32_t> seq_lens_cpu;
  int max_query_len = 0;
  int max_seq_len = 0;
  std::span<const BlockTableView> block_tables;                  // one per KV cache group
  std::span<const std::span<const std::int64_t>> slot_mappings;  // one per KV cache group
  std::span<const std::int64_t> positions;                       // optional
  std::span<const std::int32_t> encoder_seq_lens;                // optional (cross attention)
  bool causal = true;
  std::span<const bool> causal_by_group;  // per KV cache group; groups past its end use `causal`
  const FastPrefillBatchMetadata* fast_prefill = nullptr;
  bool for_cudagraph_capture = false;  // FULL capture: build_for_cudagraph_capture
  int ubatch_idx = 0;                  // which builder of each group
};

// The inputs of a padded InputBatch and the BlockTables gathered and mapped for it (host arrays
// serve as both the device and the host copies).
ATTNRT_API AttentionMetadataInputs make_attention_metadata_inputs(const InputBatch& batch,
                                                                  const BlockTables& block_tables,
                                                                  Device device = Device::cpu());

// The metadata of one step, by layer. Built for one set of attention groups; refilled each step.
class ATTNRT_API AttentionMetadataByLayer {
 public:
  explicit AttentionMetadataByLayer(std::span<const std::vector<AttentionGroup>> attn_groups);

  // Throws Error naming the layer if it is in no attention group or nothing was built yet.
  const AttentionMetadata& at(std::string_view layer) const;
  const AttentionMetadata* find(std::string_view layer) const;  // nullptr if absent or unbuilt
  // The common metadata of KV cache group `group` in the last build.
  const CommonAttentionMetadata& common(int group) const { return common_[group]; }
  int num_kv_cache_groups() const { return static_cast<int>(common_.size()); }

 private:
  friend ATTNRT_API void build_attn_metadata(std::span<std::vector<AttentionGroup>> attn_groups,
                                             const AttentionMetadataInputs& inputs,
                                             AttentionMetadataByLayer& out);

  std::vector<CommonAttentionMetadata> common_;               // per KV cache group
  std::vector<int> first_attention_group_;                    // per KV cache group, + end
  std::vector<const AttentionMetadata*> by_attention_group_;  // flattened, in group order
  std::map<std::string, int, std::less<>> attention_group_of_layer_;
};

// Builds `out` for this step with builder `inputs.ubatch_idx` of every attention group. Throws
// Error when the inputs do not cover the groups (too few block tables, slot mappings or entries
// for num_reqs / num_tokens) or `out` was made for other attention groups.
ATTNRT_API void build_attn_metadata(std::span<std::vector<AttentionGroup>> attn_groups,
                                    const AttentionMetadataInputs& inputs,
                                    AttentionMetadataByLayer& out);

}  // namespace attnrt
