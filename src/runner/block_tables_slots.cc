// BlockTables' slot mappings (SEMANTICS §2.8): manager slots of every token of the batch, and
// their translation to kernel slots for the groups that need it.

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>

#include "block_tables_impl.h"
#include "core/fail.h"

namespace attnrt {
namespace {

// Position → (block column, offset) for one block size; a shift and a mask for the usual
// power-of-two sizes, since a division per token dominates a decode step otherwise.
class BlockDivider {
 public:
  explicit BlockDivider(std::int64_t block_size)
      : size_(block_size),
        shift_((block_size & (block_size - 1)) == 0
                   ? std::countr_zero(static_cast<std::uint64_t>(block_size))
                   : -1) {}
  std::int64_t block(std::int64_t position) const {
    return shift_ >= 0 ? position >> shift_ : position / size_;
  }
  std::int64_t offset(std::int64_t position) const {
    return shift_ >= 0 ? position & (size_ - 1) : position % size_;
  }

 private:
  std::int64_t size_;
  int shift_;
};

}  // namespace

void BlockTables::Impl::compute_slot_mappings(std::span<const std::int32_t> idx_mapping,
                                              std::span<const std::int32_t> query_start_loc,
                                              std::span<const std::int64_t> positions,
                                              int num_tokens_padded,
                                              std::span<const std::uint8_t> is_padding) {
  const int num_reqs = static_cast<int>(idx_mapping.size());
  if (query_start_loc.size() < static_cast<std::size_t>(num_reqs) + 1 || query_start_loc[0] != 0) {
    fail("compute_slot_mappings: {} requests need query_start_loc of {} entries starting at 0",
         num_reqs, num_reqs + 1);
  }
  // Ascending offsets keep every request's tokens inside [0, num_tokens): checked before writing.
  for (int i = 0; i < num_reqs; ++i) {
    if (query_start_loc[i + 1] < query_start_loc[i]) {
      fail(
          "compute_slot_mappings: query_start_loc[{}] = {} is below query_start_loc[{}] = {}; "
          "the offsets must ascend",
          i + 1, query_start_loc[i + 1], i, query_start_loc[i]);
    }
  }
  const int num_tokens = query_start_loc[num_reqs];
  if (num_tokens < 0 || num_tokens > num_tokens_padded || num_tokens_padded > max_num_tokens_ ||
      positions.size() < static_cast<std::size_t>(num_tokens) ||
      (!is_padding.empty() && is_padding.size() < static_cast<std::size_t>(num_tokens))) {
    fail(
        "compute_slot_mappings: {} tokens padded to {} with {} positions and {} padding flags; "
        "the slot mappings hold {} tokens",
        num_tokens, num_tokens_padded, positions.size(), is_padding.size(), max_num_tokens_);
  }
  for (const std::int32_t req_index : idx_mapping) check_request_slot(req_index, "map");
  // Entries up to the high-water mark may hold real slots; raise it before writing any.
  const int stale_end = std::max({slot_high_water_, num_tokens, num_tokens_padded});
  slot_high_water_ = std::max(slot_high_water_, num_tokens);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    compute_group_slots(group, idx_mapping, query_start_loc, positions, is_padding);
    std::fill(group.slot_mapping.data() + num_tokens, group.slot_mapping.data() + stale_end,
              PAD_SLOT_ID);
    slot_views_[g] = {group.slot_mapping.data(), static_cast<std::size_t>(num_tokens_padded)};
  }
  slot_high_water_ = num_tokens;
  num_real_tokens_ = num_tokens;
}

void BlockTables::Impl::compute_group_slots(Group& group, std::span<const std::int32_t> idx_mapping,
                                            std::span<const std::int32_t> query_start_loc,
                                            std::span<const std::int64_t> positions,
                                            std::span<const std::uint8_t> is_padding) const {
  const KernelBlockGeometry& geo = group.geometry;
  const std::int64_t kernel_block_size = geo.kernel_block_size;
  const std::int64_t manager_block_size = geo.manager_block_size;
  const BlockDivider kernel_blocks(kernel_block_size);
  const BlockDivider manager_blocks(manager_block_size);
  const bool dense = geo.dense();
  std::int64_t* slots = group.slot_mapping.data();
  for (std::size_t i = 0; i < idx_mapping.size(); ++i) {
    const int req_index = idx_mapping[i];
    const std::int32_t* row =
        group.table.data() + static_cast<std::size_t>(req_index) * group.row_capacity;
    const std::int64_t num_blocks = group.num_blocks[req_index];
    for (int t = query_start_loc[i]; t < query_start_loc[i + 1]; ++t) {
      if (!is_padding.empty() && is_padding[t] != 0) {
        slots[t] = PAD_SLOT_ID;
        continue;
      }
      const std::int64_t position = positions[t];
      const std::int64_t column = kernel_blocks.block(position);
      if (position < 0 || column >= num_blocks) {
        fail(
            "compute_slot_mappings: token {} of request slot {} is at position {}, past its {} "
            "kernel blocks of {} tokens; append the request's block ids first",
            t, req_index, position, num_blocks, kernel_block_size);
      }
      const std::int64_t kernel_id = row[column];
      // A dense kernel slot is the manager slot; a spaced id is mapped back to its manager block.
      slots[t] = dense ? kernel_id * kernel_block_size + kernel_blocks.offset(position)
                       : kernel_id / geo.slots_per_block * manager_block_size +
                             manager_blocks.offset(position);
    }
  }
}

void BlockTables::Impl::translate_slot_mappings(
    std::span<const std::vector<AttentionGroup>> attn_groups) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    const AttentionGroup* translator = nullptr;
    if (g < attn_groups.size()) {
      for (const AttentionGroup& attn_group : attn_groups[g]) {
        if (attn_group.slot_mappings_translated) {
          translator = &attn_group;
          break;
        }
      }
    }
    const KernelBlockGeometry& geo = group.geometry;
    if (translator == nullptr) {
      if (!geo.needs_slot_translation()) continue;  // manager slots are kernel slots
      fail(
          "KV cache group {} splits {}-token blocks into kernel blocks spaced {} apart, but none "
          "of its attention groups receives translated slot mappings; pass maps_slot_mapping to "
          "init_attn_backend or name the group's layers in slot_mapped_layers",
          g, geo.manager_block_size, geo.slots_per_block);
    }
    if (translator->kernel_geometry != geo) {
      fail(
          "KV cache group {}: attention group (layers {}) has {}-token kernel blocks spaced {} "
          "apart, but the block tables were built with {} spaced {}; build BlockTables from the "
          "attention groups init_attn_backend returned",
          g, fmt::join(translator->layer_names, ", "),
          translator->kernel_geometry.kernel_block_size,
          translator->kernel_geometry.slots_per_block, geo.kernel_block_size, geo.slots_per_block);
    }
    translator->map_to_kernel_slot_mapping(
        {group.slot_mapping.data(), static_cast<std::size_t>(num_real_tokens_)});
  }
}

}  // namespace attnrt
