#pragma once
// BlockTables: the runner's block tables, one per KV cache group, in kernel-block units with one
// row per persistent request slot (SEMANTICS §3.3; vLLM MRV2's BlockTables), and what each step
// derives from them: the batch's block tables and slot mappings (§2.8). Every buffer is sized at
// construction; a step writes into them and hands out spans, so steady-state steps allocate
// nothing.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "attnrt/attention/common_attention_metadata.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/kernel_block_geometry.h"
#include "attnrt/kv/kv_cache_config.h"
#include "attnrt/runner/attention_group.h"

namespace attnrt {

struct BlockTableGroup {
  KernelBlockGeometry geometry;    // manager → kernel blocks of this KV cache group
  int max_num_blocks_per_req = 0;  // manager blocks one request may hold
};

class ATTNRT_API BlockTables {
 public:
  // `num_blocks`: manager blocks of the KV cache; every appended id must be below it. Throws Error
  // on non-positive sizes or a kernel id that would not fit the int32 tables.
  BlockTables(std::vector<BlockTableGroup> groups, int max_num_reqs, int max_num_tokens,
              std::int64_t num_blocks);
  // A copy owns its own tables, and its views point into them; moves keep the buffers.
  BlockTables(const BlockTables& other);
  BlockTables& operator=(const BlockTables& other);
  BlockTables(BlockTables&& other) noexcept;
  BlockTables& operator=(BlockTables&& other) noexcept;
  ~BlockTables();
  // One group per KV cache group, with the geometry init_attn_backend gave its attention groups,
  // rows for the scheduler's max_num_seqs requests of max_model_len tokens (cross attention:
  // max_encoder_len) and slot mappings for max_num_batched_tokens tokens.
  static BlockTables from_config(const EngineConfig& config, const KVCacheConfig& kv_cache_config,
                                 std::span<const std::vector<AttentionGroup>> attn_groups);

  int num_groups() const;
  int max_num_reqs() const;
  int max_num_tokens() const;
  const KernelBlockGeometry& geometry(int group) const;
  int row_capacity(int group) const;  // kernel blocks

  // Appends the request's new manager block ids of every group (one span per group), expanded to
  // kernel ids, at column 0 when `overwrite` else after its current blocks. Checks every group
  // first (request slot, block ids, row capacity) and throws Error without writing anything.
  void append_block_ids(int req_index, std::span<const std::span<const std::int32_t>> block_ids,
                        bool overwrite);
  // Frees the request slot for reuse: its rows become empty.
  void remove_request(int req_index);
  int num_blocks(int group, int req_index) const;  // kernel blocks in the row
  std::span<const std::int32_t> row(int group, int req_index) const;

  // Batch row i ← the blocks of request slot idx_mapping[i]; rows num_reqs..num_reqs_padded-1
  // are zeroed (block 0 is a real block, so padding is never "0 = empty"). A row that held the
  // same request last step only receives the blocks appended since.
  void gather_block_tables(std::span<const std::int32_t> idx_mapping, int num_reqs_padded);
  BlockTableView block_table(int group) const;
  std::span<const BlockTableView> block_tables() const;

  // Manager slots of every token of the batch: token t of batch request i (tokens
  // query_start_loc[i]..query_start_loc[i+1]) at positions[t] lands in the request's block
  // positions[t] / block_size. Tokens marked in `is_padding` (when given) and every entry from
  // the real token total to the end of the buffer get PAD_SLOT_ID; stale slots never survive.
  void compute_slot_mappings(std::span<const std::int32_t> idx_mapping,
                             std::span<const std::int32_t> query_start_loc,
                             std::span<const std::int64_t> positions, int num_tokens_padded,
                             std::span<const std::uint8_t> is_padding = {});
  // Kernel slots for the KV cache groups whose attention groups receive translated slot mappings
  // (AttentionGroup::slot_mappings_translated, from init_attn_backend's maps_slot_mapping and
  // slot_mapped_layers), through AttentionGroup::map_to_kernel_slot_mapping. Throws Error when a
  // group with spaced kernel ids would receive manager slots, or when the attention groups'
  // geometry is not the one these tables were built with.
  void translate_slot_mappings(std::span<const std::vector<AttentionGroup>> attn_groups);
  // [num_tokens_padded] of the last compute_slot_mappings; the whole buffer for inspection.
  std::span<const std::int64_t> slot_mapping(int group) const;
  std::span<const std::span<const std::int64_t>> slot_mappings() const;
  std::span<const std::int64_t> slot_mapping_buffer(int group) const;

 private:
  // The tables, batch buffers and views (src/runner/block_tables_impl.h).
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnrt
