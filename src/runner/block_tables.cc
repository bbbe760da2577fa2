// BlockTables (SEMANTICS §3.3, §2.8): persistent per-request rows of kernel-block ids, the
// batch gather and the slot mappings of one step.

#include "attnrt/runner/block_tables.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <limits>

#include "attnrt/core/checked_math.h"
#include "core/fail.h"

namespace attnrt {
namespace {

constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();

void check_positive(std::int64_t value, const char* what) {
  if (value <= 0) fail("BlockTables: {} must be positive, got {}", what, value);
}

// The slot arithmetic divides by both block sizes: a hand-made geometry must be consistent.
void check_geometry(std::size_t g, const KernelBlockGeometry& geo) {
  const bool consistent =
      geo.manager_block_size > 0 && geo.kernel_block_size > 0 && geo.ratio > 0 &&
      geo.slots_per_block >= geo.ratio &&
      static_cast<std::int64_t>(geo.kernel_block_size) * geo.ratio == geo.manager_block_size;
  if (!consistent) {
    fail(
        "BlockTables: group {} has manager blocks of {} tokens, kernel blocks of {} tokens, "
        "ratio {} and {} slots per block; the sizes must be positive, the ratio must be "
        "manager / kernel and the slots at least the ratio",
        g, geo.manager_block_size, geo.kernel_block_size, geo.ratio, geo.slots_per_block);
  }
}

// The largest kernel block id of `num_blocks` manager blocks; block tables hold int32 ids.
void check_kernel_ids_fit(std::size_t g, const KernelBlockGeometry& geo, std::int64_t num_blocks) {
  const std::uint64_t last_id = checked_add(
      checked_product("BlockTables: kernel block ids", num_blocks - 1, geo.slots_per_block),
      static_cast<std::uint64_t>(geo.ratio - 1), "BlockTables: kernel block ids");
  if (last_id > static_cast<std::uint64_t>(kMaxInt32)) {
    fail(
        "BlockTables: group {} addresses {} manager blocks as kernel ids up to {}, which do "
        "not fit int32 block tables; plan fewer blocks (cache.memory)",
        g, num_blocks, last_id);
  }
}

// Kernel blocks per row: a request's manager blocks times the kernel blocks of each.
int row_capacity_of(std::size_t g, const BlockTableGroup& spec) {
  const std::string what = fmt::format(
      "BlockTables: block table width of group {} (max_num_blocks_per_req {} x {} kernel blocks "
      "per block)",
      g, spec.max_num_blocks_per_req, spec.geometry.ratio);
  return checked_cast<int>(checked_product(what, spec.max_num_blocks_per_req, spec.geometry.ratio),
                           what);
}

// The geometry the attention groups of KV cache group `g` were given; unsplit without any.
KernelBlockGeometry geometry_of(const KVCacheGroupSpec& group,
                                std::span<const std::vector<AttentionGroup>> attn_groups,
                                std::size_t g) {
  if (g < attn_groups.size() && !attn_groups[g].empty()) return attn_groups[g][0].kernel_geometry;
  return KernelBlockGeometry::unsplit(group.kv_cache_spec.block_size);
}

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

BlockTables::BlockTables(std::vector<BlockTableGroup> groups, int max_num_reqs, int max_num_tokens,
                         std::int64_t num_blocks)
    : max_num_reqs_(max_num_reqs),
      max_num_tokens_(max_num_tokens),
      num_manager_blocks_(num_blocks) {
  check_positive(max_num_reqs, "max_num_reqs");
  check_positive(max_num_tokens, "max_num_tokens");
  if (num_blocks <= 0) fail("BlockTables: the KV cache has {} blocks; plan it first", num_blocks);
  // Every size is checked for every group before the first table is allocated.
  std::vector<int> row_capacities;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const BlockTableGroup& spec = groups[g];
    check_positive(spec.max_num_blocks_per_req, "max_num_blocks_per_req");
    check_geometry(g, spec.geometry);
    check_kernel_ids_fit(g, spec.geometry, num_blocks);
    row_capacities.push_back(row_capacity_of(g, spec));
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    Group group;
    group.geometry = groups[g].geometry;
    group.row_capacity = row_capacities[g];
    // Rows and width are positive ints: their product fits size_t.
    const std::size_t cells = static_cast<std::size_t>(max_num_reqs) * group.row_capacity;
    group.table.assign(cells, 0);
    group.num_blocks.assign(static_cast<std::size_t>(max_num_reqs), 0);
    group.batch_table.assign(cells, 0);
    group.gathered.assign(static_cast<std::size_t>(max_num_reqs), GatheredRow{});
    group.slot_mapping.assign(static_cast<std::size_t>(max_num_tokens), PAD_SLOT_ID);
    groups_.push_back(std::move(group));
  }
  epoch_.assign(static_cast<std::size_t>(max_num_reqs), 0);
  for (const Group& group : groups_) {
    batch_views_.push_back(
        BlockTableView{group.batch_table.data(), 0, group.row_capacity, group.row_capacity});
    slot_views_.emplace_back(group.slot_mapping.data(), 0);
  }
}

BlockTables BlockTables::from_config(const EngineConfig& config,
                                     const KVCacheConfig& kv_cache_config,
                                     std::span<const std::vector<AttentionGroup>> attn_groups) {
  std::vector<BlockTableGroup> groups;
  for (std::size_t g = 0; g < kv_cache_config.kv_cache_groups.size(); ++g) {
    const KVCacheGroupSpec& group = kv_cache_config.kv_cache_groups[g];
    const KVCacheSpec& spec = group.kv_cache_spec;
    const int max_len =
        spec.kind == KVSpecKind::cross ? config.model.max_encoder_len : config.model.max_model_len;
    groups.push_back({geometry_of(group, attn_groups, g),
                      static_cast<int>(spec.max_num_blocks_per_req(max_len))});
  }
  return BlockTables(std::move(groups), config.scheduler.max_num_seqs,
                     config.scheduler.max_num_batched_tokens, kv_cache_config.num_blocks);
}

void BlockTables::check_request_slot(int req_index, const char* action) const {
  if (req_index < 0 || req_index >= max_num_reqs_) {
    fail("BlockTables: cannot {} request slot {}; slots are 0..{} (max_num_seqs {})", action,
         req_index, max_num_reqs_ - 1, max_num_reqs_);
  }
}

void BlockTables::check_append(int req_index,
                               std::span<const std::span<const std::int32_t>> block_ids,
                               bool overwrite) const {
  check_request_slot(req_index, "append blocks to");
  if (block_ids.size() != groups_.size()) {
    fail("BlockTables: request {} got block ids for {} KV cache groups, but there are {}",
         req_index, block_ids.size(), groups_.size());
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const Group& group = groups_[g];
    for (const std::int32_t id : block_ids[g]) {
      if (id < 0 || id >= num_manager_blocks_) {
        fail("BlockTables: request {}, group {} got block id {}, outside the KV cache's {} blocks",
             req_index, g, id, num_manager_blocks_);
      }
    }
    const std::int64_t start = overwrite ? 0 : group.num_blocks[req_index];
    const std::int64_t need =
        start + static_cast<std::int64_t>(block_ids[g].size()) * group.geometry.ratio;
    if (need > group.row_capacity) {
      fail(
          "request {}, group {} exceeds row capacity ({} > {}); a row holds the kernel blocks of "
          "max_model_len tokens, so schedule no more tokens than that or raise max_model_len",
          req_index, g, need, group.row_capacity);
    }
  }
}

void BlockTables::append_block_ids(int req_index,
                                   std::span<const std::span<const std::int32_t>> block_ids,
                                   bool overwrite) {
  check_append(req_index, block_ids, overwrite);  // nothing is written unless every group fits
  if (overwrite) ++epoch_[req_index];
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    std::int32_t& count = group.num_blocks[req_index];
    if (overwrite) count = 0;
    const std::size_t added = block_ids[g].size() * static_cast<std::size_t>(group.geometry.ratio);
    group.geometry.expand_block_ids(block_ids[g], {group.row_data(req_index) + count, added});
    count += static_cast<std::int32_t>(added);
  }
}

