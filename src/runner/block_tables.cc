// BlockTables (SEMANTICS §3.3): persistent per-request rows of kernel-block ids and the batch
// gather of one step; the slot mappings (§2.8) are block_tables_slots.cc.

#include "attnrt/runner/block_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "attnrt/core/checked_math.h"
#include "block_tables_impl.h"
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

}  // namespace

BlockTables::Impl::Impl(std::vector<BlockTableGroup> groups, int max_num_reqs, int max_num_tokens,
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

void BlockTables::Impl::fail_request_slot(int req_index, const char* action) const {
  fail("BlockTables: cannot {} request slot {}; slots are 0..{} (max_num_seqs {})", action,
       req_index, max_num_reqs_ - 1, max_num_reqs_);
}

void BlockTables::Impl::check_append(int req_index,
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

void BlockTables::Impl::append_block_ids(int req_index,
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

void BlockTables::Impl::remove_request(int req_index) {
  check_request_slot(req_index, "remove");
  for (Group& group : groups_) group.num_blocks[req_index] = 0;
  ++epoch_[req_index];
}

int BlockTables::Impl::num_blocks(int group, int req_index) const {
  check_request_slot(req_index, "read");
  return groups_[group].num_blocks[req_index];
}

std::span<const std::int32_t> BlockTables::Impl::row(int group, int req_index) const {
  check_request_slot(req_index, "read");
  const Group& g = groups_[group];
  return {g.table.data() + static_cast<std::size_t>(req_index) * g.row_capacity,
          static_cast<std::size_t>(g.num_blocks[req_index])};
}

void BlockTables::Impl::gather_block_tables(std::span<const std::int32_t> idx_mapping,
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

void BlockTables::Impl::gather_group(Group& group, std::span<const std::int32_t> idx_mapping,
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

void BlockTables::Impl::point_views_at_own_buffers() {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    batch_views_[g].data = groups_[g].batch_table.data();
    slot_views_[g] = {groups_[g].slot_mapping.data(), slot_views_[g].size()};
  }
}

// The public class: one pointer to Impl, calls forwarded. The accessors are out of line but
// allocate nothing; a step calls each a few times per KV cache group.
BlockTables::BlockTables(std::vector<BlockTableGroup> groups, int max_num_reqs, int max_num_tokens,
                         std::int64_t num_blocks)
    : impl_(std::make_unique<Impl>(std::move(groups), max_num_reqs, max_num_tokens, num_blocks)) {}

BlockTables::BlockTables(const BlockTables& other) : impl_(std::make_unique<Impl>(*other.impl_)) {
  impl_->point_views_at_own_buffers();
}

BlockTables& BlockTables::operator=(const BlockTables& other) {
  if (this != &other) *this = BlockTables(other);
  return *this;
}

BlockTables::BlockTables(BlockTables&& other) noexcept = default;
BlockTables& BlockTables::operator=(BlockTables&& other) noexcept = default;
BlockTables::~BlockTables() = default;

int BlockTables::num_groups() const {
  return static_cast<int>(impl_->groups_.size());
}
int BlockTables::max_num_reqs() const {
  return impl_->max_num_reqs_;
}
int BlockTables::max_num_tokens() const {
  return impl_->max_num_tokens_;
}
const KernelBlockGeometry& BlockTables::geometry(int group) const {
  return impl_->groups_[group].geometry;
}
int BlockTables::row_capacity(int group) const {
  return impl_->groups_[group].row_capacity;
}

void BlockTables::append_block_ids(int req_index,
                                   std::span<const std::span<const std::int32_t>> block_ids,
                                   bool overwrite) {
  impl_->append_block_ids(req_index, block_ids, overwrite);
}
void BlockTables::remove_request(int req_index) {
  impl_->remove_request(req_index);
}
int BlockTables::num_blocks(int group, int req_index) const {
  return impl_->num_blocks(group, req_index);
}
std::span<const std::int32_t> BlockTables::row(int group, int req_index) const {
  return impl_->row(group, req_index);
}

void BlockTables::gather_block_tables(std::span<const std::int32_t> idx_mapping,
                                      int num_reqs_padded) {
  impl_->gather_block_tables(idx_mapping, num_reqs_padded);
}
BlockTableView BlockTables::block_table(int group) const {
  return impl_->batch_views_[group];
}
std::span<const BlockTableView> BlockTables::block_tables() const {
  return impl_->batch_views_;
}

void BlockTables::compute_slot_mappings(std::span<const std::int32_t> idx_mapping,
                                        std::span<const std::int32_t> query_start_loc,
                                        std::span<const std::int64_t> positions,
                                        int num_tokens_padded,
                                        std::span<const std::uint8_t> is_padding) {
  impl_->compute_slot_mappings(idx_mapping, query_start_loc, positions, num_tokens_padded,
                               is_padding);
}
void BlockTables::translate_slot_mappings(
    std::span<const std::vector<AttentionGroup>> attn_groups) {
  impl_->translate_slot_mappings(attn_groups);
}
std::span<const std::int64_t> BlockTables::slot_mapping(int group) const {
  return impl_->slot_views_[group];
}
std::span<const std::span<const std::int64_t>> BlockTables::slot_mappings() const {
  return impl_->slot_views_;
}
std::span<const std::int64_t> BlockTables::slot_mapping_buffer(int group) const {
  return impl_->groups_[group].slot_mapping;
}

}  // namespace attnrt
