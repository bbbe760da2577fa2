#pragma once
// BlockTables' state, out of the public header: the persistent rows, the gathered batch tables and
// slot mappings of every KV cache group, and the views BlockTables hands out. The public class
// forwards to it (src/runner/block_tables.cc); the slot arithmetic is block_tables_slots.cc.

#include <cstdint>
#include <span>
#include <vector>

#include "attnrt/runner/block_tables.h"
#include "core/hidden.h"

namespace attnrt {

struct ATTNRT_HIDDEN BlockTables::Impl {
  // What a batch row holds: the first `num_blocks` ids of `req_index` at `epoch`, or zeros.
  struct GatheredRow {
    static constexpr int kZeros = -1;
    int req_index = kZeros;
    std::uint32_t epoch = 0;
    int num_blocks = 0;
  };

  struct Group {
    KernelBlockGeometry geometry;
    int row_capacity = 0;                    // kernel blocks per row
    std::vector<std::int32_t> table;         // [max_num_reqs, row_capacity]
    std::vector<std::int32_t> num_blocks;    // [max_num_reqs], kernel blocks per row
    std::vector<std::int32_t> batch_table;   // [max_num_reqs, row_capacity], gathered
    std::vector<GatheredRow> gathered;       // [max_num_reqs]
    std::vector<std::int64_t> slot_mapping;  // [max_num_tokens]

    std::int32_t* row_data(int req_index) {
      return table.data() + static_cast<std::size_t>(req_index) * row_capacity;
    }
  };

  Impl(std::vector<BlockTableGroup> groups, int max_num_reqs, int max_num_tokens,
       std::int64_t num_blocks);

  void append_block_ids(int req_index, std::span<const std::span<const std::int32_t>> block_ids,
                        bool overwrite);
  void remove_request(int req_index);
  int num_blocks(int group, int req_index) const;
  std::span<const std::int32_t> row(int group, int req_index) const;
  void gather_block_tables(std::span<const std::int32_t> idx_mapping, int num_reqs_padded);
  void compute_slot_mappings(std::span<const std::int32_t> idx_mapping,
                             std::span<const std::int32_t> query_start_loc,
                             std::span<const std::int64_t> positions, int num_tokens_padded,
                             std::span<const std::uint8_t> is_padding);
  void translate_slot_mappings(std::span<const std::vector<AttentionGroup>> attn_groups);
  // After a member-wise copy the views still point into the source's buffers.
  void point_views_at_own_buffers();

  // Inline: every slot of every step is checked, from both source files.
  void check_request_slot(int req_index, const char* action) const {
    if (req_index < 0 || req_index >= max_num_reqs_) fail_request_slot(req_index, action);
  }
  [[noreturn]] void fail_request_slot(int req_index, const char* action) const;
  void gather_group(Group& group, std::span<const std::int32_t> idx_mapping,
                    int num_reqs_padded) const;
  void check_append(int req_index, std::span<const std::span<const std::int32_t>> block_ids,
                    bool overwrite) const;
  void compute_group_slots(Group& group, std::span<const std::int32_t> idx_mapping,
                           std::span<const std::int32_t> query_start_loc,
                           std::span<const std::int64_t> positions,
                           std::span<const std::uint8_t> is_padding) const;

  std::vector<Group> groups_;
  int max_num_reqs_ = 0;
  int max_num_tokens_ = 0;
  std::int64_t num_manager_blocks_ = 0;
  std::vector<std::uint32_t> epoch_;         // per request slot; bumped when its rows are rewritten
  int num_real_tokens_ = 0;                  // of the last compute_slot_mappings
  int slot_high_water_ = 0;                  // entries past it are PAD_SLOT_ID in every group
  std::vector<BlockTableView> batch_views_;  // one per group
  std::vector<std::span<const std::int64_t>> slot_views_;  // one per group
};

}  // namespace attnrt
