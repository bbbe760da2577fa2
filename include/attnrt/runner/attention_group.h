#pragma once
// AttentionGroup: layers of one KV cache group that share a backend, a spec and a query-head count,
// and therefore one metadata builder per micro-batch (SEMANTICS §3.1). It also carries how the
// group's manager blocks map onto its kernel blocks, and whether its slot mappings arrive in
// kernel slots (SEMANTICS §0).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attnrt/attention/attention_backend.h"
#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/core/device.h"
#include "attnrt/core/export.h"
#include "attnrt/kv/kernel_block_geometry.h"
#include "attnrt/kv/kv_cache_spec.h"

namespace attnrt {

struct ATTNRT_API AttentionGroup {
  AttentionGroup(std::shared_ptr<const AttentionBackend> backend,
                 std::vector<std::string> layer_names, KVCacheSpec kv_cache_spec,
                 int kv_cache_group_id, int num_heads_q = 0);

  std::shared_ptr<const AttentionBackend> backend;
  std::vector<std::string> layer_names;  // discovery order
  KVCacheSpec kv_cache_spec;             // per-layer spec, MANAGER block size
  int kv_cache_group_id = 0;
  int num_heads_q = 0;  // query heads of every layer of the group (part of the grouping key)
  // One per micro-batch; builder i serves micro-batch i. Empty until create_metadata_builders.
  std::vector<std::unique_ptr<AttentionMetadataBuilder>> metadata_builders;
  // Manager → kernel blocks for this group's tensor; unsplit until init_attn_backend sets it.
  KernelBlockGeometry kernel_geometry;
  // Whether the slot mappings this group's builders receive are already kernel slots.
  bool slot_mappings_translated = false;

  // Replaces the builders with `num_builders` independent ones; they see the spec at
  // `kernel_block_size` tokens per block when given.
  void create_metadata_builders(const EngineConfig& config, Device device,
                                std::optional<int> kernel_block_size, int num_builders = 1);
  // Throws Error naming the group when builder `ubatch` does not exist.
  AttentionMetadataBuilder& get_metadata_builder(int ubatch = 0);
  const AttentionMetadataBuilder& get_metadata_builder(int ubatch = 0) const;

  // Manager slots (block * manager_block_size + offset) → kernel slots of this group's geometry,
  // in place; the identity for dense blocks. Padding slots stay padding.
  void map_to_kernel_slot_mapping(std::span<std::int64_t> slot_mapping) const;
};

}  // namespace attnrt