void BlockTables::remove_request(int req_index) {
  check_request_slot(req_index, "remove");
  for (Group& group : groups_) group.num_blocks[req_index] = 0;
  ++epoch_[req_index];
}

int BlockTables::num_blocks(int group, int req_index) const {
  check_request_slot(req_index, "read");
  return groups_[group].num_blocks[req_index];
}

std::span<const std::int32_t> BlockTables::row(int group, int req_index) const {
  check_request_slot(req_index, "read");
  const Group& g = groups_[group];
  return {g.table.data() + static_cast<std::size_t>(req_index) * g.row_capacity,
          static_cast<std::size_t>(g.num_blocks[req_index])};
}

void BlockTables::gather_block_tables(std::span<const std::int32_t> idx_mapping,
                                      int num_reqs_padded) {
  const int num_reqs = static_cast<int>(idx_mapping.size());
  if (num_reqs_padded < num_reqs || num_reqs_padded > max_num_reqs_) {
    fail("BlockTables: cannot pad {} requests to {}; the tables hold {} rows", num_reqs,
         num_reqs_padded, max_num_reqs_);
  }
  for (const std::int32_t req_index : idx_mapping) check_request_slot(req_index, "gather");
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    gather_group(groups_[g], idx_mapping, num_reqs_padded);
    batch_views_[g].num_rows = num_reqs_padded;
  }
}

void BlockTables::gather_group(Group& group, std::span<const std::int32_t> idx_mapping,
                               int num_reqs_padded) const {
  const std::size_t width = static_cast<std::size_t>(group.row_capacity);
  const int num_reqs = static_cast<int>(idx_mapping.size());
  for (int i = 0; i < num_reqs; ++i) {
    const int req_index = idx_mapping[i];
    const int count = group.num_blocks[req_index];
    GatheredRow& row = group.gathered[i];
    // Same request, rows not rewritten since: its first row.num_blocks ids are in place.
    const bool current =
        row.req_index == req_index && row.epoch == epoch_[req_index] && row.num_blocks <= count;
    const int first = current ? row.num_blocks : 0;
    std::copy(group.table.data() + req_index * width + first,
              group.table.data() + req_index * width + count,
              group.batch_table.data() + i * width + first);
    row = {req_index, epoch_[req_index], count};
  }
  for (int i = num_reqs; i < num_reqs_padded; ++i) {
    GatheredRow& row = group.gathered[i];
    if (row.req_index == GatheredRow::kZeros) continue;
    std::fill_n(group.batch_table.data() + i * width, width, 0);
    row = GatheredRow{};
  }
}

void BlockTables::compute_slot_mappings(std::span<const std::int32_t> idx_mapping,
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

void BlockTables::compute_group_slots(Group& group, std::span<const std::int32_t> idx_mapping,
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

void BlockTables::translate_slot_mappings(
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
